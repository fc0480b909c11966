"""The embedded CPU engine: the text layer where a PDF has one, OCR where it does not.

- Born-digital PDF pages go through pymupdf4llm with pymupdf-layout's layout model: headings,
  reading order across columns, tables (pipe tables, or HTML when asked) and footnotes.
- Scanned PDF pages and images are rendered and read by RapidOCR (its ONNX models ship in
  the wheel). Measured on this project's scans, calling RapidOCR directly beats pymupdf4llm's
  own OCR hook: the hook merged every line into one run of text, lost the reading order of a
  page scanned sideways and garbled its words, and mutated the document so that a second call
  came back in bold. Here the boxes are laid out by ``model.scan_layout`` instead.

The text-layer path is ``model.engines.pdf_text``; RapidOCR's output is made usable by
``model.engines.ocr_output`` and the page's orientation found by ``model.engines.ocr_orientation``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pymupdf
from PIL import Image

from model.documents import MUPDF_LOCK, PDF, DocumentError
from model.engines import reading_agreement as agreement
from model.engines.base import EngineError, EngineOptions, PageInput, PageResult
from model.engines.line_reread import reread_doubtful
from model.engines.local_config import LocalConfig
from model.engines.ocr_coverage import unread_stretches
from model.engines.ocr_layer import choose_reading, is_ocr_layer
from model.engines.ocr_orientation import crop_line, page_rotation, reads_better_turned, unrotate
from model.engines.ocr_output import (
    MAX_UNREAD_SHARE,
    TEXT_SCORE,
    mean_confidence,
    ocr_boxes,
    read_confidently,
    unread_notes,
)
from model.engines.pdf_text import (
    image_coverage,
    needs_ocr,
    pdf_page_image,
    text_layer_markdown,
    text_page,
)
from model.engines.scan_margins import MarginReader, scanned_margin_lines
from model.engines.tesseract_lines import ScriptReading, TesseractLines, read_unread_lines
from model.layout import PageLayout, page_size_points
from model.layout.ocr import line_scores, ocr_layout, word_boxes
from model.markdown_hygiene import readable_markdown
from model.pages import PageSelectionError
from model.rendering import open_page_image, open_pdf_page
from model.ruled_grid import ruled_page
from model.running_lines import (
    Wanted,
    document_running_lines,
    drop_lines,
    margin_lines,
    ocr_margin_lines,
)
from model.scan_layout import boxes_to_markdown
from model.scan_lines import skew_of
from model.tokens import count_tokens

logger = logging.getLogger(__name__)

# Measured on 2 cores (A4 at 1600 px long side): detection at the default (shortest side
# scaled up to 736) took 0.6-1.0 s a page; capping the longest side at 960 took 0.15-0.2 s
# with the same word recall on dense two-column pages. Recognition dominates what is left.
RAPIDOCR_PARAMS: dict[str, Any] = {
    "Global.log_level": "warning",
    "Global.use_cls": True,
    "Det.limit_side_len": 960,
    "Det.limit_type": "max",
    # Recognition keeps RapidOCR's batches of six lines. One line at a time read ten of the
    # set's scans 1.43 times as fast at the same words read (bench/ocr_settings.py, issue 28),
    # but a line's reading and confidence change with the batch it is padded in: the real
    # scans' similarity fell 66.1 -> 63.4, and an Arabic scan's orientation check, which
    # compares confidences both ways up, turned the page over (tests/test_tesseract_lines.py).
}


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
    # What Tesseract read of the lines the bundled models could not (``tesseract_lines``).
    script: ScriptReading = ScriptReading()
    # Some lines read a second time, and how alike the two readings are
    # (``model.engines.reading_agreement``); None where no line could be compared.
    agreement: dict[str, Any] | None = None
    # Measurements for the review signals that failed on this page.
    skipped: tuple[str, ...] = ()


class LocalEngine:
    name: ClassVar[str] = "local"
    # Bump when the same page would come out differently (it is part of the cache key).
    version: ClassVar[str] = "local-15"
    max_pages_in_flight: ClassVar[int] = 1

    def __init__(self, config: LocalConfig | None = None) -> None:
        self._config = config or LocalConfig.from_env()
        self._ocr: Any = None
        self._classifier: Any = None
        self._reader: Any = None
        self._det: Any = None
        self._tesseract = TesseractLines()
        self._ocr_lock = threading.Lock()
        self._side: ThreadPoolExecutor | None = None  # reads the agreement signal's lines
        self._side_pid = 0  # the process the executor's thread runs in

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
        layer_image: Image.Image | None = None  # the picture under someone else's OCR layer
        markdown, layout = "", None
        notes: list[str] = []
        second: Future[Any] | None = None  # the agreement signal's reading, under way
        with MUPDF_LOCK:  # pymupdf4llm too runs on MuPDF's global state
            doc = open_pdf_page(page.data, page.page_number)
            try:
                opened = time.perf_counter()
                first = doc[0]  # the text page below holds this object weakly
                size = (first.rect.width, first.rect.height)
                text = text_page(first)  # for the reads here; the repairs make their own
                if needs_ocr(first, text):
                    image = pdf_page_image(first)
                else:
                    # The ``agreement`` review signal: some of the layer's lines drawn from the
                    # page, read by the recognizer on a thread of its own while pymupdf4llm
                    # lays the page out (the recognizer needs only the pixels, and a core
                    # pymupdf4llm's Python leaves idle).
                    drawing = time.perf_counter()
                    drawn = agreement.safely(agreement.text_layer_lines, first, text)
                    second = self._reading_again(drawn, time.perf_counter() - drawing)
                    markdown, layout, notes = text_layer_markdown(doc, options)
                    if options.headers == "drop":
                        own = margin_lines(first, text)
                        running = document_running_lines(page.data, page.page_number, own)
                        markdown = drop_lines(markdown, running)
                    if is_ocr_layer(first, image_coverage(first)):
                        layer_image = pdf_page_image(first)
            finally:
                doc.close()
        done = time.perf_counter()
        if image is not None:
            # OCR runs outside the PyMuPDF lock: it needs only the pixels.
            return self._pdf_ocr_result(page, image, done - started, size, options)
        result = _result(markdown, "text-layer", opened - started, done - opened)
        result.layout = layout
        result.extra["extraction_notes"] = notes
        assert second is not None  # a text-layer page's lines went to be read
        found, skipped = second.result()
        result.extra["agreement"] = found
        if skipped:
            result.extra["skipped_steps"] = list(skipped)
        if layer_image is None:
            return result
        # Someone else's OCR under the text: the page is read by our own OCR too, and the
        # reading with more words of its language is kept (``ocr_layer``).
        read = self._pdf_ocr_result(page, layer_image, 0.0, size, options)
        kept, report = choose_reading(result.markdown, read.markdown)
        chosen = read if kept == "own-ocr" else result
        chosen.extra["ocr_layer"] = report
        chosen.render_seconds = round(result.render_seconds + read.render_seconds, 4)
        chosen.engine_seconds = round(result.engine_seconds + read.engine_seconds, 4)
        return chosen

    def _pdf_ocr_result(
        self,
        page: PageInput,
        image: Image.Image,
        render_seconds: float,
        size: tuple[float, float],
        options: EngineOptions,
    ) -> PageResult:
        """A PDF page read by OCR, less the running lines its neighbours' text layers show."""
        result = self._ocr_result(
            image, render_seconds=render_seconds, page_size=size, options=options
        )
        if options.headers == "drop" and result.extra.get("ocr_lines"):
            sideways = result.extra["rotation"] in (90, 270)
            height = float(image.width if sideways else image.height)
            own = ocr_margin_lines(result.extra["ocr_lines"], height)
            # A scanned neighbour's margins are read by OCR; a page found turned is read
            # without that (its neighbours' bands would be read the wrong way up).
            read = self._margin_reader() if result.extra["rotation"] == 0 else None
            with MUPDF_LOCK:
                running = document_running_lines(
                    page.data, page.page_number, own, read, read_by_ocr=True
                )
            if running:
                result.markdown = drop_lines(result.markdown, running)
                result.output_tokens = count_tokens(result.markdown)
        return result

    # --- images and OCR ------------------------------------------------------------------------

    def _reading_again(self, drawn: list[Any] | None, drawing_seconds: float) -> Future[Any]:
        """The drawn lines read by the recognizer on the engine's side thread: a future of
        ``agreement.second_reading``'s answer."""
        if self._side is None or self._side_pid != os.getpid():
            # A forked child (a prefork pool's) has the executor but not its thread.
            self._side = ThreadPoolExecutor(max_workers=1, thread_name_prefix="folio-agreement")
            self._side_pid = os.getpid()

        def read() -> tuple[dict[str, Any] | None, tuple[str, ...]]:
            with self._ocr_lock:
                recognizer = self._recognizer()
                return agreement.second_reading(drawn, recognizer, drawing_seconds=drawing_seconds)

        return self._side.submit(read)

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
        result.extra["extraction_notes"] = unread_notes(reading.unread, reading.script.missing)
        if reading.script.lines:
            result.extra["tesseract"] = {
                "language": reading.script.language,
                "lines": reading.script.lines,
            }
        if reading.unread > MAX_UNREAD_SHARE or reading.script.missing:
            # Every API names such pages: text is missing that no installed model reads.
            result.extra["unread_script"] = {
                "share": reading.unread,
                "language": reading.script.missing,
            }
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
            output = read_confidently(raw)
            boxes = ocr_boxes(output)
            if not boxes:
                return OcrReading("", 0, None, None, [], output.unread, None)
            rotation = page_rotation(boxes, pixels, classifier)
            if rotation == 180 and not reads_better_turned(boxes, pixels, self._recognizer()):
                rotation = 0
            # RapidOCR's classifier turns single lines over on its own; a doubtful line is
            # read again the way the page reads (``line_reread``).
            again = reread_doubtful(raw, pixels, rotation, self._recognizer(), crop_line)
            if again is not raw:
                output = read_confidently(again)
                boxes = ocr_boxes(output)
                raw = again
            # Lines in a script the bundled models do not read, read by Tesseract where its
            # language data is installed.
            again, script = read_unread_lines(
                raw,
                pixels,
                rotation,
                crop_line,
                self._tesseract,
                unread=output.unread,
                language=options.ocr_language if options else None,
            )
            if again is not raw:
                output = read_confidently(again)
                boxes = ocr_boxes(output)
                raw = again
            if script.rotation is not None:
                rotation = script.rotation
            unread = output.unread
            # A second reading of some lines, from another rendering of their ink.
            second = agreement.safely(
                agreement.second_pass_lines, output.word_results, pixels, rotation
            )
            found, skipped = agreement.second_reading(second, self._recognizer())
        height, width = pixels.shape[:2]
        upright = [unrotate(box, rotation, width, height) for box in boxes]
        upright_width = height if rotation in (90, 270) else width
        upright_height = width if rotation in (90, 270) else height
        # A sideways page's lines are measured against the other axis; those are rare and
        # their skew is left alone.
        skew = skew_of(output.boxes) if rotation in (0, 180) else 0.0
        options = options or EngineOptions()
        markdown = readable_markdown(
            boxes_to_markdown(
                upright,
                upright_width,
                page_height=upright_height,
                drop_running=options.headers == "drop",
                table_format=options.table_format,
                skew_degrees=skew,
                ruling=ruled_page(pixels, rotation, skew),
            )
        )
        layout = None
        if page_size is not None:
            words = [unrotate(word, rotation, width, height) for word in word_boxes(output)]
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
            mean_confidence(output),
            layout,
            lines,
            unread,
            stretches,
            script=script,
            agreement=found,
            skipped=skipped,
        )

    def _engines(self) -> tuple[Any, Any]:
        # Built on first use, under the lock: a web process that only lists engines never
        # pays for the models, and two racing threads never build two copies.
        if self._ocr is None:
            from rapidocr import RapidOCR

            params = self._params()
            self._ocr = RapidOCR(params=params)
            # A second, classifier-only instance: RapidOCR's result drops the per-line
            # orientation, and toggling use_det on the main instance would be shared state.
            self._classifier = RapidOCR(
                params={**params, "Global.use_det": False, "Global.use_rec": False}
            )
        return self._ocr, self._classifier

    def _margin_reader(self) -> MarginReader:
        """Reads a scanned page's margins with this engine's detector and recognizer
        (``scan_margins``), under the OCR lock."""

        def detect(pixels: np.ndarray) -> Any:
            with self._ocr_lock:
                return self._detector()(pixels)

        def recognize(crop: np.ndarray) -> tuple[str, float]:
            with self._ocr_lock:
                result = self._recognizer()(crop)
            texts, scores = getattr(result, "txts", None), getattr(result, "scores", None)
            if not texts or not scores:
                return "", 0.0
            return str(texts[0]), float(scores[0])

        def read(page: pymupdf.Page, wanted: Wanted) -> list[tuple[str, str]]:
            return scanned_margin_lines(page, wanted, detect, recognize)

        return read

    def _detector(self) -> Any:
        # Detection alone, built the first time a scanned neighbour's margins are read: the
        # main instance's steps are its shared settings, not to be toggled per call.
        if self._det is None:
            from rapidocr import RapidOCR

            self._det = RapidOCR(
                params={**self._params(), "Global.use_rec": False, "Global.use_cls": False}
            )
        return self._det

    def _recognizer(self) -> Any:
        # Recognition alone, built the first time a page looks upside down (rare): it checks
        # the classifier's verdict by reading the lines both ways. Called under the OCR lock.
        if self._reader is None:
            from rapidocr import RapidOCR

            self._reader = RapidOCR(
                params={**self._params(), "Global.use_det": False, "Global.use_cls": False}
            )
        return self._reader

    def _params(self) -> dict[str, Any]:
        threads = self._config.ocr_threads
        return {
            **RAPIDOCR_PARAMS,
            "EngineConfig.onnxruntime.intra_op_num_threads": threads,
            "EngineConfig.onnxruntime.inter_op_num_threads": 1,
        }


def _one_line_pdf(text: str) -> bytes:
    with MUPDF_LOCK:
        doc = pymupdf.open()
        doc.new_page(width=595, height=842).insert_text((72, 100), text, fontsize=24)
        try:
            return bytes(doc.tobytes())
        finally:
            doc.close()


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
