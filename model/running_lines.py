"""Running heads and feet found across a document's pages.

The repairs of a single page (``model.markdown_repair.drop_running_lines``) know a running
line only by its shape (a page number, "Page 3 of 10", a download stamp); pymupdf4llm's layout
model drops the heads it recognises. A book's running head ("Sample paper for the amsmath
package", "4. MISCELLANEOUS MATHEMATICAL FEATURES" beside its page number) has no such shape:
what makes it a running line is that the pages around it carry it too. A line of the page's
first row or last two rows that is also a line in the same margin of one of the two pages
before or after it (odd and even pages often carry different heads; any page number matches
any other) is a running line.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import pymupdf

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
_ROMAN = re.compile(r"\b[ivxlcdm]+\b")
_MARKUP = re.compile(r"[*_`#|~]|</?[a-z]+>")


def margin_lines(page: pymupdf.Page) -> list[tuple[str, str]]:
    """The page's text lines in its first and last rows, as ("top" | "bottom", text)."""
    flags = pymupdf.TEXTFLAGS_TEXT  # no images: a page's picture is not decoded for this
    lines = [
        (line["bbox"][1], line["bbox"][3], "".join(span["text"] for span in line["spans"]))
        for block in page.get_text("dict", flags=flags)["blocks"]
        for line in block.get("lines", [])
    ]
    return edge_lines(lines, page.rect.height)


def edge_lines(lines: Iterable[tuple[float, float, str]], height: float) -> list[tuple[str, str]]:
    """Of lines ``(top, bottom, text)``, those of the first row and last two rows that
    lie in the margins, as ("top" | "bottom", text)."""
    rows: list[list[tuple[float, float, str]]] = []
    for line in sorted((ln for ln in lines if ln[2].strip()), key=lambda ln: ln[0]):
        if rows and line[0] - rows[-1][0][0] <= ROW_TOLERANCE:
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
                    found.append((band, " ".join(text.split())))
    return found


def signature(text: str) -> str:
    """A line's text as the pages of a document vary it: a page number (arabic or roman,
    alone on its line) is any page number; any other line must recur as it is, case and
    spacing folded ("Chapter 2" atop one page and "Chapter 3" atop the next are no running
    head)."""
    text = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    if re.fullmatch(r"\d{1,4}", text) or _ROMAN.fullmatch(text):
        return "#"
    return text


def running_lines(doc: pymupdf.Document, index: int, own: Iterable[tuple[str, str]]) -> list[str]:
    """Which of the page's margin lines ``own`` (page ``index`` of ``doc``, 0-based) recur in
    the same margin of a neighbouring page."""
    own = [(band, text) for band, text in own if len(text.split()) <= MAX_WORDS]
    if not own or doc.page_count < 2:
        return []
    seen: set[tuple[str, str]] = set()
    for other in range(max(0, index - NEIGHBOURS), min(doc.page_count, index + NEIGHBOURS + 1)):
        if other != index:
            seen.update((band, signature(text)) for band, text in margin_lines(doc[other]))
    return [text for band, text in own if (band, signature(text)) in seen]


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
        if n in candidates:
            rest = _squash(line)
            for piece in pieces:
                rest = rest.replace(piece, "", 1)
            if not rest:
                continue
        kept.append(line)
    if not any(line.strip() for line in kept):
        return markdown  # pages that are all alike (a rotated copy per page): nothing runs
    return "\n".join(kept)


@page_step("running lines", fallback=no_findings)
def document_running_lines(data: bytes, page_number: int, own: list[tuple[str, str]]) -> list[str]:
    """``running_lines`` for page ``page_number`` (1-based) of the PDF ``data``; call under
    ``MUPDF_LOCK``."""
    from model.documents import open_pdf

    doc = open_pdf(data)
    try:
        return running_lines(doc, page_number - 1, own)
    finally:
        doc.close()


def ocr_margin_lines(lines: list[list[object]], page_height: float) -> list[tuple[str, str]]:
    """An OCR'd page's margin lines, from its upright lines ``[x0, y0, x1, y1, score, text]``
    (pixels)."""
    rows = [(float(str(ln[1])), float(str(ln[3])), str(ln[5])) for ln in lines]
    return edge_lines(rows, page_height)
