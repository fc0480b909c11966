"""Deterministic quality signals for one transcribed page, and the ``needs_review`` verdict.

In the spirit of jina-ocr-v1's verifiable rewards: each signal is a check a program can make
without knowing the truth (tables that parse, LaTeX that balances, no runaway repetition, no
empty output for a page with ink, the OCR's own confidence, agreement with the PDF's text
layer, words that are words, formulas, column order). Each failing signal has a severity;
``model.quality.review`` turns them into the page's review score and ``needs_review``.

Everything here is cheap (a few milliseconds a page): the page is opened once, its ink is
measured on a 36 dpi grey rendering, and its text layer read once. The one exception is the
table finder behind ``merged_cells`` (tens of milliseconds), run only on a text-layer page
whose output has a table with an empty cell.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import numpy as np
import pymupdf

from model.documents import MUPDF_LOCK, PDF
from model.engines.base import PageInput, PageResult
from model.plaintext import markdown_to_text
from model.quality import content_signals as content
from model.quality.checks import math_spans
from model.quality.merged_cells import Grid, lost_merges, page_grids, tables_with_gaps
from model.quality.page_lines import Line, pdf_lines
from model.quality.review import DEFAULT_THRESHOLD, Signal, severity_below, verdict
from model.quality.tables import html_tables, markdown_tables
from model.rendering import open_page_image
from model.repetition import periodic_tail

logger = logging.getLogger(__name__)

# Output with fewer letters and digits than this is "empty" ...
NEAR_EMPTY_CHARS = 10
# ... which matters on a page where at least this share of a 36 dpi rendering is ink.
INK_SHARE = 0.002
INK_LEVEL = 160  # grey level below which a pixel is ink
INK_DPI = 36
# A tail of at least this many words that repeats one unit at least MIN_COPIES times.
REPEAT_MAX_PERIOD = 32
REPEAT_MIN_WORDS = 40
REPEAT_MIN_COPIES = 4
# Mean OCR line confidence (0-1) under which a person should look. RapidOCR scores clean
# scans at 0.95-0.99 and the corpus's heavy-noise and heavy-blur scans under 0.85.
MIN_OCR_CONFIDENCE = 0.85
# Share of the text layer's words the output must contain, where the PDF has a text layer.
MIN_TEXT_LAYER_RECALL = 0.6
MIN_TEXT_LAYER_WORDS = 20


__all__ = ["Signal", "PageFacts", "page_facts", "page_signals", "quality_report", "verdict"]


# --- tables ------------------------------------------------------------------------------------

_TABLE_TAGS = ("table", "thead", "tbody", "tfoot", "tr", "td", "th")


class _TagBalance(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[Any]) -> None:
        if tag in _TABLE_TAGS:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag not in _TABLE_TAGS:
            return
        if tag not in self.stack:
            self.errors.append(f"</{tag}> without <{tag}>")
            return
        while self.stack and self.stack[-1] != tag:
            # An unclosed <td> before </tr> is valid HTML; an unclosed <table> is not.
            if self.stack[-1] in ("table", "tr"):
                self.errors.append(f"<{self.stack[-1]}> not closed before </{tag}>")
            self.stack.pop()
        self.stack.pop()


def table_signal(markdown: str) -> Signal:
    """HTML tables well-formed and rectangular; pipe tables with one width for every row."""
    problems: list[str] = []
    if "<table" in markdown.lower() or "</table" in markdown.lower():
        balance = _TagBalance()
        balance.feed(markdown)
        balance.close()
        problems += balance.errors
        problems += [f"<{tag}> not closed" for tag in balance.stack if tag in ("table", "tr")]
        tables = re.findall(r"<table.*?</table>", markdown, flags=re.IGNORECASE | re.DOTALL)
        for index, table in enumerate(tables, start=1):
            if _ragged(table):
                problems.append(f"HTML table {index} is not rectangular")
    for index, table in enumerate(markdown_tables(markdown), start=1):
        if len({len(row) for row in table.rows}) > 1:
            problems.append(f"pipe table {index} has rows of different widths")
    count = len(html_tables(markdown)) + len(markdown_tables(markdown))
    return Signal("table", not problems, "; ".join(problems[:3]), float(count), severity=0.6)


def merged_cells_signal(markdown: str, grids: list[Grid] | None) -> Signal | None:
    """Empty cells of the output's tables where the page's ruled grid has one merged cell
    holding text: the span was lost, and the text sits in one column of several
    (``model.quality.merged_cells``). None where the page's grid was not looked at."""
    if grids is None:
        return None
    lost = lost_merges(tables_with_gaps(markdown), grids)
    detail = f"{lost} empty table cell(s) where the page merges cells: the span was lost"
    return Signal(
        "merged_cells", not lost, detail if lost else "", float(lost), severity=0.6 if lost else 0.0
    )


