"""Decode rendered pages with the real ``VllmEngine`` class, in a process of its own, and print
what the tier compares: each page's token ids, finish reason and placeholders, and vLLM's
speculative-decoding counters. With ``FOLIO_TIER_TRANSCRIBE=1`` the receipt page also goes
through the engine's whole ``transcribe`` (the repetition guard and the hand-over request).

    python tests/vllm/decode_pages.py CHECKPOINT PRESET OUT.json

vLLM's CPU build spawns its engine-core process, so this runs as a script (the ``__main__``
guard), one engine per process, and the test starts one per preset. Settings come from the
environment like a worker's (``FOLIO_VLLM_*``); the preset is the argument.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def pages() -> list[tuple[str, bytes, str]]:
    from tests.vllm.pages import a4_pdf, small_png

    return [("a4.pdf", a4_pdf(), "application/pdf"), ("receipt.png", small_png(), "image/png")]


def main(checkpoint: str, preset: str, out: str) -> int:
    import os

    os.environ["FOLIO_VLLM_MODEL"] = checkpoint
    os.environ["FOLIO_VLLM_SPECULATION"] = preset
    from model.engines import EngineOptions, PageInput
    from model.engines.vllm import metrics
    from model.engines.vllm.config import VllmConfig
    from model.engines.vllm.engine import VllmEngine
    from model.rendering import DEFAULT_LONG_SIDE, open_page_image

    engine = VllmEngine(VllmConfig.from_env())
    started = time.perf_counter()
    engine.load()
    loaded = time.perf_counter()
    results = []
    try:
        for name, data, mime in pages():
            image = open_page_image(data, mime, 1, long_side=DEFAULT_LONG_SIDE)
            # The engine's own decoding step, to read the token ids it keeps.
            decoded = engine._decode(engine._main, image, ngram=engine._spec_off)
            results.append(
                {
                    "page": name,
                    "token_ids": decoded.token_ids,
                    "finish_reason": decoded.finish_reason,
                    "placeholders": decoded.placeholders,
                    "text": decoded.text,
                    "spec": decoded.spec,
                }
            )
        transcribed = None
        if os.environ.get("FOLIO_TIER_TRANSCRIBE") == "1":
            name, data, mime = pages()[1]
            result = engine.transcribe(PageInput(data, mime, 1), EngineOptions())
            transcribed = {
                "page": name,
                "output_tokens": result.output_tokens,
                "repetition": result.extra.get("repetition"),
                "handoff": result.extra.get("handoff"),
            }
        counters = metrics.spec_decode_totals()
        status = dict(engine.status)
    finally:
        engine.close()
    Path(out).write_text(
        json.dumps(
            {
                "preset": preset,
                "status": status,
                "pages": results,
                "transcribed": transcribed,
                "spec_decode": counters,
                "load_seconds": round(loaded - started, 1),
                "decode_seconds": round(time.perf_counter() - loaded, 1),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
