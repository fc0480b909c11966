"""Score a Folio engine and its settings on a folder of PDFs with olmOCR-Bench-style tests.

    python -m model.quality.run --engine local --pdfs DIR --tests FILE.jsonl \\
        [--option table_format=html] [--option headers=keep] [--option normalize=all] [--json]

Prints the pass rate per test type, per category and overall, each with a 95 % Wilson
interval, the macro average over types (olmOCR-Bench's overall score), seconds per page and
how many pages the quality signals flagged for review. ``--fail`` lists failing tests.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from model.engines.base import EngineOptions
from model.engines.registry import load_engine
from model.quality.checks import load_tests
from model.quality.harness import Report, evaluate
from model.textnorm import parse_steps


def parse_options(pairs: list[str]) -> EngineOptions:
    values: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--option wants key=value, not {pair!r}")
        lowered = value.strip().lower()
        values[key.strip()] = (
            lowered in ("1", "true", "yes", "on") if key.strip() == "figures" else value.strip()
        )
    if "normalize" in values:
        values["normalize"] = parse_steps(str(values["normalize"]))
    unknown = set(values) - set(EngineOptions.__dataclass_fields__)
    if unknown:
        raise SystemExit(f"unknown option(s): {', '.join(sorted(unknown))}")
    return EngineOptions.from_dict(values)


def report_dict(report: Report) -> dict[str, Any]:
    def rate(r: Any) -> dict[str, Any]:
        return {"passed": r.passed, "total": r.total, "rate": r.value, "ci95": [r.low, r.high]}

    return {
        "per_type": {k: rate(v) for k, v in report.per_type().items()},
        "per_category": {k: rate(v) for k, v in report.per_category().items()},
        "overall": rate(report.overall()),
        "macro": report.macro(),
        "seconds_per_page": report.seconds_per_page(),
        "pages": len(report.pages),
        "pages_needing_review": report.pages_flagged(),
        "failures": [
            {"id": o.test.id, "type": o.test.type, "why": o.explanation}
            for o in report.outcomes
            if not o.passed
        ],
    }


def print_report(report: Report, *, failures: bool) -> None:
    print("type         pass rate [95% CI]")
    for name, rate in report.per_type().items():
        print(f"  {name:<10} {rate}")
    print("category")
    for name, rate in report.per_category().items():
        print(f"  {name:<14} {rate}")
    print(f"overall      {report.overall()}")
    print(f"macro (mean of types) {100 * report.macro():.1f} %")
    print(
        f"pages {len(report.pages)}, {report.seconds_per_page():.2f} s/page, "
        f"{report.pages_flagged()} flagged needs_review"
    )
    if failures:
        for outcome in report.outcomes:
            if not outcome.passed:
                print(f"FAIL {outcome.test.id} ({outcome.test.type}): {outcome.explanation}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="local")
    parser.add_argument(
        "--pdfs", type=Path, required=True, help="folder the tests' pdf names are in"
    )
    parser.add_argument(
        "--tests", type=Path, required=True, action="append", help="JSONL; repeatable"
    )
    parser.add_argument("--option", action="append", default=[], help="key=value engine option")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--fail", action="store_true", help="list the failing tests")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    options = parse_options(args.option)
    tests = [test for path in args.tests for test in load_tests(path)]
    engine = load_engine(args.engine)
    engine.load()
    report = evaluate(engine, options, args.pdfs, tests)
    if args.json:
        json.dump(report_dict(report), sys.stdout, indent=2)
        print()
    else:
        print(f"engine {args.engine} options {options}")
        print_report(report, failures=args.fail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
