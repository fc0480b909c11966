"""RapidOCR's own settings, one change at a time, against the engine as configured and against
single-threaded Tesseract 5: speed and word accuracy on the same scanned pages, in one run.

    python bench/ocr_settings.py [--limit N] [--scans-dir DIR] [--only NAME,NAME]

The pages and the images are ``bench/scan_speed.py``'s (the real-page set's Latin scans, drawn
to the image the engine reads), and so are word accuracy (``realpages.words_kept`` against
the born-digital page's text layer) and the Tesseract side (``tesseract -l eng`` with
``OMP_THREAD_LIMIT=1``). Each setting is a ``LocalEngine`` whose RapidOCR instances are built
with one parameter changed from ``model.engines.local.RAPIDOCR_PARAMS`` and its threads; the
whole engine reads the page (detection, classifier, recognition, the re-reads, the layout), so
a setting that saves recognition time but costs a re-read shows. The sides alternate page by
page, and which goes first rotates, so that the machine's other load falls on all alike: the
figures to read are each side's speed ratio to Tesseract and its accuracy beside the
engine's as configured (``configured``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.scan_speed import (  # noqa: E402
    engine_read,
    scanned_pages,
    tesseract_images,
    tesseract_read,
)
from model.engines.local import LocalEngine  # noqa: E402
from model.engines.local_config import LocalConfig  # noqa: E402
from model.quality.realpages import words_kept  # noqa: E402

ORT = "EngineConfig.onnxruntime."
# One change each from the engine's configuration.
SETTINGS: dict[str, dict[str, Any]] = {
    "configured": {},
    "det 736 max": {"Det.limit_side_len": 736},
    "det 1280 max": {"Det.limit_side_len": 1280},
    "no classifier": {"Global.use_cls": False},
    "rec batch 1": {"Rec.rec_batch_num": 1},
    "rec batch 16": {"Rec.rec_batch_num": 16},
    "memory arena on": {f"{ORT}enable_cpu_mem_arena": True},
    "2 threads": {f"{ORT}intra_op_num_threads": 2},
}


class SettingEngine(LocalEngine):
    """The local engine with some of RapidOCR's parameters changed."""

    def __init__(self, changes: dict[str, Any]) -> None:
        super().__init__(LocalConfig(ocr_threads=1))
        self._changes = changes

    def _params(self) -> dict[str, Any]:
        return {**super()._params(), **self._changes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, help="only the first N pages")
    parser.add_argument("--scans-dir", type=Path, help="keep the scans here (default: temp)")
    parser.add_argument("--only", help="comma-separated setting names (configured is kept)")
    args = parser.parse_args(argv)
    names = list(SETTINGS)
    if args.only:
        names = ["configured", *(n for n in args.only.split(",") if n != "configured")]
        unknown = [name for name in names if name not in SETTINGS]
        if unknown:
            parser.error(f"unknown settings {unknown}: choose from {', '.join(SETTINGS)}")
    with tempfile.TemporaryDirectory() as tmp:
        pages = scanned_pages(args.scans_dir or Path(tmp))[: args.limit]
        engines = {name: SettingEngine(SETTINGS[name]) for name in names}
        for engine in engines.values():
            engine.load()
        images = tesseract_images(pages, Path(tmp))
        sides = [*engines, "tesseract"]
        seconds = dict.fromkeys(sides, 0.0)
        accuracy = dict.fromkeys(sides, 0.0)
        for index, (_, _, png, truth) in enumerate(pages):
            shift = index % len(sides)
            for side in sides[shift:] + sides[:shift]:
                spent, text = (
                    engine_read(engines[side], png)
                    if side in engines
                    else tesseract_read(images[index])
                )
                seconds[side] += spent
                accuracy[side] += words_kept(text, truth) / len(pages)
    print(f"scanned pages: {len(pages)}, load average {os.getloadavg()[0]:.1f} at the end")
    for side in sides:
        ratio = seconds["tesseract"] / seconds[side]
        print(
            f"{side}: {len(pages) / seconds[side]:.3f} pages/s, words read "
            f"{100 * accuracy[side]:.1f} %, speed ratio to tesseract {ratio:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
