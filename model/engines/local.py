"""The embedded CPU engine: the text layer where a PDF has one, OCR where it does not.

- Born-digital PDF pages go through pymupdf4llm with pymupdf-layout's layout model: headings,
  reading order across columns, tables (pipe tables, or HTML when asked) and footnotes.
- Scanned PDF pages and images are rendered and read by RapidOCR (its ONNX models ship in
  the wheel). Measured on this project's scans, calling RapidOCR directly beats pymupdf4llm's
  own OCR hook: the hook merged every line into one run of text, lost the reading order of a
  page scanned sideways and garbled its words, and mutated the document so that a second call
  came back in bold. Here the boxes are laid out by ``model.postprocess`` instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pymupdf
from PIL import Image

from model.documents import MUPDF_LOCK, PDF, DocumentError
from model.engines import reading_agreement as agreement
from model.engines.base import EngineError, EngineOptions, PageInput, PageResult
from model.engines.line_reread import reread_doubtful
from model.engines.ocr_coverage import unread_stretches
from model.formula_stacks import stacked_formulas
from model.formulas import page_formulas, place_formulas
from model.layout import PageLayout, page_size_points
from model.layout.ocr import line_scores, ocr_layout, word_boxes
from model.layout.text_layer import text_layer_layout
from model.markdown_repair import repair_text_layer
from model.pages import PageSelectionError
from model.postprocess import TextBox, boxes_to_markdown, skew_of, tidy_markdown
from model.rendering import DEFAULT_LONG_SIDE, open_page_image, open_pdf_page, render_zoom
from model.rtl import (
    apply_fixes,
    apply_run_order,
    has_arabic,
    ligature_fixes,
    run_order_fixes,
    table_cell_order,
    table_column_order,
)
from model.ruled_grid import ruled_page
from model.table_format import auto_tables, html_tables
from model.tokens import count_tokens

logger = logging.getLogger(__name__)

# A page with fewer letters and digits than this in its text layer is read as a scan
# (a stamped page number or "Scanned by ..." on top of a page image is not a text layer).
MIN_TEXT_LAYER_CHARS = 20
# ... and so is a page that is mostly one picture with only a caption's worth of text on it.
SCAN_IMAGE_COVERAGE = 0.7
SCAN_MAX_CHARS_OVER_IMAGE = 200
# Text whose fonts lack a Unicode map extracts as U+FFFD; past this share OCR reads better.
MAX_UNMAPPED_SHARE = 0.3

# Measured on 2 cores (A4 at 1600 px long side): detection at the default (shortest side
# scaled up to 736) took 0.6-1.0 s a page; capping the longest side at 960 took 0.15-0.2 s
# with the same word recall on dense two-column pages. Recognition dominates what is left.
RAPIDOCR_PARAMS: dict[str, Any] = {
    "Global.log_level": "warning",
    "Global.use_cls": True,
    "Det.limit_side_len": 960,
    "Det.limit_type": "max",
}
# RapidOCR's own default: a line read with less confidence is dropped.
TEXT_SCORE = 0.5
# Past this share of the detected text (by area) left unread, the page is flagged. Measured
# on the real-page set's scans: Persian, Arabic and Korean pages leave 25-54 % unread where
# the detector finds their lines at all (the bundled recognition model reads Latin, Chinese
# and Japanese only), eight Latin pages 0-4.4 %.
MAX_UNREAD_SHARE = 0.2
# A page at least this much wider than tall, with no text in a strip this share of its width
# down the middle and this many lines on each side, is two pages side by side.
SPREAD_ASPECT = 1.2
SPREAD_GUTTER = 0.02
SPREAD_MIN_LINES = 5
# How many of a page's longest lines vote on its orientation.
ORIENTATION_SAMPLE = 8


@dataclass(frozen=True)
class OcrReading:
    """What one OCR pass over a page image gives."""

    markdown: str
    rotation: int  # clockwise, 0/90/180/270: how the page was found turned
    # Mean recognition confidence over the lines, weighted by their length (a quality
    # signal: noisy and blurred scans score visibly lower); None with no line read.
    confidence: float | None
    layout: PageLayout | None  # blocks and words, where the page's size in points is known
    # The lines, upright, as [x0, y0, x1, y1, confidence, text], for the quality signals that
    # judge line by line.
    lines: list[list[Any]]
    unread: float  # share of the detected text (by area) that could not be read at all
    # Stretches of ink in read lines that no recognised word covers
    # (``model.engines.ocr_coverage``); None without word boxes.
    stretches: list[list[Any]] | None
    # Some lines read a second time, and how alike the two readings are
    # (``model.engines.reading_agreement``); None where no line could be compared.
    agreement: dict[str, Any] | None = None
    # Measurements for the review signals that failed on this page.
    skipped: tuple[str, ...] = ()


class LocalEngine:
    name: ClassVar[str] = "local"
    # Bump when the same page would come out differently (it is part of the cache key).
    version: ClassVar[str] = "local-9"
    max_pages_in_flight: ClassVar[int] = 1

    def __init__(self) -> None:
        self._ocr: Any = None
        self._classifier: Any = None
        self._reader: Any = None
        self._ocr_lock = threading.Lock()

    def load(self) -> None:
        # One pass through each path on a one-line page: this loads the layout model and
        # both OCR models, and takes ONNX Runtime's first-inference cost (about a second).
        sample = _one_line_pdf("Folio warms up its engine.")
        self.transcribe(PageInput(data=sample, mime_type=PDF, page_number=1), EngineOptions())
        self.ocr_image(open_page_image(sample, PDF, 1, long_side=1024))

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        try:
            if page.mime_type == PDF:
                return self._transcribe_pdf_page(page, options)
            return self._transcribe_image(page, options)
        except EngineError:
            raise
        except (DocumentError, PageSelectionError) as exc:
            raise EngineError(f"page {page.page_number} cannot be read: {exc}") from exc
        except Exception as exc:  # a bug or an unforeseen document; say which page it was
            logger.exception("local engine failed on page %s", page.page_number)
            raise EngineError(
                f"page {page.page_number} could not be transcribed ({type(exc).__name__}: {exc})"
            ) from exc

    # --- PDF pages ---------------------------------------------------------------------------

    def _transcribe_pdf_page(self, page: PageInput, options: EngineOptions) -> PageResult:
        started = time.perf_counter()
        image: Image.Image | None = None
        markdown, layout = "", None
        notes: list[str] = []
        drawn: list[Any] | None = []  # the layer's lines as drawn, for the agreement signal
        drawing_seconds = 0.0
        with MUPDF_LOCK:  # pymupdf4llm too runs on MuPDF's global state
            doc = open_pdf_page(page.data, page.page_number)
            try:
                opened = time.perf_counter()
                size = (doc[0].rect.width, doc[0].rect.height)
                if needs_ocr(doc[0]):
                    image = _pdf_page_image(doc[0])
                else:
                    markdown, layout, notes = _text_layer_markdown(doc, options)
                    drawing = time.perf_counter()
                    drawn = agreement.safely(agreement.text_layer_lines, doc[0])
                    drawing_seconds = time.perf_counter() - drawing
            finally:
                doc.close()
        done = time.perf_counter()
        if image is not None:
            # OCR runs outside the PyMuPDF lock: it needs only the pixels.
            return self._ocr_result(
                image, render_seconds=done - started, page_size=size, options=options
            )
        result = _result(markdown, "text-layer", opened - started, done - opened)
        result.layout = layout
        result.extra["extraction_notes"] = notes
        # The layer's lines read from the page's drawing: the ``agreement`` review signal.
        with self._ocr_lock:
            found, skipped = agreement.second_reading(
                drawn, self._recognizer(), drawing_seconds=drawing_seconds
            )
        result.extra["agreement"] = found
        if skipped:
            result.extra["skipped_steps"] = list(skipped)
        return result

    # --- images and OCR ------------------------------------------------------------------------

    def _transcribe_image(self, page: PageInput, options: EngineOptions) -> PageResult:
        started = time.perf_counter()
        image = open_page_image(page.data, page.mime_type, page.page_number)
        size = page_size_points(page.data, page.mime_type, page.page_number)
        return self._ocr_result(
            image, render_seconds=time.perf_counter() - started, page_size=size, options=options
        )

    def _ocr_result(
        self,
        image: Image.Image,
        *,
        render_seconds: float,
        page_size: tuple[float, float],
        options: EngineOptions,
    ) -> PageResult:
        started = time.perf_counter()
        reading = self._ocr_read(image, page_size=page_size, options=options)
        result = _result(reading.markdown, "ocr", render_seconds, time.perf_counter() - started)
        result.layout = reading.layout
        result.extra["rotation"] = reading.rotation
        result.extra["unread_share"] = reading.unread
        result.extra["extraction_notes"] = _unread_notes(reading.unread)
        if reading.stretches is not None:
            # The ``coverage`` signal reads them: text skipped inside a line that was read.
            result.extra["unread_stretches"] = reading.stretches
        if reading.confidence is not None:
            result.extra["ocr_confidence"] = reading.confidence
        result.extra["agreement"] = reading.agreement
        if reading.skipped:
            result.extra["skipped_steps"] = list(reading.skipped)
        if reading.lines:
            # The quality signals read the lines: confidence line by line, column order.
            result.extra["ocr_lines"] = reading.lines
            sideways = reading.rotation in (90, 270)
            result.extra["ocr_width"] = float(image.height if sideways else image.width)
        return result

    def ocr_image(self, image: Image.Image) -> tuple[str, int]:
        """Markdown read from an upright-or-not page image, and the clockwise rotation (0, 90,
        180, 270) the page was found in."""
        reading = self._ocr_read(image)
        return reading.markdown, reading.rotation

    def _ocr_read(
        self,
        image: Image.Image,
        *,
        page_size: tuple[float, float] | None = None,
        options: EngineOptions | None = None,
    ) -> OcrReading:
        """The page image read by OCR; its layout only with a ``page_size`` in points."""
        pixels = np.asarray(image.convert("RGB"))
        with self._ocr_lock:
            ocr, classifier = self._engines()
            # Every line the detector found comes back, however poorly read (text_score 0),
            # so that the share left unread is known; then RapidOCR's own filter keeps those
            # read with its usual confidence, as before.
            raw = ocr(pixels, return_word_box=page_size is not None, text_score=0.0)
            output = _read_confidently(raw)
            boxes = _boxes(output)
            if not boxes:
                return OcrReading("", 0, None, None, [], output.unread, None)
            rotation = _page_rotation(boxes, pixels, classifier)
            if rotation == 180 and not _reads_better_turned(boxes, pixels, self._recognizer()):
                rotation = 0
            # RapidOCR's classifier turns single lines over on its own; a doubtful line is
            # read again the way the page reads (``line_reread``).
            again = reread_doubtful(raw, pixels, rotation, self._recognizer(), _crop_line)
            if again is not raw:
                output = _read_confidently(again)
                boxes = _boxes(output)
                raw = again
            unread = output.unread
            # A second reading of some lines, from another rendering of their ink.
            second = agreement.safely(
                agreement.second_pass_lines, output.word_results, pixels, rotation
            )
            found, skipped = agreement.second_reading(second, self._recognizer())
        height, width = pixels.shape[:2]
        upright = [_unrotate(box, rotation, width, height) for box in boxes]
        upright_width = height if rotation in (90, 270) else width
        upright_height = width if rotation in (90, 270) else height
        # A sideways page's lines are measured against the other axis; those are rare and
        # their skew is left alone.
        skew = skew_of(output.boxes) if rotation in (0, 180) else 0.0
        options = options or EngineOptions()
        markdown = boxes_to_markdown(
            upright,
            upright_width,
            page_height=upright_height,
            drop_running=options.headers == "drop",
            table_format=options.table_format,
            skew_degrees=skew,
            ruling=ruled_page(pixels, rotation, skew),
        )
        layout = None
        if page_size is not None:
            words = [_unrotate(word, rotation, width, height) for word in word_boxes(output)]
            upright_size = (upright_width, upright_height)
            layout = ocr_layout(
                upright,
                line_scores(output),
                words,
                image_size=upright_size,
                page_size=page_size,
                skew_degrees=skew,
            )
        lines = [
            [*(round(v, 1) for v in (b.x0, b.y0, b.x1, b.y1)), round(score, 4), b.text]
            for b, score in zip(upright, line_scores(output), strict=False)
        ]
        # Ink in the kept lines that no recognised word covers (a script the models cannot
        # read beside one they can, on the same line); outside the lock, from the pixels.
        try:
            stretches = unread_stretches(pixels, raw, TEXT_SCORE)
        except Exception:  # a measurement for the review flag must not fail the page's reading
            logger.warning("unread stretches not measured", exc_info=True)
            stretches = None
            skipped += ("unread stretches",)
        return OcrReading(
            markdown,
            rotation,
            _mean_confidence(output),
            layout,
            lines,
            unread,
            stretches,
            found,
            skipped,
        )

    def _engines(self) -> tuple[Any, Any]:
        # Built on first use, under the lock: a web process that only lists engines never
        # pays for the models, and two racing threads never build two copies.
        if self._ocr is None:
            from rapidocr import RapidOCR

            self._ocr = RapidOCR(params=RAPIDOCR_PARAMS)
            # A second, classifier-only instance: RapidOCR's result drops the per-line
            # orientation, and toggling use_det on the main instance would be shared state.
            self._classifier = RapidOCR(
                params={**RAPIDOCR_PARAMS, "Global.use_det": False, "Global.use_rec": False}
            )
        return self._ocr, self._classifier

    def _recognizer(self) -> Any:
        # Recognition alone, built the first time a page looks upside down (rare): it checks
        # the classifier's verdict by reading the lines both ways. Called under the OCR lock.
        if self._reader is None:
            from rapidocr import RapidOCR

            self._reader = RapidOCR(
                params={**RAPIDOCR_PARAMS, "Global.use_det": False, "Global.use_cls": False}
            )
        return self._reader


def _one_line_pdf(text: str) -> bytes:
    with MUPDF_LOCK:
        doc = pymupdf.open()
        doc.new_page(width=595, height=842).insert_text((72, 100), text, fontsize=24)
        try:
            return bytes(doc.tobytes())
        finally:
            doc.close()


def needs_ocr(page: pymupdf.Page) -> bool:
    """Whether a PDF page's text layer is missing, negligible or unreadable."""
    text = page.get_text("text")
    readable = sum(1 for ch in text if ch.isalnum())
    unmapped = text.count("\ufffd")
    if readable < MIN_TEXT_LAYER_CHARS:
        return True
    if unmapped / (readable + unmapped) > MAX_UNMAPPED_SHARE:
        return True
    return readable < SCAN_MAX_CHARS_OVER_IMAGE and _image_coverage(page) > SCAN_IMAGE_COVERAGE