def _ragged(table: str) -> bool:
    """Whether an HTML table's rows cover different numbers of columns, counting the columns
    that colspans widen and rowspans reach down into."""
    widths = set()
    occupied: Counter[int] = Counter()  # columns taken in later rows by rowspans
    rows = re.findall(r"<tr\b.*?(?=<tr\b|</table>)", table, flags=re.IGNORECASE | re.DOTALL)
    for r, row in enumerate(rows):
        width = occupied.pop(r, 0)
        for attrs in re.findall(r"<t[dh]\b([^>]*)>", row, flags=re.IGNORECASE):
            colspan = _attr(attrs, "colspan")
            width += colspan
            for later in range(1, _attr(attrs, "rowspan")):
                occupied[r + later] += colspan
        widths.add(width)
    return len(widths) > 1


def _attr(attrs: str, name: str) -> int:
    match = re.search(rf"{name}\s*=\s*[\"']?(\d+)", attrs)
    return int(match.group(1)) if match else 1


# --- LaTeX -------------------------------------------------------------------------------------

_BEGIN_END = re.compile(r"\\(begin|end)\{([^}]*)\}")


def latex_problems(latex: str) -> list[str]:
    problems = []
    depth = 0
    escaped = False
    for ch in latex:
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        problems.append("unbalanced braces")
    environments: list[str] = []
    for kind, name in _BEGIN_END.findall(latex):
        if kind == "begin":
            environments.append(name)
        elif not environments or environments.pop() != name:
            problems.append(f"\\end{{{name}}} does not close its \\begin")
            break
    if environments:
        problems.append(f"\\begin{{{environments[-1]}}} not closed")
    lefts = len(re.findall(r"\\left(?![a-zA-Z])", latex))
    rights = len(re.findall(r"\\right(?![a-zA-Z])", latex))
    if lefts != rights:
        problems.append("\\left and \\right do not pair")
    return problems


def latex_signal(markdown: str) -> Signal:
    """Every formula balances; and no display delimiter is left open."""
    problems = []
    spans = math_spans(markdown)
    for span in spans:
        for problem in latex_problems(span):
            problems.append(f"{problem} in {span[:40]!r}")
    # A $$ or \[ left open swallows the rest of the page when rendered.
    if markdown.count("$$") % 2:
        problems.append("a $$ display is not closed")
    if markdown.count("\\[") != markdown.count("\\]"):
        problems.append("a \\[ display is not closed")
    return Signal("latex", not problems, "; ".join(problems[:3]), float(len(spans)), severity=0.6)


# --- repetition, emptiness, confidence, text-layer agreement -----------------------------------


def repetition_signal(markdown: str) -> Signal:
    """A runaway tail: many copies of one short unit of words (``model.repetition``)."""
    words = markdown.split()
    tail = periodic_tail(words, max_period=REPEAT_MAX_PERIOD)
    if tail is None:
        return Signal("repetition", True, "", 1.0)
    runaway = len(words) - tail.start >= REPEAT_MIN_WORDS and tail.copies >= REPEAT_MIN_COPIES
    detail = f"ends in {tail.copies:.0f} copies of a {tail.period}-word unit" if runaway else ""
    return Signal("repetition", not runaway, detail, round(tail.copies, 1), severity=1.0)


