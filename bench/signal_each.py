"""What each quality signal costs a page, and what the ``agreement`` signal's second reading
costs the engine.

    python bench/signal_each.py --recording DIR [--suite real --suite real-scans] \
        [--new-root ROOT --suite new-dev ...] [--repeat 5] [--json FILE]

Method. ``DIR`` is a recording made by ``bench/review.py --record DIR``: every page's reading
is replayed through the pipeline (no page is read again), and where the pipeline asks for the
page's quality report this bench makes it step by step instead, timing each step ``--repeat``
times and keeping the median: the page's facts (``page_facts``: opening the page, the 36 dpi
ink, the text layer, glyph and math-font counts), the parse of the output (``parse_page``),
then each signal of ``model.quality.signals.named_signals`` on its own. A signal that does
not apply to a page (None) is timed too: deciding that is its cost there. Word lists load once
per process; the median of the repeats leaves the first load out (``plausibility`` and
``apostrophes`` pay it once per worker, docs/QUALITY.md).

The ``agreement`` signal's own work is in the engine, not here: the recognizer reads sampled
lines a second time while the page is read (``model.engines.reading_agreement``), and times it
(``agreement.seconds``). The recording keeps that and the engine's seconds for the page, so
its share of the engine's time is given from the reading the recording made (one run on the
machine as it was then; the share is the figure, the seconds move with the load).

Figures are means over the pages, in milliseconds a page, with the median and the most; a
signal's first call on each page is given as the median over the pages (the word lists'
load falls on one page's first call).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pymupdf  # noqa: E402

from model import pipeline  # noqa: E402
from model.quality import facts as facts_module  # noqa: E402
from model.quality import newpages, realpages  # noqa: E402
from model.quality.facts import page_facts  # noqa: E402
from model.quality.page_lines import math_runs  # noqa: E402
from model.quality.parsed import parse_page  # noqa: E402
from model.quality.recorded import ReplayEngine  # noqa: E402
from model.quality.run import parse_options  # noqa: E402
from model.quality.signals import EngineReport, named_signals, quality_report  # noqa: E402

SUITES = ("real", "real-scans", "new-dev", "new-dev-scans", "new-held", "new-held-scans")


def _median_ms(call: Any, repeat: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times), value


def _first_and_median_ms(call: Any, repeat: int) -> tuple[float, float, Any]:
    """A signal's first call (what a page pays: word look-ups are cached across pages, so
    the repeats of one page are warmer than a new page is) and the median of the rest."""
    started = time.perf_counter()
    value = call()
    first = 1000 * (time.perf_counter() - started)
    median, _ = _median_ms(call, max(repeat - 1, 1))
    return first, median, value


def facts_parts(page: Any, repeat: int) -> dict[str, float]:
    """The parts of the page's facts that only the new signals read, timed apart: the glyph
    count (``ink``), the math-font runs (``math_prose``), the invisible text
    (``invisible_text``)."""
    if page.mime_type != "application/pdf":
        return {}
    with pymupdf.open(stream=page.data, filetype="pdf") as doc:
        pdf_page = doc[page.page_number - 1]
        layout = pdf_page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)
        pix = pdf_page.get_pixmap(dpi=facts_module.GLYPH_DPI, colorspace=pymupdf.csGRAY)
        grey = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width)
        return {
            "glyph count (ink)": _median_ms(lambda: facts_module.glyph_count(grey), repeat)[0],
            "math-font runs (math_prose)": _median_ms(lambda: math_runs(layout), repeat)[0],
            "invisible text (invisible_text)": _median_ms(
                lambda: facts_module._invisible_over_pictures(pdf_page), repeat
            )[0],
        }


def measure(page: Any, result: Any, repeat: int) -> dict[str, Any]:
    """One page's steps and signals, each timed on its own."""
    parse_ms, parsed = _median_ms(lambda: parse_page(result.markdown), repeat)
    grids = bool(parsed.tables_with_gaps)
    facts_ms, facts = _median_ms(lambda: page_facts(page, find_grids=grids), repeat)
    report = EngineReport.from_result(result)
    signals: dict[str, dict[str, Any]] = {}
    for name, judge in named_signals(parsed, facts, report):
        first, ms, signal = _first_and_median_ms(judge, repeat)
        signals[name] = {"first_ms": first, "ms": ms, "judged": signal is not None}
    agreement = result.extra.get("agreement") or {}
    return {
        "facts_ms": facts_ms,
        "parse_ms": parse_ms,
        "facts_parts": facts_parts(page, repeat),
        "signals": signals,
        "agreement_s": agreement.get("seconds"),
        "engine_s": result.engine_seconds,
        "method": result.method,
    }