def _image_coverage(page: pymupdf.Page) -> float:
    area = abs(page.rect)
    if not area:
        return 0.0
    covered = max(
        (abs(pymupdf.Rect(info["bbox"]) & page.rect) for info in page.get_image_info()), default=0.0
    )
    return float(covered / area)


def _pdf_page_image(page: pymupdf.Page) -> Image.Image:
    zoom = render_zoom(page.rect, DEFAULT_LONG_SIDE)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace="rgb")
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def _text_layer_markdown(
    doc: pymupdf.Document, options: EngineOptions
) -> tuple[str, PageLayout | None, list[str]]:
    """The page's Markdown and its blocks, from one pass of pymupdf4llm (``page_chunks``
    returns the layout model's boxes beside the text), repaired (``model.markdown_repair``),
    and what could not be recovered (notes for the quality signals)."""
    markdown, layout = _pymupdf4llm_markdown(doc, options)
    if options.table_format == "auto":
        markdown = auto_tables(markdown)
    elif options.table_format == "html":
        markdown = html_tables(markdown)
    # The glyphs' geometry, which Markdown has lost: spacing of code lines, and the sizes
    # and baselines that make a formula's scripts.
    page_dict = doc[0].get_text("dict")
    page_lines = [
        "".join(span["text"] for span in line["spans"])
        for block in page_dict["blocks"]
        for line in block.get("lines", [])
    ]
    repaired, repairs = repair_text_layer(
        markdown, drop_running=options.headers == "drop", page_lines=page_lines
    )
    # Fractions with a rule and radicals need the glyphs one by one and the page's drawings.
    stacked, stack_notes = stacked_formulas(doc[0], doc[0].get_text("rawdict"))
    formulas = stacked + page_formulas(page_dict, skip=[f.box for f in stacked if f.box])
    repaired, formula_notes = place_formulas(repaired, formulas)
    formula_notes = stack_notes + formula_notes
    if any(has_arabic(line) for line in page_lines):
        repaired = apply_run_order(repaired, run_order_fixes(page_dict))
        repaired = table_cell_order(repaired, page_lines)
        repaired = table_column_order(repaired)
        repaired = apply_fixes(repaired, ligature_fixes(doc[0].get_text("rawdict")))
    return tidy_markdown(repaired), layout, repairs.notes + formula_notes