def empty_signal(markdown: str, ink: float | None) -> Signal:
    chars = sum(1 for ch in markdown_to_text(markdown) if ch.isalnum())
    if ink is None or chars >= NEAR_EMPTY_CHARS or ink < INK_SHARE:
        return Signal("empty", True, "", float(chars))
    detail = f"{chars} characters for a page with {ink:.1%} ink"
    return Signal("empty", False, detail, float(chars), severity=1.0)


def confidence_signal(confidence: float | None) -> Signal | None:
    if confidence is None:
        return None
    ok = confidence >= MIN_OCR_CONFIDENCE
    detail = "" if ok else f"mean OCR confidence {confidence:.2f} < {MIN_OCR_CONFIDENCE}"
    severity = severity_below(confidence, MIN_OCR_CONFIDENCE)
    return Signal("ocr_confidence", ok, detail, round(confidence, 3), severity=severity)


_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)


def text_layer_signal(markdown: str, text_layer: str | None) -> Signal | None:
    """The share of the text layer's words that the output holds (a multiset recall)."""
    if not text_layer:
        return None
    truth = Counter(w.lower() for w in _WORD.findall(text_layer.replace("\u00ad", "")))
    if sum(truth.values()) < MIN_TEXT_LAYER_WORDS:
        return None
    got = Counter(w.lower() for w in _WORD.findall(markdown_to_text(markdown)))
    recall = sum((truth & got).values()) / sum(truth.values())
    ok = recall >= MIN_TEXT_LAYER_RECALL
    detail = "" if ok else f"holds {recall:.0%} of the text layer's words"
    severity = severity_below(recall, MIN_TEXT_LAYER_RECALL)
    return Signal("text_layer", ok, detail, round(recall, 3), severity=severity)


def extraction_signal(notes: list[str] | None) -> Signal | None:
    """What the engine itself says it could not recover (glyphs without a Unicode mapping, a
    formula it is unsure of, right-to-left text in an order it cannot trust)."""
    if notes is None:
        return None
    return Signal("extraction", not notes, "; ".join(notes), float(len(notes)))


# --- the page ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageFacts:
    """What the page itself says, independent of the transcription."""

    ink: float | None  # share of dark pixels; None when the page could not be measured
    text_layer: str | None  # None for images and for PDFs without a usable text layer
    # The text layer's lines with their boxes (PDF points, origin top-left), and the width
    # they are measured against; empty for images and pages without a usable text layer.
    lines: list[Line] = field(default_factory=list)
    width: float | None = None
    # The page's ruled tables, where the output has a table with empty cells to judge
    # against them (``model.quality.merged_cells``); None where they were not looked for.
    grids: list[Grid] | None = None


def page_facts(page: PageInput, *, find_grids: bool = False) -> PageFacts:
    """The page's ink, text layer and lines; with ``find_grids``, its ruled tables too (a
    text-layer page only: the table finder costs tens of milliseconds)."""
    try:
        if page.mime_type == PDF:
            return _pdf_facts(page, find_grids=find_grids)
        image = open_page_image(page.data, page.mime_type, page.page_number, long_side=400)
        return PageFacts(ink=_ink(image.convert("L").tobytes()), text_layer=None)
    except Exception:  # signals must never fail a page that was transcribed
        logger.warning("page %s: cannot measure the page for quality signals", page.page_number)
        return PageFacts(ink=None, text_layer=None)