def replay(args: argparse.Namespace) -> list[dict[str, Any]]:
    measured: list[dict[str, Any]] = []

    def timed(page: Any, result: Any, *rest: Any, **kwargs: Any) -> Any:
        measured.append(measure(page, result, args.repeat))
        return quality_report(page, result, *rest, **kwargs)

    setattr(pipeline, "quality_report", timed)  # noqa: B010 (the pipeline's own name)
    options = parse_options([])
    for suite in args.suite or ["real", "real-scans"]:
        engine = ReplayEngine(args.recording / suite / "readings")
        engine.load()
        if suite.startswith("new-"):
            if args.new_root is None:
                raise SystemExit(f"--suite {suite} needs --new-root")
            scans = args.recording / "new-scans" if suite.endswith("-scans") else None
            part = suite.split("-")[1]
            newpages.evaluate_part(engine, options, args.new_root, part, scans_dir=scans)
        else:
            scans = args.recording / "scans" if suite == "real-scans" else None
            realpages.evaluate_real(engine, options, scans_dir=scans, tested_only=True)
    return measured


def _row(label: str, values: list[float], judged: int | str = "", first: str = "") -> str:
    return (
        f"| {label} | {judged} | {first} | {statistics.mean(values):.2f} "
        f"| {statistics.median(values):.2f} | {max(values):.2f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recording", type=Path, required=True)
    parser.add_argument("--new-root", type=Path)
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pages = replay(args)
    print(f"{len(pages)} pages; ms a page (median of {args.repeat} calls each)\n")
    print(
        "| step | pages it judged | first call, median | mean | median | most |\n"
        "|---|---|---|---|---|---|"
    )
    print(_row("page facts (all of them)", [p["facts_ms"] for p in pages]))
    for part in dict.fromkeys(k for p in pages for k in p["facts_parts"]):
        of = [p["facts_parts"][part] for p in pages if part in p["facts_parts"]]
        print(_row(f"- of which {part}", of, len(of)))
    print(_row("parse", [p["parse_ms"] for p in pages]))
    names = list(pages[0]["signals"]) if pages else []
    totals = [sum(s["ms"] for s in p["signals"].values()) for p in pages]
    for name in sorted(names, key=lambda n: -sum(p["signals"][n]["ms"] for p in pages)):
        judged = sum(p["signals"][name]["judged"] for p in pages)
        first = statistics.median(p["signals"][name]["first_ms"] for p in pages)
        print(_row(name, [p["signals"][name]["ms"] for p in pages], judged, f"{first:.2f}"))
    firsts = statistics.median(sum(s["first_ms"] for s in p["signals"].values()) for p in pages)
    print(_row("**every signal**", totals, "", f"{firsts:.2f}"))
    measured = [p for p in pages if p["agreement_s"] is not None and p["engine_s"]]
    if measured:
        seconds = [1000 * p["agreement_s"] for p in measured]
        share = sum(p["agreement_s"] for p in measured) / sum(p["engine_s"] for p in measured)
        print(
            f"\nagreement's second reading, in the engine: {len(measured)} of {len(pages)} pages, "
            f"{statistics.mean(seconds):.0f} ms a page (median {statistics.median(seconds):.0f}, "
            f"most {max(seconds):.0f}), {share:.1%} of the engine's time on those pages"
        )
        for method in sorted({p["method"] for p in measured}):
            of = [p for p in measured if p["method"] == method]
            part = sum(p["agreement_s"] for p in of) / sum(p["engine_s"] for p in of)
            print(f"- {method}: {len(of)} pages, {part:.1%} of the engine's time")
    if args.json:
        args.json.write_text(json.dumps(pages, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