def _pymupdf4llm_markdown(
    doc: pymupdf.Document, options: EngineOptions
) -> tuple[str, PageLayout | None]:
    import pymupdf.layout

    # pymupdf4llm turns the layout model on at import when pymupdf.layout is importable;
    # activating it here as well makes that dependency explicit and fails loudly without it.
    pymupdf.layout.activate()
    import pymupdf4llm

    kwargs: dict[str, Any] = {
        "pages": [0],
        # This path is for pages with a text layer; scans never reach it, and pymupdf4llm's
        # OCR would otherwise look for an engine and print about it.
        "use_ocr": False,
        # Running heads and page numbers: kept or dropped as asked; footnotes are always
        # kept (the layout model labels them apart from page footers).
        "header": options.headers == "keep",
        "footer": options.headers == "keep",
        "show_progress": False,
        "page_chunks": True,
    }
    if options.table_format in ("html", "auto"):
        # pymupdf4llm's HTML tables keep merged cells, and their cells' text whole (its pipe
        # tables split "Europe" across the columns it spans); ``auto`` turns the simple ones
        # back into pipe tables.
        kwargs["table_output"] = "html"
    size = (doc[0].rect.width, doc[0].rect.height)
    if is_spread(doc[0]):
        halves = _spread_markdown(doc, kwargs)
        if halves is not None:
            return halves
    chunk = pymupdf4llm.to_markdown(doc, **kwargs)[0]
    markdown = tidy_markdown(chunk["text"])
    if not markdown:
        # The layout model calls a page's only line a running head now and then (seen on a
        # one-line page); an empty page is worse than a page number, so keep them after all.
        kwargs.update(header=True, footer=True)
        chunk = pymupdf4llm.to_markdown(doc, **kwargs)[0]
        markdown = tidy_markdown(chunk["text"])
    if not markdown:
        # pymupdf4llm 2.0 returns nothing for some rotated pages (/Rotate 90, 180, 270 in
        # the corpus's habibi-rotated.pdf); plain text blocks beat an empty page.
        return _plain_text_markdown(doc[0]), None
    return markdown, text_layer_layout(chunk, size)


