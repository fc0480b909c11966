"""Running heads and feet found across a document's pages.

The repairs of a single page (``model.markdown_repair.drop_running_lines``) know a running
line only by its shape (a page number, "Page 3 of 10", a download stamp); pymupdf4llm's layout
model drops the heads it recognises. A book's running head ("Sample paper for the amsmath
package", "4. MISCELLANEOUS MATHEMATICAL FEATURES" beside its page number) has no such shape:
what makes it a running line is that the pages around it carry it too. A line of the page's
first row or last two rows that is also a line in the same margin of one of the two pages
before or after it (odd and even pages often carry different heads; any page number matches
any other) is a running line. A scanned neighbour's margins are read by OCR
(``model.engines.scan_margins``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any

import pymupdf
from rapidfuzz import fuzz

from model.steps import no_findings, page_step, unchanged

# A page's heads and feet are its first row and last two rows of text (a row: lines whose tops are
# within ROW_TOLERANCE points), as long as they lie in this share of its height at the top or
# bottom. LaTeX sets its head at 11-13 % of the page and its first body line as high on a
# page without one, so a fixed band cannot tell them apart; recurring across pages can.
MARGIN_BAND = 0.2
TOP_ROWS, BOTTOM_ROWS = 1, 2
ROW_TOLERANCE = 3.0
# Pages looked at on either side.
NEIGHBOURS = 2
# A running line is short: a body line repeated at the top of every page of a text printed
# over and over (a filler text) is not one.
MAX_WORDS = 10
# OCR's misreadings between two pages' copies of a running line: a line of at least this many
# characters matches one at least this similar (rapidfuzz's ratio, 0-100), digits equal.
FUZZY_MIN_LETTERS = 10
FUZZY_RATIO = 90
_ROMAN = re.compile(r"\b[ivxlcdm]+\b")
_MARKUP = re.compile(r"[*_`#|~]|</?[a-z]+>")


def margin_lines(
    page: pymupdf.Page, textpage: pymupdf.TextPage | None = None
) -> list[tuple[str, str]]:
    """The page's text lines in its first and last rows, as ("top" | "bottom", text); from
    ``textpage`` where given (made with ``TEXTFLAGS_TEXT``)."""
    flags = pymupdf.TEXTFLAGS_TEXT  # no images: a page's picture is not decoded for this
    lines = [
        (line["bbox"][1], line["bbox"][3], "".join(span["text"] for span in line["spans"]))
        for block in page.get_text("dict", flags=flags, textpage=textpage)["blocks"]
        for line in block.get("lines", [])
    ]
    return edge_lines(lines, page.rect.height)


def edge_lines(lines: Iterable[tuple[float, float, str]], height: float) -> list[tuple[str, str]]:
    """Of lines ``(top, bottom, text)``, those of the first row and last two rows that
    lie in the margins, as ("top" | "bottom", text)."""
    return [(band, text) for band, text, _, _ in edge_rows(lines, height)]


def edge_rows(
    lines: Iterable[tuple[float, float, str]], height: float, *, overlap: bool = False
) -> list[tuple[str, str, float, float]]:
    """``edge_lines`` with each line's top and bottom as shares of the page's height.
    ``overlap``: lines read by OCR, whose boxes' tops vary with their letters (a page number's
    box is shorter than a head's capitals beside it), are one row where they overlap by half
    the lower one's height, as well as where their tops are within ``ROW_TOLERANCE``."""
    rows: list[list[tuple[float, float, str]]] = []
    for line in sorted((ln for ln in lines if ln[2].strip()), key=lambda ln: ln[0]):
        if rows and _same_row(rows[-1][0], line, overlap):
            rows[-1].append(line)
        else:
            rows.append([line])
    found = []
    for band, chosen in (("top", rows[:TOP_ROWS]), ("bottom", rows[-BOTTOM_ROWS:])):
        for row in chosen:
            for top, bottom, text in row:
                middle = (top + bottom) / 2
                inside = (
                    middle < MARGIN_BAND * height
                    if band == "top"
                    else middle > (1 - MARGIN_BAND) * height
                )
                if inside:
                    found.append((band, " ".join(text.split()), top / height, bottom / height))
    return found


def _same_row(
    first: tuple[float, float, str], line: tuple[float, float, str], overlap: bool
) -> bool:
    if line[0] - first[0] <= ROW_TOLERANCE:
        return True
    shared = min(first[1], line[1]) - max(first[0], line[0])
    return overlap and shared >= 0.5 * min(first[1] - first[0], line[1] - line[0])


def signature(text: str) -> str:
    """A line's text as the pages of a document vary it: a page number (arabic or roman,
    alone on its line) is any page number; any other line must recur as it is, case and
    spacing folded ("Chapter 2" atop one page and "Chapter 3" atop the next are no running
    head)."""
    text = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    if re.fullmatch(r"\d{1,4}", text) or _ROMAN.fullmatch(text):
        return "#"
    return text


# A page's margin line: (band, text), or ``edge_rows``' (band, text, top, bottom).
MarginLine = tuple[Any, ...]
# What ``running_lines`` asks a scanned neighbour for: per band ("top" | "bottom"), the share
# of the page's height (from, to) its unmatched lines span, or None where not known.
Wanted = dict[str, tuple[float, float] | None]
ScannedReader = Callable[[pymupdf.Page, Wanted], list[tuple[str, str]]]