def _pdf_facts(page: PageInput, *, find_grids: bool) -> PageFacts:
    with MUPDF_LOCK:
        doc = pymupdf.open(stream=page.data, filetype="pdf")
        try:
            pdf_page = doc[page.page_number - 1]
            text = pdf_page.get_text("text")
            layout = pdf_page.get_text("dict", flags=pymupdf.TEXTFLAGS_TEXT)
            width = float(pdf_page.rect.width)
            pix = pdf_page.get_pixmap(dpi=INK_DPI, colorspace=pymupdf.csGRAY, alpha=False)
            ink = _ink(pix.samples)
            usable = _usable_text_layer(text)
            grids = _page_grids(pdf_page, page.page_number) if find_grids and usable else None
        finally:
            doc.close()
    if not usable:
        return PageFacts(ink=ink, text_layer=None)
    return PageFacts(ink=ink, text_layer=text, lines=pdf_lines(layout), width=width, grids=grids)


def _page_grids(pdf_page: pymupdf.Page, number: int) -> list[Grid] | None:
    # The table finder is PyMuPDF's heuristics on arbitrary drawings: if it fails, the page
    # keeps its other signals and this one is not judged.
    try:
        return page_grids(pdf_page)
    except Exception:
        logger.warning("page %s: the table finder failed; merged cells not judged", number)
        return None


def _usable_text_layer(text: str) -> bool:
    readable = sum(1 for ch in text if ch.isalnum())
    return readable >= 20 and text.count("\ufffd") <= readable * 0.1


def _ink(grey: bytes) -> float:
    pixels = np.frombuffer(grey, dtype=np.uint8)
    return float((pixels < INK_LEVEL).mean()) if pixels.size else 0.0


def page_signals(
    markdown: str,
    facts: PageFacts,
    *,
    ocr_confidence: float | None,
    ocr_lines: list[Line] | None = None,
    ocr_width: float | None = None,
    extraction_notes: list[str] | None = None,
    unread_stretches: list[list[Any]] | None = None,
) -> list[Signal]:
    """Every signal that applies to the page. Lines and width come from the text layer, or,
    for pages the engine read by OCR, from the OCR's own lines."""
    lines, width = (ocr_lines, ocr_width) if ocr_lines else (facts.lines, facts.width)
    signals = [
        table_signal(markdown),
        merged_cells_signal(markdown, facts.grids),
        latex_signal(markdown),
        repetition_signal(markdown),
        empty_signal(markdown, facts.ink),
        confidence_signal(ocr_confidence),
        text_layer_signal(markdown, facts.text_layer),
        content.unreadable_signal(markdown),
        content.fragment_signal(markdown),
        content.markup_signal(markdown),
        content.contents_table_signal(markdown),
        content.right_to_left_signal(markdown),
        content.plausibility_signal(markdown),
        content.formula_signal(markdown, facts.lines),
        content.formula_text_signal(markdown, facts.lines),
        content.apostrophe_signal(markdown),
        content.mirrored_signal(ocr_lines or [], ocr_width),
        content.order_signal(markdown, lines, width),
        content.line_confidence_signal(ocr_lines or []),
        content.coverage_signal(unread_stretches),
        extraction_signal(extraction_notes),
    ]
    return [s for s in signals if s is not None]


def quality_report(
    page: PageInput, result: PageResult, threshold: float = DEFAULT_THRESHOLD
) -> dict[str, Any]:
    """The page's signals, review score and verdict, as stored in
    ``PageResult.extra["quality"]``."""
    confidence = result.extra.get("ocr_confidence")
    signals = page_signals(
        result.markdown,
        # The ruled grid is looked for only where an output table has cells to judge by it.
        page_facts(page, find_grids=bool(tables_with_gaps(result.markdown))),
        ocr_confidence=float(confidence) if confidence is not None else None,
        ocr_lines=ocr_lines(result.extra.get("ocr_lines")),
        ocr_width=result.extra.get("ocr_width"),
        extraction_notes=result.extra.get("extraction_notes"),
        unread_stretches=result.extra.get("unread_stretches"),
    )
    return verdict(signals, threshold)


def ocr_lines(raw: list[Any] | None) -> list[Line]:
    """The engine's OCR lines, ``[x0, y0, x1, y1, confidence, text]`` in image pixels."""
    return [Line(x0, y0, x1, y1, text, confidence=conf) for x0, y0, x1, y1, conf, text in raw or []]