def is_spread(page: pymupdf.Page) -> bool:
    """Whether the page is two pages side by side (a scanned or exported spread): landscape,
    several lines on each half, and no line of text within a strip down the middle. The
    layout model reads such a page across, question 23 of the left page after question 26
    of the right one (docling's ``table_mislabeled_as_picture``)."""
    width, height = page.rect.width, page.rect.height
    if width < SPREAD_ASPECT * height:
        return False
    middle, strip = width / 2, SPREAD_GUTTER * width
    left = right = 0
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            if not "".join(span["text"] for span in line["spans"]).strip():
                continue
            x0, _, x1, _ = line["bbox"]
            if x0 < middle + strip and x1 > middle - strip:
                return False
            left += x1 <= middle
            right += x0 >= middle
    return min(left, right) >= SPREAD_MIN_LINES


def _spread_markdown(
    doc: pymupdf.Document, kwargs: dict[str, Any]
) -> tuple[str, PageLayout | None] | None:
    """A spread read as its two pages, left then right: each half shown on a page of its own
    (its text stays text), read by pymupdf4llm, the blocks put back where they are."""
    import pymupdf4llm

    width, height = doc[0].rect.width, doc[0].rect.height
    half = width / 2
    pages = pymupdf.open()
    try:
        for x in (0.0, half):
            target = pages.new_page(width=half, height=height)
            target.show_pdf_page(target.rect, doc, 0, clip=pymupdf.Rect(x, 0, x + half, height))
        chunks = pymupdf4llm.to_markdown(pages, **{**kwargs, "pages": [0, 1]})
    finally:
        pages.close()
    parts = [tidy_markdown(chunk["text"]) for chunk in chunks]
    if not all(parts):
        return None
    blocks = []
    for x, chunk in zip((0.0, half), chunks, strict=True):
        for block in text_layer_layout(chunk, (half, height)).blocks:
            x0, y0, x1, y1 = block.bbox
            blocks.append(replace(block, bbox=(x0 + x, y0, x1 + x, y1)))
    return "\n".join(parts), PageLayout(width, height, blocks, "text-layer")


