"""The engine protocol: one page in, Markdown out.

An engine is constructed once per worker process (it may hold a model) and then called for
one page at a time, possibly from several threads at once up to ``max_pages_in_flight``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from model.layout import PageLayout

TableFormat = Literal["markdown", "html", "auto"]
# Running heads, running feet and page numbers: kept for archival fidelity (what jina-ocr-v1
# writes), or dropped for reading and search.
HeaderMode = Literal["keep", "drop"]
HEADER_MODES = ("keep", "drop")


@dataclass(frozen=True)
class PageInput:
    """One page of a stored document, as the worker hands it to an engine.

    ``data`` is the whole document's bytes: PyMuPDF opens a PDF lazily, so picking one
    page out of it is cheap, and the engine sees the page's text layer, not just pixels.
    """

    data: bytes
    mime_type: str
    page_number: int  # 1-indexed


@dataclass(frozen=True)
class EngineOptions:
    # "auto": pipe tables for simple grids, HTML where cells merge; the service's default,
    # measured best (docs/QUALITY.md).
    table_format: TableFormat = "auto"
    # Crop the page's figures out (engines that locate them) and link them from the Markdown.
    figures: bool = False
    headers: HeaderMode = "drop"
    # Text normalisation steps, canonical (``model.textnorm.parse_steps``): "" for none, else
    # a sorted comma-joined subset of "hyphenation", "ligatures", "whitespace".
    normalize: str = ""
    # Documents read from their structure (model.formats.structure): a presentation's speaker
    # notes, and reviewers' comments, written after the content they belong with.
    speaker_notes: bool = False
    comments: bool = False
    # The scanned page's language for the lines the bundled OCR cannot read, in Tesseract's
    # codes ("kor", "fas+ara"); None: found on the page where needed (local engine).
    ocr_language: str | None = None

    @classmethod
    def from_dict(cls, options: dict[str, Any]) -> EngineOptions:
        """The engine's share of a job's options (the rest, like a token budget, is the
        service's business)."""
        return cls(**{name: options[name] for name in cls.__dataclass_fields__ if name in options})


@dataclass
class PageResult:
    markdown: str
    input_tokens: int = 0
    output_tokens: int = 0
    render_seconds: float = 0.0
    engine_seconds: float = 0.0
    # How the text was obtained ("text-layer", "ocr", "vlm", ...): shown per page.
    method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # Where the text is on the page (blocks with boxes, and OCR'd words), where the engine
    # knows; the pipeline gives the others one block covering the page.
    layout: PageLayout | None = None


class EngineError(Exception):
    """A page this engine cannot transcribe, for a reason retrying will not change."""


class TransientEngineError(EngineError):
    """A failure worth retrying (a busy endpoint, a timeout, a lost connection)."""


@runtime_checkable
class Engine(Protocol):
    name: ClassVar[str]
    # Part of the result cache key: bump it when the same input would give other output, here
    # and in the engine's EngineSpec (model/engines/registry.py; a test holds them together).
    version: ClassVar[str]
    # How many pages this engine wants in flight at once in one worker process.
    max_pages_in_flight: ClassVar[int]

    def load(self) -> None:
        """Load the models now (a worker calls it once per process at start), so that the
        first page pays nothing extra and a broken model fails the worker, not a page."""
        ...

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult: ...
