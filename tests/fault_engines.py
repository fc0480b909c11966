"""Engines that misbehave on purpose, for the fault tests.

The worker processes those tests start load them through the registry's test hook
(``FOLIO_EXTRA_ENGINES``, see ``model/engines/registry.py``); nothing else imports them.
Each keeps the real engine protocol, so everything around the engine (claim, time limits,
retries, saving, finalizing) is the production code.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import ClassVar

from model.engines.base import EngineError, EngineOptions, PageInput, PageResult

logger = logging.getLogger(__name__)

# A runaway decode as a VLM writes it: a sensible start, then one table row over and over.
REPETITION_HEAD = "# Freight ledger\n\n| Item | Qty | Price |\n|---|---|---|\n"
REPETITION_ROW = "| Crate of nails | 1 | 2.00 |\n"
REPETITION_COPIES = 300


class _FaultEngine:
    version: ClassVar[str] = "fault-1"
    max_pages_in_flight: ClassVar[int] = 1

    def load(self) -> None:
        """Nothing to load."""


class CrashingEngine(_FaultEngine):
    """A bug in the engine: an exception nobody planned for."""

    name: ClassVar[str] = "fault-crash"

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        raise RuntimeError("simulated engine bug: index out of range in the decoder")


class RefusingEngine(_FaultEngine):
    """An engine that knows why it cannot read a page."""

    name: ClassVar[str] = "fault-refuse"

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        raise EngineError(f"page {page.page_number}: the model cannot read this script")


class HangingEngine(_FaultEngine):
    """A decode that never returns (a stuck accelerator, a dead-locked runtime)."""

    name: ClassVar[str] = "fault-hang"

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        logger.info("page %s: hanging on purpose", page.page_number)
        time.sleep(3600)  # the soft time limit interrupts this sleep
        raise AssertionError("the page time limit should have stopped this page")


class RepeatingEngine(_FaultEngine):
    """A decode that ran away: one row repeated until the token cap, no end-of-sequence."""

    name: ClassVar[str] = "fault-repeat"

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        markdown = REPETITION_HEAD + REPETITION_ROW * REPETITION_COPIES
        return PageResult(
            markdown=markdown,
            input_tokens=300,
            output_tokens=8192,
            method="vlm",
            extra={"finish_reason": "length"},
        )


class StuckEngine(_FaultEngine):
    """A page stuck where the soft time limit cannot reach it, as MuPDF is in its C code on
    a hostile drawing: the soft limit's signal is blocked, so only the hard kill ends it."""

    name: ClassVar[str] = "fault-stuck"

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        # Celery's soft limit arrives as SIGUSR1 (billiard's pool); C code never sees it.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        logger.info("page %s: stuck on purpose", page.page_number)
        time.sleep(3600)
        raise AssertionError("the hard time limit should have killed this process")


FAULT_ENGINES = {
    "fault-crash": "tests.fault_engines:CrashingEngine",
    "fault-refuse": "tests.fault_engines:RefusingEngine",
    "fault-hang": "tests.fault_engines:HangingEngine",
    "fault-repeat": "tests.fault_engines:RepeatingEngine",
    "fault-stuck": "tests.fault_engines:StuckEngine",
}


def extra_engines_value() -> str:
    """``FOLIO_EXTRA_ENGINES`` for the test process and its workers."""
    return ",".join(f"{name}={path}" for name, path in FAULT_ENGINES.items())


class BrokenLoadEngine(_FaultEngine):
    """An engine whose model cannot be loaded (a missing checkpoint, no memory for it)."""

    name: ClassVar[str] = "fault-broken-load"

    def load(self) -> None:
        raise RuntimeError("simulated load failure: the checkpoint directory is empty")

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        raise AssertionError("a worker whose engine did not load must not take pages")
