"""One page through an engine and what follows it: the same steps in the worker and in the
quality harness, so that what the harness measures is what the service returns."""

from __future__ import annotations

import logging
import time
from typing import Any

from model.documents import MUPDF_LOCK, PDF
from model.engines.base import Engine, EngineError, EngineOptions, PageInput, PageResult
from model.formats import ebooks, libreoffice, renditions, structure
from model.formats import types as formats
from model.layout import page_size_points
from model.layout.schema import PageLayout
from model.layout.table_blocks import markdown_layout, tables_from_markdown
from model.quality.signals import quality_report
from model.steps import StepFailure, page_step, steps_recorded
from model.textnorm import normalize_markdown
from model.tokens import count_tokens

logger = logging.getLogger(__name__)


def transcribe_page(engine: Engine, page: PageInput, options: EngineOptions) -> PageResult:
    """The engine's transcription, normalised as the options ask, with its quality report in
    ``extra["quality"]`` (signals, ``needs_review``, reasons, ``failed_steps``).

    Every step after the engine's raw reading is isolated (``model.steps``): one that raises
    leaves the page with its reading from before that step, and the page is flagged for
    review, naming the step, instead of failing.

    Office, OpenDocument, web and text documents are not transcribed: their page is a unit of
    the structural conversion (``model.formats.structure``), whatever the engine. E-books are
    laid out as PDF first, and the engine reads that PDF's page."""
    with steps_recorded() as failed:
        fmt = formats.format_of(page.mime_type)
        if fmt is not None and fmt.kind in formats.CONVERTED_KINDS:
            return finish_page(page, structured_page(page, fmt, options), options, failed)
        if fmt is not None and fmt.kind == "ebook":
            try:
                with MUPDF_LOCK:
                    pdf = ebooks.as_pdf(page.data, fmt)
            except ebooks.EbookError as exc:
                raise EngineError(str(exc)) from exc
            page = PageInput(data=pdf, mime_type=PDF, page_number=page.page_number)
        result = engine.transcribe(page, options)
        return finish_page(page, result, options, failed)


def structured_page(
    page: PageInput, fmt: formats.Format, options: EngineOptions | None = None
) -> PageResult:
    started = time.perf_counter()
    conversion = structure.ConversionOptions.from_engine_options(options or EngineOptions())
    try:
        units = structure.document_units(page.data, fmt, conversion)
    except (structure.ConversionError, ValueError) as exc:
        raise EngineError(str(exc)) from exc
    if not 1 <= page.page_number <= len(units):
        raise EngineError(
            f"page {page.page_number} does not exist: the {fmt.name} file has {len(units)} pages"
        )
    markdown = units[page.page_number - 1]
    return PageResult(
        markdown=markdown,
        output_tokens=count_tokens(markdown),
        engine_seconds=time.perf_counter() - started,
        method=STRUCTURE_METHOD,
        extra={"format": fmt.name},
    )


def has_office_page_images(mime_type: str) -> bool:
    """Whether pages of this type get images drawn by LibreOffice here (Office and
    OpenDocument files, where LibreOffice is installed)."""
    fmt = formats.format_of(mime_type)
    return fmt is not None and renditions.rendered(fmt)


def office_page_image(
    page: PageInput, options: EngineOptions | None = None, *, timeout: float = 60
) -> renditions.PageImage | None:
    """An Office or OpenDocument page's image, drawn from LibreOffice's layout of the document
    (``model.formats.renditions``) for the units the options make; ``timeout`` bounds the
    drawing (FOLIO_PAGE_RENDER_TIMEOUT in the worker). ``None`` for other documents, and where
    LibreOffice is missing or fails: the text stands without it."""
    fmt = formats.format_of(page.mime_type)
    if fmt is None or not renditions.rendered(fmt):
        return None
    try:
        conversion = structure.ConversionOptions.from_engine_options(options or EngineOptions())
        units = structure.document_units(page.data, fmt, conversion)
        made = renditions.rendition(page.data, fmt, units)
        return renditions.page_image(made, page.page_number, timeout=timeout)
    except (libreoffice.LibreOfficeError, structure.ConversionError) as exc:
        logger.warning("page %s: no page image (%s)", page.page_number, exc)
    except Exception:  # a drawing's bug must not fail a page whose text was read
        logger.exception("page %s: no page image", page.page_number)
    return None