def _plain_text_markdown(page: pymupdf.Page) -> str:
    blocks = page.get_text("blocks", sort=True)
    paragraphs = [" ".join(block[4].split()) for block in blocks if block[6] == 0]
    return tidy_markdown("\n\n".join(p for p in paragraphs if p))


# --- OCR geometry ----------------------------------------------------------------------------


def _boxes(output: Any) -> list[TextBox]:
    if getattr(output, "boxes", None) is None or getattr(output, "txts", None) is None:
        return []
    boxes = []
    for points, text in zip(output.boxes, output.txts, strict=False):
        xs, ys = np.asarray(points)[:, 0], np.asarray(points)[:, 1]
        boxes.append(
            TextBox(float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()), str(text))
        )
    return boxes


@dataclass
class _Reading:
    """RapidOCR's output less the lines read under ``TEXT_SCORE`` (what RapidOCR itself
    returns at its default), and the share of the detected text those lines held."""

    boxes: Any
    txts: Any
    scores: Any
    word_results: Any
    unread: float


def _read_confidently(output: Any) -> _Reading:
    boxes, txts = getattr(output, "boxes", None), getattr(output, "txts", None)
    scores = getattr(output, "scores", None)
    words = getattr(output, "word_results", None) or ()
    if boxes is None or txts is None or scores is None:
        return _Reading(None, None, None, (), 0.0)
    keep = [i for i, score in enumerate(scores) if float(score) >= TEXT_SCORE]
    # RapidOCR's own filter leaves out of ``word_results`` the lines without words (those
    # read as nothing), so its entries are the lines with text, in order.
    with_text = [i for i, text in enumerate(txts) if str(text).strip()]
    by_line = dict(zip(with_text, words, strict=False)) if len(with_text) == len(words) else {}
    return _Reading(
        boxes=np.asarray([boxes[i] for i in keep]),
        txts=tuple(txts[i] for i in keep),
        scores=tuple(scores[i] for i in keep),
        word_results=tuple(by_line[i] for i in keep if by_line.get(i)),
        unread=_unread_share(output),
    )