def running_lines(
    doc: pymupdf.Document,
    index: int,
    own: Iterable[MarginLine],
    read_scanned: ScannedReader | None = None,
    *,
    read_by_ocr: bool = False,
) -> list[str]:
    """Which of the page's margin lines ``own`` (page ``index`` of ``doc``, 0-based), as
    ("top" | "bottom", text) or ``edge_rows``' (band, text, top, bottom), recur in the same
    margin of a neighbouring page. The nearest pages are looked at first, and no further page
    once every line has been matched. A neighbour whose margins show no text (a scan) is read
    by ``read_scanned`` where given, where the lines still unmatched lie
    (``model.engines.scan_margins``), two such pages at most (``scanned_to_read``).
    ``read_by_ocr``: the page's own lines were read by OCR, and a neighbour's may have been,
    so a line may differ from its twin by a misread letter (``same_line``)."""
    own = [line for line in own if len(line[1].split()) <= MAX_WORDS]
    if not own or doc.page_count < 2:
        return []
    unmatched = {(line[0], signature(line[1])): line for line in own}
    matched: set[tuple[str, str]] = set()
    worth_reading = scanned_to_read(index, doc.page_count)
    for other in nearest_first(index, doc.page_count):
        if not unmatched:
            break
        lines = margin_lines(doc[other])
        if not lines and read_scanned is not None and other in worth_reading:
            lines = read_scanned(doc[other], _wanted(unmatched.values()))
        seen = [(band, signature(text)) for band, text in lines]
        for band, line in list(unmatched):
            if any(b == band and same_line(line, s, fuzzy=read_by_ocr) for b, s in seen):
                del unmatched[(band, line)]
                matched.add((band, line))
    return [line[1] for line in own if (line[0], signature(line[1])) in matched]


def _wanted(lines: Iterable[MarginLine]) -> Wanted:
    wanted: Wanted = {}
    for line in lines:
        band, span = line[0], (line[2], line[3]) if len(line) >= 4 else None
        if band in wanted:
            known = wanted[band]
            span = (
                None
                if known is None or span is None
                else (min(known[0], span[0]), max(known[1], span[1]))
            )
        wanted[band] = span
    return wanted


def nearest_first(index: int, count: int) -> list[int]:
    """The pages within ``NEIGHBOURS`` of page ``index``, nearest first, the one before
    before the one after."""
    around = [index + step * side for step in range(1, NEIGHBOURS + 1) for side in (-1, 1)]
    return [n for n in around if 0 <= n < count]


def scanned_to_read(index: int, count: int) -> set[int]:
    """The two neighbours whose margins are worth OCR when they are scans: the page before
    (it shares a head that every page carries, and the run of page numbers) and the page two
    after (it shares the head of odd or even pages, and a section's own head where the pages
    before still carry the last section's); the page after and the page two before where
    those do not exist. Each read costs OCR; the other two rarely add a line."""
    beside = next((n for n in (index - 1, index + 1) if 0 <= n < count), None)
    two_away = next((n for n in (index + 2, index - 2) if 0 <= n < count), None)
    return {n for n in (beside, two_away) if n is not None}


def same_line(a: str, b: str, *, fuzzy: bool = False) -> bool:
    """Two margin lines' signatures match: equal, or where OCR read them (``fuzzy``) differing
    by a letter or two in a line of ten letters or more, their digits the same ("Chapter 2"
    and "Chapter 3" differ however the rest is read)."""
    if a == b:
        return True
    if not fuzzy or "#" in (a, b) or min(len(a), len(b)) < FUZZY_MIN_LETTERS:
        return False
    if re.sub(r"\D", "", a) != re.sub(r"\D", "", b):
        return False
    return fuzz.ratio(a, b) >= FUZZY_RATIO


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", _MARKUP.sub("", unicodedata.normalize("NFKC", text)))


@page_step("running lines", fallback=unchanged)
def drop_lines(markdown: str, running: list[str], *, edge: int = 3) -> str:
    """The Markdown less its lines made only of ``running`` lines' text, among its first and
    last ``edge`` filled lines (where a page's heads and feet are written)."""
    if not running:
        return markdown
    pieces = sorted({_squash(text) for text in running if _squash(text)}, key=len, reverse=True)
    lines = markdown.split("\n")
    filled = [n for n, line in enumerate(lines) if line.strip()]
    candidates = set(filled[:edge] + filled[-edge:])
    kept = []
    for n, line in enumerate(lines):
        # A line with no text of its own (a code fence, a table's rule) is never a running
        # line: dropping a fence would turn the rest of the page into code.
        rest = _squash(line) if n in candidates else ""
        if rest:
            for piece in pieces:
                rest = rest.replace(piece, "", 1)
            if not rest:
                continue
        kept.append(line)
    if not any(line.strip() for line in kept):
        return markdown  # pages that are all alike (a rotated copy per page): nothing runs
    return "\n".join(kept)


@page_step("running lines", fallback=no_findings)
def document_running_lines(
    data: bytes,
    page_number: int,
    own: list[MarginLine],
    read_scanned: ScannedReader | None = None,
    *,
    read_by_ocr: bool = False,
) -> list[str]:
    """``running_lines`` for page ``page_number`` (1-based) of the PDF ``data``; call under
    ``MUPDF_LOCK``."""
    from model.documents import open_pdf

    doc = open_pdf(data)
    try:
        return running_lines(doc, page_number - 1, own, read_scanned, read_by_ocr=read_by_ocr)
    finally:
        doc.close()


def ocr_margin_lines(lines: list[list[object]], page_height: float) -> list[MarginLine]:
    """An OCR'd page's margin lines, from its upright lines ``[x0, y0, x1, y1, score, text]``
    (pixels), as ``edge_rows`` gives them: (band, text, top, bottom)."""
    rows = [(float(str(ln[1])), float(str(ln[3])), str(ln[5])) for ln in lines]
    return edge_rows(rows, page_height, overlap=True)
