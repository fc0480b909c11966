"""What reading a scanned document's neighbouring margins costs the local engine.

    python bench/scan_margins_cost.py DIR [--part dev|held|both] [--rounds 2]

DIR is laid out by ``python -m model.quality.newpages fetch DIR``. Each page of the new-page
parts is scanned with up to two pages on either side (``realpages.scan_document``, as the
quality harness's ``--scanned-documents`` does) and read whole by the engine's
``transcribe``, with the neighbours' margins read (as shipped) and without (the engine's
margin reader replaced by one that reads nothing, so that only the page's own lines count).
Both sides run in this process, alternating page by page and which goes first, each page
warmed up once, so that the machine's load falls on both alike: the figure to read is the
ratio of the two sides' total times. It also prints how many pages' Markdown changed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.engines.local import LocalEngine  # noqa: E402
from model.quality.newpages import load_part  # noqa: E402
from model.quality.realpages import build_scans, scanned_pages  # noqa: E402

PDF = "application/pdf"


def timed(engine: LocalEngine, data: bytes, page: int, *, neighbours: bool) -> tuple[float, str]:
    reader = engine._margin_reader
    if not neighbours:
        engine._margin_reader = lambda: lambda page, wanted: []  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        result = engine.transcribe(PageInput(data, PDF, page), EngineOptions())
        return time.perf_counter() - started, result.markdown
    finally:
        engine._margin_reader = reader  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--part", choices=["dev", "held", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    parts = ["dev", "held"] if args.part == "both" else [args.part]
    pages = sorted({(t.pdf, t.page) for part in parts for t in load_part(part)})
    engine = LocalEngine()
    engine.load()
    with tempfile.TemporaryDirectory() as tmp:
        scans = Path(tmp)
        build_scans(pages, scans, args.root, documents=True)
        places = list(scanned_pages(pages, args.root, documents=True))
        documents = {name: (scans / name).read_bytes() for name, _ in places}
        totals = {True: 0.0, False: 0.0}
        changed = 0
        for name, page in places:  # warm-up, and what changes
            _, with_reading = timed(engine, documents[name], page, neighbours=True)
            _, without = timed(engine, documents[name], page, neighbours=False)
            changed += with_reading != without
        for round_ in range(args.rounds):
            for n, (name, page) in enumerate(places):
                order = (True, False) if (n + round_) % 2 == 0 else (False, True)
                for neighbours in order:
                    seconds, _ = timed(engine, documents[name], page, neighbours=neighbours)
                    totals[neighbours] += seconds
    count = len(places) * args.rounds
    print(f"pages {len(places)} ({'+'.join(parts)}), rounds {args.rounds}")
    print(f"  own OCR only        {totals[False] / count:6.2f} s/page")
    print(f"  neighbours read too {totals[True] / count:6.2f} s/page")
    print(f"  speed ratio (with / without) {totals[False] / totals[True]:.3f}")
    print(f"  pages whose Markdown changed {changed} of {len(places)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