def _unread_share(output: Any) -> float:
    """The share of the detected lines' area whose reading fell under ``TEXT_SCORE``."""
    boxes, scores = getattr(output, "boxes", None), getattr(output, "scores", None)
    if boxes is None or scores is None or not len(boxes):
        return 0.0
    areas = []
    for points in boxes:
        xs, ys = np.asarray(points)[:, 0], np.asarray(points)[:, 1]
        areas.append(float((xs.max() - xs.min()) * (ys.max() - ys.min())))
    total = sum(areas)
    unread = sum(a for a, s in zip(areas, scores, strict=False) if float(s) < TEXT_SCORE)
    return round(unread / total, 3) if total else 0.0


def _unread_notes(unread: float) -> list[str]:
    if unread <= MAX_UNREAD_SHARE:
        return []
    return [
        f"{unread:.0%} of the page's text could not be read: a script the bundled OCR models "
        "do not know (they read Latin, Chinese and Japanese; not Arabic, Hebrew or Korean), "
        "or print too damaged to read"
    ]


def _mean_confidence(output: Any) -> float | None:
    scores = getattr(output, "scores", None)
    texts = getattr(output, "txts", None)
    if scores is None or texts is None or not len(scores):
        return None
    weights = [max(len(str(text)), 1) for text in texts]
    total = sum(w * float(s) for w, s in zip(weights, scores, strict=False))
    return round(total / sum(weights[: len(scores)]), 4)


