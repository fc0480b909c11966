"""What the quality signals cost a page, this tree against a baseline commit, in one run.

    python bench/signal_costs.py --recording DIR [--baseline REF] [--rounds 3] [--repeat 5] \
        [--suite real --suite real-scans] [--after REF] [--json FILE]

Method. ``DIR`` is a recording made by ``bench/review.py --record DIR`` (each page's
reading kept, with the scans it read): no page is read again here. The baseline's ``model/``
package is exported from git (``git archive REF model``) into a temporary folder under
``build/`` (and ``--after``'s too, to time one change alone: its commit against its
parent). Then, for each round, one worker process per tree (baseline and this tree, the
order alternating from round to round) replays every page of the suites through that tree's
own pipeline (finding each page's reading by the page's bytes, since trees' engine options
differ and the recording's keys hold them), and times its quality report
(``model.pipeline.quality_report``: the page's facts, the parse and every signal)
``--repeat`` times a page, keeping the median. Each worker also counts, on one more call a
page under a profiler, how often the output is parsed (calls
of ``markdown_to_text``, of the table parsers and of ``math_spans``) and how many calls enter
those parsing modules from another module, and times the page's facts alone (``page_facts``:
opening the page, the 36 dpi ink rendering, the text layer), which the parse does not change.

Figures are per page, means over the pages of the medians, in milliseconds, and the ratio
after/before for each round (the two trees measured back to back, so the machine's load
falls on both). Word lists load once per worker process; the first page's first call pays
for it, and the median of its repeats leaves that out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SUITES = ("real", "real-scans")
# What parses a page's output, by (module, qualified name) in either tree: an HTML parse is a
# parser built (the old table signal built one of its own for the tags' balance).
PARSERS = {
    ("model.plaintext", "markdown_to_text"): "plain text",
    ("model.tables", "markdown_tables"): "pipe tables",
    ("model.tables", "_TableParser.__init__"): "HTML parse",
    ("model.quality.signals", "_TagBalance.__init__"): "HTML parse",
    ("model.quality.checks", "math_spans"): "math spans",
}


# The modules that parse Markdown; a call into one of them from another module is a re-entry.
PARSE_MODULES = {"model.plaintext", "model.tables", "model.quality.checks"}


def _profile_calls(call: Any) -> tuple[Counter[str], int]:
    """Run ``call`` under a profiler: how often each parser ran, and how many calls entered
    a parsing module from another module."""
    parsed: Counter[str] = Counter()
    crossings = 0

    def hook(frame: Any, event: str, _arg: Any) -> None:
        nonlocal crossings
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        name = frame.f_code.co_qualname
        if (module, name) in PARSERS:
            parsed[PARSERS[(module, name)]] += 1
        if module in PARSE_MODULES and module != caller:
            crossings += 1

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return parsed, crossings


def worker(tree: Path, recording: Path, suites: list[str], repeat: int) -> dict[str, Any]:
    """One tree's figures (runs in a process of its own, with ``tree`` first on the path)."""
    sys.path.insert(0, str(tree))
    from model import pipeline
    from model.quality import realpages, recorded
    from model.quality import signals as signals_module
    from model.quality.recorded import ReplayEngine
    from model.quality.run import parse_options

    # The recording's files are named by the page and the recording tree's engine options;
    # another tree's options may have other fields, so pages are found by their bytes instead.
    index = json.loads((recording / BYTES_INDEX).read_text())
    recorded.page_key = lambda page, _options: index[_bytes_key(page)]  # type: ignore[assignment]

    assert Path(pipeline.__file__).resolve().is_relative_to(tree.resolve()), pipeline.__file__
    original = pipeline.quality_report
    original_facts = signals_module.page_facts
    pages: list[dict[str, Any]] = []
    facts_seconds: list[float] = []

    def timed_facts(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original_facts(*args, **kwargs)
        finally:
            facts_seconds.append(time.perf_counter() - started)

    def measured(page: Any, result: Any, *args: Any, **kwargs: Any) -> Any:
        times = []
        facts_seconds.clear()
        for _ in range(repeat):
            started = time.perf_counter()
            report = original(page, result, *args, **kwargs)
            times.append(time.perf_counter() - started)
        facts = statistics.median(facts_seconds) if facts_seconds else 0.0
        parsed, crossings = _profile_calls(lambda: original(page, result, *args, **kwargs))
        pages.append(
            {
                "ms": 1000 * statistics.median(times),
                "facts_ms": 1000 * facts,
                "parses": dict(parsed),
                "crossings": crossings,
                "flagged": bool(report.get("needs_review")),
                "score": report.get("score"),
            }
        )
        return report

    pipeline.quality_report = measured  # type: ignore[assignment]
    signals_module.page_facts = timed_facts  # type: ignore[assignment]
    options = parse_options([])
    for suite in suites:
        engine = ReplayEngine(recording / suite / "readings")
        engine.load()
        scans = recording / "scans" if suite == "real-scans" else None
        realpages.evaluate_real(engine, options, scans_dir=scans, tested_only=True)
    return {"pages": pages}


def summary(figures: dict[str, Any]) -> dict[str, Any]:
    pages = figures["pages"]
    parses: Counter[str] = Counter()
    for page in pages:
        parses.update(page["parses"])
    count = max(len(pages), 1)
    return {
        "pages": len(pages),
        "ms_per_page": statistics.mean(p["ms"] for p in pages),
        "facts_ms_per_page": statistics.mean(p["facts_ms"] for p in pages),
        "signals_ms_per_page": statistics.mean(p["ms"] - p["facts_ms"] for p in pages),
        "parses_per_page": {name: n / count for name, n in sorted(parses.items())},
        "crossings_per_page": sum(p["crossings"] for p in pages) / count,
        "flagged": sum(p["flagged"] for p in pages),
        "scores": [p["score"] for p in pages],
    }


BYTES_INDEX = "pages-by-bytes.json"


def _bytes_key(page: Any) -> str:
    return hashlib.sha256(page.data).hexdigest() + f":{page.page_number}"


def write_bytes_index(recording: Path, suites: list[str]) -> None:
    """Each recorded page's file name by the page's bytes and number (this tree's keys), for
    the trees whose engine options differ from this one's."""
    from model.engines.base import PageInput
    from model.quality import realpages
    from model.quality.recorded import page_key
    from model.quality.run import parse_options

    options = parse_options([])
    index = {}
    pages = sorted({(t.pdf, t.page) for t in realpages.load_real_tests()})
    for suite in suites:
        if suite == "real-scans":
            named = [(recording / "scans" / realpages.scan_name(p, n), 1) for p, n in pages]
        else:
            named = [(realpages.CORPUS / p, n) for p, n in pages]
        for path, number in named:
            page = PageInput(path.read_bytes(), "application/pdf", number)
            index[_bytes_key(page)] = page_key(page, options)
    (recording / BYTES_INDEX).write_text(json.dumps(index))


def _export(ref: str, into: Path) -> Path:
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref, "model"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _run_worker(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--worker",
        str(tree),
        "--recording",
        str(args.recording),
        "--repeat",
        str(args.repeat),
    ]
    for suite in args.suite or SUITES:
        command += ["--suite", suite]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=tree)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recording", type=Path, required=True)
    parser.add_argument("--baseline", default="main")
    parser.add_argument(
        "--after", help="a commit to measure against the baseline instead of this tree"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        figures = worker(args.worker, args.recording, args.suite or list(SUITES), args.repeat)
        print(json.dumps(figures))
        return 0
    sys.path.insert(0, str(REPO))
    write_bytes_index(args.recording, args.suite or list(SUITES))
    results: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    # Inside the repository's ignored build/ folder, so that the baseline's own search for the
    # shared corpus beside the repository finds it.
    (REPO / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "build", prefix="signal-costs-") as tmp:
        trees = {"before": Path(tmp) / "before", "after": REPO}
        trees["before"].mkdir()
        _export(args.baseline, trees["before"])
        if args.after:
            trees["after"] = Path(tmp) / "after"
            trees["after"].mkdir()
            _export(args.after, trees["after"])
        for round_number in range(args.rounds):
            order = ("before", "after") if round_number % 2 == 0 else ("after", "before")
            for side in order:
                results[side].append(summary(_run_worker(trees[side], args)))
    ratios = [
        after["signals_ms_per_page"] / before["signals_ms_per_page"]
        for before, after in zip(results["before"], results["after"], strict=True)
    ]
    print(
        f"baseline {args.baseline}, against {args.after or 'this tree'}; "
        f"{results['after'][0]['pages']} pages a round\n"
    )
    print(
        "| round | before: report ms | before: signals ms | after: report ms "
        "| after: signals ms | signals after/before |"
    )
    print("|---|---|---|---|---|---|")
    for n, (before, after) in enumerate(zip(results["before"], results["after"], strict=True)):
        print(
            f"| {n + 1} | {before['ms_per_page']:.1f} | {before['signals_ms_per_page']:.1f} "
            f"| {after['ms_per_page']:.1f} | {after['signals_ms_per_page']:.1f} "
            f"| {ratios[n]:.2f} |"
        )
    for side in ("before", "after"):
        first = results[side][0]
        parses = ", ".join(f"{k} {v:.2f}" for k, v in first["parses_per_page"].items())
        print(
            f"\n{side}: parses a page: {parses}; calls into the parsing modules a page "
            f"{first['crossings_per_page']:.1f}; pages flagged {first['flagged']}"
        )
    before, after = results["before"][0]["scores"], results["after"][0]["scores"]
    changed = sum(1 for a, b in zip(before, after, strict=True) if a != b)
    print(f"\npages whose review score differs between the trees: {changed} of {len(before)}")
    if args.json:
        args.json.write_text(json.dumps({**results, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