# The method of a page read from the document's structure rather than transcribed.
STRUCTURE_METHOD = "structure"
NOMINAL_PAGE_POINTS = (595.0, 842.0)  # A4


def finish_page(
    page: PageInput,
    result: PageResult,
    options: EngineOptions,
    failed: list[StepFailure] | None = None,
) -> PageResult:
    """Normalisation, a layout where the engine gave none, and the quality report; the steps
    that failed on this page (``failed``, from ``steps_recorded``) go into the report."""
    failed = [] if failed is None else failed
    if options.normalize:
        _normalized(result, options.normalize)
    if result.layout is None and result.method == STRUCTURE_METHOD:
        # A unit of a structured document has no geometry of its own: its text over a
        # nominal A4 page, so that blocks and chunks still cite it. Where LibreOffice draws
        # the page, the page drawn takes its place (ocr_worker/page_images.py).
        result.layout = markdown_layout(result.markdown, NOMINAL_PAGE_POINTS)
    elif result.layout is None:
        result.layout = _whole_page(page, result)
    if result.layout is not None:
        # Blocks, chunks, the viewer and the searchable PDF show the Markdown's tables.
        result.layout = tables_from_markdown(result.layout, result.markdown)
    started = time.perf_counter()
    if result.method == STRUCTURE_METHOD:
        # The document's own text, not a reading of pixels: no OCR signal applies to it.
        quality: dict[str, Any] = {"needs_review": False, "reasons": [], "signals": {}}
    else:
        # The steps that failed so far are one of the report's signals (``steps``), so that
        # they weigh in the page's review score.
        result.extra["failed_steps"] = [failure.as_dict() for failure in failed]
        quality = _quality_report(page, result)
        result.extra.pop("failed_steps", None)
        quality["seconds"] = round(time.perf_counter() - started, 4)
    result.extra["quality"] = with_failed_steps(quality, failed)
    # The OCR's lines served the signals; the page's stored report need not carry them.
    result.extra.pop("ocr_lines", None)
    result.extra.pop("ocr_width", None)
    return result


def with_failed_steps(quality: dict[str, Any], failed: list[StepFailure]) -> dict[str, Any]:
    """The report with the steps that failed on the page: ``failed_steps`` (each step's name
    and error, in order; empty when none did), and the page flagged for review, saying which
    step and that the page kept its reading from before it."""
    quality["failed_steps"] = [failure.as_dict() for failure in failed]
    steps = (quality.get("signals") or {}).get("steps") or {}
    if failed:
        quality["needs_review"] = True
    if failed and steps.get("ok") is not False:  # else the ``steps`` signal names them
        names = ", ".join(dict.fromkeys(failure.step for failure in failed))
        quality["reasons"] = [
            f"failed step: {names} (the page keeps its reading from before it)",
            *quality.get("reasons", []),
        ]
    return quality


def _no_report(page: PageInput, result: PageResult) -> dict[str, Any]:
    return {"needs_review": False, "reasons": [], "signals": {}}


@page_step("signals", fallback=_no_report)
def _quality_report(page: PageInput, result: PageResult) -> dict[str, Any]:
    return quality_report(page, result)


def _normalized(result: PageResult, steps: str) -> None:
    """The Markdown and the layout's texts normalised (``normalize_markdown`` is a page step:
    where it fails, the text stays as it was)."""
    normalized = normalize_markdown(result.markdown, steps)
    if normalized != result.markdown:
        result.markdown = normalized
        if result.output_tokens and engine_counts_approximately(result):
            result.output_tokens = count_tokens(normalized)
    if result.layout is not None:
        result.layout = result.layout.with_markdown(lambda text: normalize_markdown(text, steps))


def _whole_page(page: PageInput, result: PageResult) -> PageLayout | None:
    """The text over the whole page (its tables apart), for an engine that does not say where
    its text is."""
    try:
        size = page_size_points(page.data, page.mime_type, page.page_number)
    except Exception:  # the engine read the page; its size is not worth failing it over
        logger.exception("page %s: no page size for its layout", page.page_number)
        return None
    return markdown_layout(result.markdown, size)


def engine_counts_approximately(result: PageResult) -> bool:
    """Engines that bill the tokens they decoded keep that count; the local engine's count is
    an approximation of its Markdown, so it follows the Markdown."""
    return result.method in ("text-layer", "ocr", STRUCTURE_METHOD)
