"""An engine's readings kept on disk, so that the quality signals can be judged again without
reading the pages again.

Tuning a signal needs the same pages read the same way many times; on a shared CPU the OCR of
the real scans takes many minutes, the signals milliseconds. ``RecordingEngine`` wraps an
engine and writes what it returned for each page (Markdown, method, and the ``extra`` the
signals read: OCR lines with their confidence, the OCR's width, extraction notes);
``ReplayEngine`` answers the same pages from those files. The pipeline's own steps after the
engine (normalisation, the quality report) run as usual on a replayed result, so a replay
measures the signals exactly as the service would compute them on that reading.

The key is the page's bytes, number and options: a replay of a page that was never recorded
fails loudly (``NotRecorded``) rather than counting as a page the engine refused; a page the
engine did refuse is recorded as such and refused again on replay.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

from model.engines.base import Engine, EngineError, EngineOptions, PageInput, PageResult

# What a recording keeps of ``PageResult.extra``: everything the signals read, nothing bulky.
KEPT_EXTRA = (
    "ocr_confidence",
    "ocr_lines",
    "ocr_width",
    "extraction_notes",
    "rotation",
    "unread_stretches",
    "agreement",
    "failed_steps",
    "skipped_steps",
)


def page_key(page: PageInput, options: EngineOptions) -> str:
    digest = hashlib.sha256(page.data)
    digest.update(f"{page.mime_type}:{page.page_number}:{options!r}".encode())
    return digest.hexdigest()[:32]


class NotRecorded(RuntimeError):
    """The replay was asked for a page nobody recorded."""


class RecordingEngine:
    """Reads with ``engine`` and keeps each page's result under ``folder``."""

    name: ClassVar[str] = "recording"

    def __init__(self, engine: Engine, folder: Path) -> None:
        self.engine = engine
        self.folder = folder
        self.version = getattr(engine, "version", "")
        self.max_pages_in_flight = getattr(engine, "max_pages_in_flight", 1)

    def load(self) -> None:
        self.engine.load()

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{page_key(page, options)}.json"
        try:
            result = self.engine.transcribe(page, options)
        except EngineError as exc:
            path.write_text(json.dumps({"error": str(exc)}), encoding="utf-8")
            raise
        record = {
            "markdown": result.markdown,
            "method": result.method,
            "engine_seconds": result.engine_seconds,
            "extra": {k: result.extra[k] for k in KEPT_EXTRA if k in result.extra},
        }
        # OCR confidences come as numpy floats; JSON keeps them as plain numbers.
        path.write_text(json.dumps(record, ensure_ascii=False, default=float), encoding="utf-8")
        return result


class ReplayEngine:
    """Answers every page from what a ``RecordingEngine`` kept under ``folder``."""

    name: ClassVar[str] = "replay"
    version: ClassVar[str] = "replay"
    max_pages_in_flight: ClassVar[int] = 1

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self) -> None:
        if not self.folder.is_dir():
            raise EngineError(f"nothing recorded in {self.folder}")

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        path = self.folder / f"{page_key(page, options)}.json"
        if not path.is_file():
            raise NotRecorded(f"page {page.page_number} was not recorded ({path.name})")
        record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        if "error" in record:
            raise EngineError(record["error"])
        return PageResult(
            markdown=record["markdown"],
            method=record["method"],
            engine_seconds=record.get("engine_seconds", 0.0),
            extra=dict(record["extra"]),
        )
