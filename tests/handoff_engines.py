"""An engine that speculates unless told not to, for the hand-over tests.

Loaded by real worker processes through ``FOLIO_EXTRA_ENGINES``. Started with
``FOLIO_TEST_SPECULATION=off`` it reads every page plainly; otherwise every page runs away, and,
as the vLLM engine does for a runaway under speculation, it returns the page trimmed to one
copy of its loop and asks to hand it over (``model.engines.handoff``).
"""

from __future__ import annotations

import os
from typing import ClassVar

from model.engines import handoff
from model.engines.base import EngineOptions, PageInput, PageResult
from model.engines.registry import Setting

ENGINE = "handoff-test"
PLAIN_TEXT = "# Freight ledger\n\nRead without speculation, no loop."
TRIMMED_TEXT = "# Freight ledger\n\n| Item | Qty |\n|---|---|\n| Crate of nails | 1 |"


class SpeculatingEngine:
    name: ClassVar[str] = ENGINE
    version: ClassVar[str] = "handoff-1"
    max_pages_in_flight: ClassVar[int] = 1
    # What a worker on its no-speculation queue runs with (ocr_worker/engines.py).
    without_speculation: ClassVar[Setting] = Setting("FOLIO_TEST_SPECULATION", ("off",))

    def load(self) -> None:
        """Nothing to load."""

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        speculation = os.environ.get("FOLIO_TEST_SPECULATION", "on")
        if speculation == "off":
            return PageResult(
                markdown=PLAIN_TEXT, output_tokens=12, method="vlm", extra={"speculation": "off"}
            )
        result = PageResult(
            markdown=TRIMMED_TEXT,
            output_tokens=8192,
            method="vlm",
            extra={
                "speculation": "on",
                "repetition": {"runaway": True, "reason": "no-eos", "retried": False},
            },
        )
        handoff.ask_plain(result.extra, "runaway repetition (no-eos)")
        return result


def extra_engines_value() -> str:
    return f"{ENGINE}=tests.handoff_engines:SpeculatingEngine"