def _page_rotation(boxes: list[TextBox], pixels: np.ndarray, classifier: Any) -> int:
    """How far clockwise the page was turned before it was scanned: 0, 90, 180 or 270.

    Lines standing upright (taller than wide, RapidOCR's own 1.5 rule) mean a sideways page.
    RapidOCR turns such a crop 90° counter-clockwise before reading it, so its classifier
    saying "0" for that crop means the page was turned clockwise, "180" counter-clockwise.
    """
    vertical = sum(1 for b in boxes if b.height >= 1.5 * (b.x1 - b.x0))
    sideways = vertical > len(boxes) / 2
    sample = sorted(boxes, key=lambda b: max(b.height, b.x1 - b.x0), reverse=True)
    votes: defaultdict[str, float] = defaultdict(float)
    for box in sample[:ORIENTATION_SAMPLE]:
        crop = pixels[int(box.y0) : int(box.y1) + 1, int(box.x0) : int(box.x1) + 1]
        if crop.size == 0:
            continue
        if sideways:
            crop = np.ascontiguousarray(np.rot90(crop))
        label, score = _classify(classifier, crop)
        votes[label] += score
    if sideways:
        return 270 if votes["180"] > votes["0"] else 90
    # Upside-down pages are rare and a few doubtful crops (a logo, a stray mark) should not
    # turn an upright page over: it takes a clear majority.
    return 180 if votes["180"] > 2 * votes["0"] else 0


def _reads_better_turned(boxes: list[TextBox], pixels: np.ndarray, reader: Any) -> bool:
    """Whether the page's longest lines read with more confidence turned 180° than as they
    are. The orientation classifier alone is not enough: on an upright Google Docs page scanned
    with noise it voted "180" for six of eight lines (0.5-0.99), and the page came out upside
    down, last line first. Reading a line upside down gives low-confidence garbage."""
    sample = sorted(boxes, key=lambda b: b.x1 - b.x0, reverse=True)[:ORIENTATION_SAMPLE]
    as_is = turned = 0.0
    for box in sample:
        crop = pixels[int(box.y0) : int(box.y1) + 1, int(box.x0) : int(box.x1) + 1]
        if crop.size == 0:
            continue
        as_is += _read_score(reader, crop)
        turned += _read_score(reader, np.ascontiguousarray(np.rot90(crop, 2)))
    return turned > as_is


def _crop_line(pixels: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """A line's four-cornered box cut out of the page and set level, as RapidOCR cuts it
    for its recognizer."""
    from rapidocr.utils.process_img import get_rotate_crop_image

    return np.asarray(get_rotate_crop_image(pixels, quad))


def _read_score(reader: Any, crop: np.ndarray) -> float:
    result = reader(crop)
    scores = getattr(result, "scores", None)
    texts = getattr(result, "txts", None)
    if not scores or not texts:
        return 0.0
    # Confidence times length: a confident one-letter reading of a whole line is no reading.
    return float(scores[0]) * len(str(texts[0]).strip())


def _classify(classifier: Any, crop: np.ndarray) -> tuple[str, float]:
    result = classifier(crop)
    labels = getattr(result, "cls_res", None)
    if not labels:
        return "0", 0.0
    label, score = labels[0]
    return ("180" if "180" in str(label) else "0"), float(score)


def _unrotate(box: TextBox, rotation: int, width: int, height: int) -> TextBox:
    """A box in the scanned image's pixels → the same box on the upright page."""
    if rotation == 90:  # upright (x, y) was drawn at (height_up - y, x)
        return TextBox(box.y0, width - box.x1, box.y1, width - box.x0, box.text)
    if rotation == 270:
        return TextBox(height - box.y1, box.x0, height - box.y0, box.x1, box.text)
    if rotation == 180:
        return TextBox(width - box.x1, height - box.y1, width - box.x0, height - box.y0, box.text)
    return box


def _result(markdown: str, method: str, render_seconds: float, engine_seconds: float) -> PageResult:
    return PageResult(
        markdown=markdown,
        # The local engine reads no prompt and has no vision encoder: nothing to count as
        # input. Usage is billed on output tokens (model.tokens's approximation).
        input_tokens=0,
        output_tokens=count_tokens(markdown),
        render_seconds=round(render_seconds, 4),
        engine_seconds=round(engine_seconds, 4),
        method=method,
    )
