"""How far a reviewer can trust ``needs_review``: the flag as a classifier on real pages.

    python bench/review.py [--engine local] [--suite real --suite real-scans ...] \
        [--threshold 0.5] [--json FILE] [--pages] [--record DIR | --replay DIR]

Method. Each suite's pages are transcribed once by the engine, through the same pipeline as
the service (``model.pipeline``: normalisation, then the quality report with its review
score). A page *should be flagged* when any of its hand-written tests fails (the tests of
``model/quality/data/real-pages.jsonl``; for the generated corpus, its own). Recall is the
share of those pages the flag caught, the false-flag rate the share of clean pages it flagged.
Both are given per suite, per signal on its own, and over a sweep of thresholds on the review
score, with the counts behind every rate. Pages the engine refused are left out (they fail
visibly). The suites:

- ``real``: docling's test PDFs and the py-pdf samples, as their text layers read;
- ``real-scans``: the same pages rendered at 150 dpi and degraded as a scanner would;
- ``worn``: the same pages degraded harder (low resolution, blur, noise, heavy JPEG), the way
  old print and poor photocopies come in;
- ``generated``: the generated corpus (model.quality.corpus), for the record.

Only the tested pages are read. ``--record DIR`` keeps each page's reading (and the scans)
in DIR; ``--replay DIR`` judges those readings again with the current signals without reading
a page (``model.quality.recorded``): the way to compare signal changes on one reading, in
seconds. ``--audit`` adds the tests of ``data/real-pages-audit.jsonl`` and, for the new pages'
development part, ``data/new-pages-dev-audit.jsonl``: defects a reader sees on pages whose own
tests all passed (docs/QUALITY.md says how they were found). The held-aside part has none.
``--pages`` lists every page with its verdict, score, reasons and failing tests.

The signals' cost is the mean of the quality report's own timing (``quality.seconds``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model.engines.base import EngineOptions  # noqa: E402
from model.engines.registry import load_engine  # noqa: E402
from model.quality import corpus, newpages, realpages  # noqa: E402
from model.quality.checks import load_tests  # noqa: E402
from model.quality.harness import Report, evaluate  # noqa: E402
from model.quality.recorded import RecordingEngine, ReplayEngine  # noqa: E402
from model.quality.review import DEFAULT_THRESHOLD  # noqa: E402
from model.quality.review_choice import (  # noqa: E402
    FlagChoice,
    choose,
    choose_score_threshold,
    judged_by,
    score_confusion,
    score_threshold_held_out,
)
from model.quality.review_choice import (  # noqa: E402
    leave_one_document_out as choice_held_out,
)
from model.quality.review_eval import (  # noqa: E402
    Confusion,
    PageVerdict,
    best_threshold,
    confusion_with,
    evaluate_flag,
    leave_one_document_out,
    page_verdicts,
    rate,
)
from model.quality.run import parse_options  # noqa: E402

SUITES = ("real", "real-scans", "worn", "generated")
# Pages of documents no rule was written against (``model.quality.newpages``, laid out under
# ``--new-root`` by its ``fetch``): the development part, which choices may be made on, and
# the held-aside part, which no choice is ever made on (reported apart, never tuned on).
NEW_SUITES = (
    "new-dev", "new-dev-scans", "new-held", "new-held-scans",
    "new-dev2", "new-dev2-scans", "new-held2", "new-held2-scans",
)  # fmt: skip
HELD_SUITES = ("new-held", "new-held-scans", "new-held2", "new-held2-scans")
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
# Signals whose threshold is a number this bench can choose, with the thresholds it tries
# and when the signal fails at one (its reported value against the threshold).
TUNABLE = {
    "line_confidence": (
        [0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5],
        lambda v, t: v > t,
    ),
    "coverage": ([0.5, 0.6, 0.75, 0.9, 1.0, 1.5, 2.0], lambda v, t: v > t),
}


def run_suite(
    name: str,
    engine,  # noqa: ANN001
    options: EngineOptions,
    tmp: Path,
    tests: list | None = None,
    new_root: Path | None = None,
    audit: bool = False,
) -> Report:
    if name in NEW_SUITES:
        if new_root is None:
            raise SystemExit(
                f"--suite {name} needs --new-root (python -m model.quality.newpages fetch)"
            )
        part = name.split("-")[1]
        scans = tmp / "new-scans" if name.endswith("-scans") else None
        return newpages.evaluate_part(engine, options, new_root, part, scans_dir=scans, audit=audit)
    if name == "real":
        return realpages.evaluate_real(engine, options, tests=tests, tested_only=True).report
    if name == "real-scans":
        return realpages.evaluate_real(
            engine, options, tests=tests, scans_dir=tmp / "scans", tested_only=True
        ).report
    if name == "worn":
        return realpages.evaluate_real(
            engine,
            options,
            tests=tests,
            scans_dir=tmp / "worn",
            degradation=realpages.WORN,
            tested_only=True,
        ).report
    if not (tmp / "generated" / "tests.jsonl").is_file():  # a replay reads the same PDFs
        corpus.build(tmp / "generated")
    return evaluate(engine, options, tmp / "generated", load_tests(tmp / "generated/tests.jsonl"))


def _line(label: str, c: Confusion) -> str:
    should = c.caught + c.missed
    clean = c.false_flags + c.clean
    return (
        f"| {label} | {rate(c.recall)} ({c.caught}/{should}) "
        f"| {rate(c.false_flag_rate)} ({c.false_flags}/{clean}) |"
    )


_ENGINES: dict[str, object] = {}


def suite_engine(args: argparse.Namespace, folder: Path):  # noqa: ANN201
    """The engine for one suite: the real one (loaded once), recording into ``folder``, or a
    replay of what was recorded there."""
    if args.replay:
        engine = ReplayEngine(folder / "readings")
        engine.load()
        return engine
    if args.engine not in _ENGINES:
        _ENGINES[args.engine] = load_engine(args.engine)
        _ENGINES[args.engine].load()  # type: ignore[attr-defined]
    real = _ENGINES[args.engine]
    return RecordingEngine(real, folder / "readings") if args.record else real  # type: ignore[arg-type]


def print_pages(report: Report, threshold: float) -> None:
    """Every page: should it be flagged, was it, its score, its reasons, its failing tests."""
    failing: dict[tuple[str, int], list[str]] = {}
    for outcome in report.outcomes:
        if not outcome.passed:
            failing.setdefault((outcome.test.pdf, outcome.test.page), []).append(outcome.test.id)
    print(
        "\n| page | should | flagged | score | reasons | failing tests |\n|---|---|---|---|---|---|"
    )
    for key, run in sorted(report.pages.items()):
        score = float(run.quality.get("score", 0.0))
        flagged = score > 0 and score >= threshold
        reasons = "; ".join(run.quality.get("reasons", []))[:160]
        tests = ", ".join(failing.get(key, []))[:120]
        print(
            f"| {key[0]}#{key[1]} | {'yes' if key in failing else 'no'} "
            f"| {'yes' if flagged else 'no'} | {score:.2f} | {reasons} | {tests} |"
        )


def document_of(pdf: str) -> str:
    """A scan belongs to the document it was made from: both are held out together (a scan's
    name is its source's path with the page number, ``realpages.scan_name``)."""
    if pdf.startswith("scans/"):
        return re.sub(r"-p\d+\.pdf$", "", pdf.removeprefix("scans/"))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", pdf.removesuffix(".pdf"))


def print_tuning(pages: list[PageVerdict]) -> dict[str, dict]:
    """For each tunable signal: the flag at each threshold on all pages, the threshold that
    looks best on them (in-sample, optimistic), and the leave-one-document-out figure: each
    document judged at the threshold chosen on all the others."""
    found = {}
    for signal, (candidates, fires) in TUNABLE.items():
        print(f"\n### {signal}: threshold chosen on the pages, and leaving each document out\n")
        print("| threshold | recall | false flags |\n|---|---|---|")
        for t in candidates:
            print(_line(str(t), confusion_with(pages, signal, lambda v, t=t, f=fires: f(v, t))))
        best = best_threshold(pages, signal, candidates, fires)
        pooled, chosen = leave_one_document_out(pages, signal, candidates, fires)
        print(
            _line(
                f"in-sample best ({best})",
                confusion_with(pages, signal, lambda v, t=best, f=fires: f(v, t)),
            )
        )
        print(_line("leave one document out", pooled))
        print(f"\nthresholds chosen without each document: {sorted(set(chosen.values()))}")
        found[signal] = {"best": best, "loo": pooled.as_dict(), "chosen": chosen}
    return found


# The signals that ask the same question of every kind of page (model.quality.independent_signals),
# left out to see the flag as it was before them.
KIND_INDEPENDENT = frozenset({"agreement", "ink", "steps", "math_prose", "invisible_text"})
# How the suites are reported apart: the team's own pages (which the rules were written
# against), the new pages' development part, the held-aside part (never chosen on).
GROUPS = {
    "real": "real pages and scans",
    "real-scans": "real pages and scans",
    "worn": "worn scans",
    "generated": "generated",
    "new-dev": "new pages, development",
    "new-dev-scans": "new pages, development",
    "new-held": "new pages, held aside",
    "new-held-scans": "new pages, held aside",
    "new-dev2": "new pages (second wave), development",
    "new-dev2-scans": "new pages (second wave), development",
    "new-held2": "new pages (second wave), held aside",
    "new-held2-scans": "new pages (second wave), held aside",
}
HELD_GROUPS = {GROUPS[suite] for suite in HELD_SUITES}


def print_held_out(verdicts: list[PageVerdict], suite_of: dict[int, str]) -> dict[str, Any]:
    """Every threshold and signal chosen without the document judged
    (``model.quality.review_choice``); the held-aside part judged by the choice made on all
    the other pages, since no choice is ever made on it. Per group: the flag with the
    code's settings (in-sample where the rules were written on the group), the flag held
    out, and each signal alone held out."""
    group_of = {key: GROUPS[suite] for key, suite in suite_of.items()}
    chosen_on = [v for v in verdicts if suite_of[id(v)] not in HELD_SUITES]
    found: dict[str, Any] = {}
    overall = choose(chosen_on) if chosen_on else FlagChoice()
    thresholds_only = choose(chosen_on, leave_out=False) if chosen_on else FlagChoice()
    score_at = choose_score_threshold(chosen_on) if chosen_on else DEFAULT_THRESHOLD
    print(f"\n### held out\n\nchosen on every page but the held-aside part: {overall.describe()}")
    print(f"thresholds only, chosen on the same: {thresholds_only.describe()}")
    print(f"score threshold chosen on every page but the held-aside part: {score_at}")
    for group in dict.fromkeys(group_of[id(v)] for v in verdicts):
        in_group = [v for v in verdicts if group_of[id(v)] == group]
        code, _ = judged_by(in_group, FlagChoice())
        before, _ = judged_by(in_group, FlagChoice(off=KIND_INDEPENDENT))
        if group in HELD_GROUPS:
            flag, alone = judged_by(in_group, overall)
            only, _ = judged_by(in_group, thresholds_only)
            by_score = score_confusion(in_group, score_at)
            how = "judged by the choice made on the other parts"
            per_document: dict[str, str] = {}
            score_choices = [score_at]
        else:

            def in_this(verdict: PageVerdict, group: str = group) -> bool:
                return group_of[id(verdict)] == group

            flag, alone, chosen = choice_held_out(chosen_on, judged=in_this)
            only, _, _ = choice_held_out(chosen_on, judged=in_this, leave_out=False)
            by_score, thresholds = score_threshold_held_out(chosen_on, judged=in_this)
            score_choices = sorted(set(thresholds.values()))
            how = "each document judged by the choice made on all the others"
            per_document = {doc: c.describe() for doc, c in chosen.items()}
        print(f"\n#### {group}: {how}\n\n| | recall | false flags |\n|---|---|---|")
        print(_line("code's settings, without the kind-independent signals", before))
        print(_line("code's settings", code))
        print(_line("**held out**: thresholds and signals", flag))
        print(_line("held out: thresholds only (every signal counts)", only))
        print(_line(f"held out: score threshold (chosen {score_choices})", by_score))
        for name, c in sorted(alone.items()):
            print(_line(f"{name} alone", c))
        print(f"\nmissed: {', '.join(flag.missed_pages) or 'none'}")
        choices = sorted(set(per_document.values()))
        if choices:
            print(f"choices made without a document: {' | '.join(choices)}")
        found[group] = {
            "code": code.as_dict(),
            "code_without_kind_independent": before.as_dict(),
            "held_out": flag.as_dict(),
            "score_threshold_held_out": by_score.as_dict(),
            "thresholds_only_held_out": only.as_dict(),
            "score_thresholds_chosen": score_choices,
            "alone": {n: c.as_dict() for n, c in sorted(alone.items())},
            "choices": per_document,
        }
    found["chosen_on_all"] = overall.describe()
    found["thresholds_only_chosen_on_all"] = thresholds_only.describe()
    found["score_threshold_chosen_on_all"] = score_at
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="local")
    parser.add_argument("--suite", action="append", choices=SUITES + NEW_SUITES)
    parser.add_argument(
        "--new-root", type=Path, help="the new pages' documents (newpages fetch DIR)"
    )
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--option", action="append", default=[], help="key=value engine option")
    parser.add_argument(
        "--audit",
        action="store_true",
        help="add the audits' tests (data/real-pages-audit.jsonl, data/new-pages-dev-audit.jsonl)",
    )
    parser.add_argument("--pages", action="store_true", help="list every page's verdict")
    parser.add_argument(
        "--tune", action="store_true", help="choose tunable thresholds, leaving documents out"
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="choose every threshold and signal leaving each document out; the held-aside "
        "part judged by the choice made on the rest",
    )
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument("--record", type=Path, help="keep each page's reading in this folder")
    kept.add_argument("--replay", type=Path, help="judge the readings kept in this folder")
    args = parser.parse_args(argv)
    tests = realpages.load_real_tests()
    if args.audit:
        tests += load_tests(realpages.AUDIT_TESTS)
    results: dict[str, dict] = {}
    all_flags = Confusion()
    verdicts: list[PageVerdict] = []
    suite_of: dict[int, str] = {}  # id(verdict) -> the suite it came from
    with tempfile.TemporaryDirectory() as tmp:
        work = args.record or args.replay or Path(tmp)
        for suite in args.suite or SUITES:
            engine = suite_engine(args, work / suite)
            report = run_suite(
                suite,
                engine,
                parse_options(args.option),
                work,
                tests,
                new_root=args.new_root,
                audit=args.audit,
            )
            review = evaluate_flag(report, args.threshold)
            suite_verdicts = page_verdicts(report, document_of)
            suite_of.update({id(v): suite for v in suite_verdicts})
            verdicts += suite_verdicts
            sweep = {t: evaluate_flag(report, t).flag for t in SWEEP}
            costs = [r.quality.get("seconds", 0.0) for r in report.pages.values()]
            results[suite] = {
                **review.as_dict(),
                "sweep": {str(t): c.as_dict() for t, c in sweep.items()},
                "signal_ms_per_page": 1000 * sum(costs) / max(len(costs), 1),
            }
            for field in ("caught", "missed", "false_flags", "clean"):
                setattr(all_flags, field, getattr(all_flags, field) + getattr(review.flag, field))
            print(f"\n### {suite} (threshold {args.threshold})\n")
            print("| | recall | false flags |\n|---|---|---|")
            print(_line("**flag**", review.flag))
            for name, confusion in sorted(review.per_signal.items()):
                print(_line(name, confusion))
            print("\n| threshold | recall | false flags |\n|---|---|---|")
            for threshold, confusion in sweep.items():
                print(_line(str(threshold), confusion))
            print(f"\nmissed: {', '.join(review.flag.missed_pages) or 'none'}")
            if args.pages:
                print_pages(report, args.threshold)
            print(f"signals: {results[suite]['signal_ms_per_page']:.1f} ms a page")
    print("\n### all suites\n\n| | recall | false flags |\n|---|---|---|")
    print(_line("**flag**", all_flags))
    if args.tune:
        results["tuning"] = print_tuning(verdicts)
    if args.held_out:
        results["held_out"] = print_held_out(verdicts, suite_of)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
