"""The full quality run: every setting of an engine over the generated corpus, the tests for
the shared corpus, and the real-page set and its scans, as the Markdown table that
docs/QUALITY.md carries.

    python bench/quality.py [--engine local] [--setting "table_format=html,normalize=all"] \
        [--suite generated --suite real ...]

Without --setting it runs the settings docs/QUALITY.md compares; without --suite, every suite
(generated, shared, real, real-scans). Each row: pass rate per test type, overall (95 % Wilson
interval), the macro mean over types, text similarity to the reference Markdown (real pages
only), pages per second, and pages flagged needs_review. ``--json FILE`` keeps every number
and failure; ``--classes`` prints the real pages' pass rate per class (test category).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model.engines.registry import load_engine  # noqa: E402
from model.quality import corpus  # noqa: E402
from model.quality.checks import load_tests  # noqa: E402
from model.quality.harness import evaluate  # noqa: E402
from model.quality.realpages import evaluate_real  # noqa: E402
from model.quality.run import parse_options, report_dict  # noqa: E402

SHARED_PDFS = REPO.parent / "shared" / "corpus" / "pdf-samples"
SHARED_TESTS = REPO / "model" / "quality" / "data" / "shared-corpus.jsonl"
SETTINGS = (
    "headers=drop",
    "headers=keep",
    "table_format=html",
    "normalize=all",
    "table_format=html,normalize=all,headers=drop",
)
TYPES = ("present", "absent", "order", "table", "math", "baseline")
SUITES = ("generated", "shared", "real", "real-scans")


def _cell(rate: dict | None) -> str:
    if rate is None:
        return "–"
    return f"{100 * rate['rate']:.0f} ({rate['passed']}/{rate['total']})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="local")
    parser.add_argument("--setting", action="append", help="comma-separated key=value options")
    parser.add_argument("--suite", action="append", choices=SUITES)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--classes", action="store_true", help="real pages: rate per class")
    args = parser.parse_args(argv)
    engine = load_engine(args.engine)
    engine.load()
    results: dict[str, dict] = {}
    chosen = args.suite or SUITES
    with tempfile.TemporaryDirectory() as tmp:
        generated = Path(tmp) / "generated"
        corpus.build(generated)
        suites = {
            "generated": (generated, load_tests(generated / "tests.jsonl")),
            "shared": (SHARED_PDFS, load_tests(SHARED_TESTS)),
        }
        for setting in args.setting or SETTINGS:
            options = parse_options([p for p in setting.split(",") if p])
            for suite in chosen:
                if suite in suites:
                    pdfs, tests = suites[suite]
                    data = report_dict(evaluate(engine, options, pdfs, tests))
                else:
                    scans = Path(tmp) / "scans" if suite == "real-scans" else None
                    real = evaluate_real(engine, options, scans_dir=scans)
                    data = report_dict(real.report)
                    data["similarity"] = real.similarity
                    data["mean_similarity"] = real.mean_similarity()
                results[f"{suite} | {setting}"] = data
                print(f"done: {suite} {setting}", file=sys.stderr)
    header = [
        "corpus", "setting", *TYPES, "overall [95% CI]", "macro", "similarity", "pages/s",
        "flagged",
    ]  # fmt: skip
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for key, data in results.items():
        suite, setting = key.split(" | ")
        overall = data["overall"]
        low, high = overall["ci95"]
        row = [
            suite,
            f"`{setting}`",
            *(_cell(data["per_type"].get(kind)) for kind in TYPES),
            f"{100 * overall['rate']:.1f} [{100 * low:.0f}–{100 * high:.0f}]",
            f"{100 * data['macro']:.1f}",
            f"{100 * data['mean_similarity']:.1f}" if "mean_similarity" in data else "–",
            f"{1 / data['seconds_per_page']:.2f}" if data["seconds_per_page"] else "–",
            f"{data['pages_needing_review']}/{data['pages']}",
        ]
        print("| " + " | ".join(row) + " |")
    if args.classes:
        _print_classes(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _print_classes(results: dict[str, dict]) -> None:
    """Pass rate per class (test category) of the real suites: one column per run."""
    real = {key: data for key, data in results.items() if key.startswith("real")}
    if not real:
        return
    classes = sorted({c for data in real.values() for c in data["per_category"]})
    print()
    columns = [" `".join(key.split(" | ")) + "`" for key in real]
    print("| class | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(real))
    for name in classes:
        cells = [_cell(data["per_category"].get(name)) for data in real.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
