"""What the page's geometry says the output should look like: its lines with their boxes (from
the PDF's text layer, or the OCR's own lines), the lines shaped like formulas, and the order
a reader takes through its columns. Signals compare these with the output; none of them needs
the true transcription.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from model.quality.checks import normalize_text

# Fonts that set mathematics: TeX's math italic, symbols and extensions, the AMS fonts, and
# the OpenType math fonts by name.
_MATH_FONT = re.compile(r"CMMI|CMSY|CMEX|MSAM|MSBM|EUFM|RSFS|Math|Symbol|STIX|Euclid|esint", re.I)
# Characters that are mathematics wherever they appear (operators, arrows, math letters).
MATH_CHARS = re.compile("[\u2200-\u22ff\u2a00-\u2aff\u27c0-\u27ef\U0001d400-\U0001d7ff√∑∏∫∞±×÷]")
_RELATION = re.compile(r"[=<>≤≥≈≠∈→]")
# A span this much smaller than the line's main text and off its baseline is a sub/superscript.
SCRIPT_SIZE_RATIO = 0.85
# A line is formula-shaped when this share of its visible characters is set in math.
FORMULA_SHARE = 0.3


@dataclass(frozen=True)
class Line:
    """One line of the page: its box in page units (origin top-left) and its text."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    formula: bool = False
    confidence: float | None = None  # the OCR's, for OCR lines


def pdf_lines(page_dict: dict[str, Any]) -> list[Line]:
    """The lines of a PyMuPDF ``get_text("dict")`` page, each marked formula-shaped or not."""
    lines = []
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            spans = [s for s in line.get("spans", []) if s.get("text", "").strip()]
            if not spans:
                continue
            text = "".join(s["text"] for s in line["spans"])
            x0, y0, x1, y1 = line["bbox"]
            lines.append(Line(x0, y0, x1, y1, text, formula=_formula_shaped(spans)))
    return lines


def math_runs(page_dict: dict[str, Any]) -> list[str]:
    """The runs of a ``get_text("dict")`` page's lines set in math fonts or math characters
    (next spans of a line joined), with at least three characters that are not bullets or
    spaces: what a transcription should write as LaTeX."""
    runs = []
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            current: list[str] = []
            for span in [*line.get("spans", []), None]:
                if span is not None and _mathematical(span):
                    current.append(span["text"])
                    continue
                if span is not None and not span.get("text", "").strip() and current:
                    current.append(span["text"])  # a space between two math spans
                    continue
                run = "".join(current).strip()
                if len(run.translate(_NOT_MATH)) >= 3:
                    runs.append(run)
                current = []
    return runs


def _mathematical(span: dict[str, Any]) -> bool:
    """A span set in a math font, or mostly of math characters (an operator inside a span of
    prose does not make the prose mathematics)."""
    text = span.get("text", "")
    visible = len(text.translate(_NOT_MATH))
    if not visible:
        return False
    if _MATH_FONT.search(span.get("font", "")):
        return True
    return len(MATH_CHARS.findall(text)) >= FORMULA_SHARE * visible


# Set in symbol fonts, yet prose: list bullets and dashes.
_NOT_MATH = str.maketrans("", "", "•◦▪▫■□●○·‣⁃–—-* \u00a0")


def _formula_shaped(spans: list[dict[str, Any]]) -> bool:
    visible = sum(len(s["text"].translate(_NOT_MATH)) for s in spans)
    if visible < 3:  # a bullet, a lone symbol: not a formula
        return False
    math = 0
    main_size = max(spans, key=lambda s: len(s["text"]))["size"]
    scripts = 0
    for span in spans:
        chars = len(span["text"].translate(_NOT_MATH))
        if _MATH_FONT.search(span.get("font", "")):
            math += chars
        else:
            math += len(MATH_CHARS.findall(span["text"]))
        if span["size"] < main_size * SCRIPT_SIZE_RATIO:
            scripts += 1
    text = "".join(s["text"] for s in spans)
    # A relation with a sub/superscript or a math-font symbol beside it: "a2 + 8 = 12".
    shaped = bool(_RELATION.search(text)) and (scripts > 0 or math > 0)
    return shaped or math / visible >= FORMULA_SHARE


# --- reading order -----------------------------------------------------------------------------

# An HTML table, or a run of pipe-table rows.
_TABLE = re.compile(r"<table.*?</table>|(?:^[ \t]*\|[^\n]*\|[ \t]*$\n?)+", re.I | re.S | re.M)
# Snippets shorter than this (after normalisation) match too easily to place a line.
MIN_SNIPPET = 12
# A layout is two columns when each side holds at least this many lines ...
MIN_COLUMN_LINES = 4
# ... that stay on their side of the gutter.


def reading_order(lines: list[Line], page_width: float) -> list[Line] | None:
    """The order a reader takes through a two-column page: band by band (the bands that
    full-width lines such as titles and wide figures cut the page into), the left column top
    to bottom, then the right. None when no band of the page holds two columns."""
    wide = sorted(ln.y0 for ln in lines if ln.x1 - ln.x0 > page_width * 0.6)
    bands: list[list[Line]] = [[]]
    cuts = iter(wide)
    cut = next(cuts, None)
    for line in sorted(lines, key=lambda ln: ln.y0):
        while cut is not None and line.y0 >= cut:
            bands.append([])
            cut = next(cuts, None)
        bands[-1].append(line)
    order: list[Line] = []
    two_columns = False
    # Right-to-left scripts read the right column first.
    first, second = (1, 0) if right_to_left(lines) else (0, 1)
    for band in bands:
        split = columns(band, page_width)
        if split is None:
            order.extend(band)
        else:
            two_columns = True
            order.extend(split[first] + split[second])
    return order if two_columns else None


def right_to_left(lines: list[Line]) -> bool:
    letters = [ch for line in lines for ch in line.text if ch.isalpha()]
    rtl = sum(1 for ch in letters if unicodedata.bidirectional(ch) in ("R", "AL"))
    return bool(letters) and rtl > len(letters) / 2


def columns(lines: list[Line], page_width: float) -> list[list[Line]] | None:
    """The two columns of a band of the page, each top to bottom, when its lines sit in two
    columns (lines that straddle the gutter are left out); None otherwise. The gutter is
    looked for at the middle first, then further out, up to 30 % and 70 % of the width: a
    page with a narrow sidebar beside its text has its gutter well off the middle. (Three
    columns split at the middle too: the first and the last, the middle one straddling.)"""
    if not lines:
        return None
    for share in GUTTER_SHARES:
        split = _split_at(lines, page_width, page_width * share)
        if split:
            return split
    return None


# Where a gutter may be, as shares of the page's width, nearest the middle first.
GUTTER_SHARES = sorted((n / 100 for n in range(30, 71, 2)), key=lambda s: abs(s - 0.5))


def _split_at(lines: list[Line], page_width: float, gutter: float) -> list[list[Line]] | None:
    slack = page_width * 0.02
    left = [ln for ln in lines if ln.x1 <= gutter + slack and ln.x0 < gutter]
    right = [ln for ln in lines if ln.x0 >= gutter - slack and ln.x1 > gutter]
    if len(left) < MIN_COLUMN_LINES or len(right) < MIN_COLUMN_LINES:
        return None
    # Two columns side by side share a vertical band; a page of short lines on the left with
    # a figure caption on the right does not make a second column.
    top = max(min(ln.y0 for ln in left), min(ln.y0 for ln in right))
    bottom = min(max(ln.y1 for ln in left), max(ln.y1 for ln in right))
    if bottom - top < 3 * _line_height(lines):
        return None
    return [sorted(left, key=lambda ln: ln.y0), sorted(right, key=lambda ln: ln.y0)]


def across_gutter(lines: list[Line], page_width: float) -> list[Line]:
    """Lines that run across the gutter of a page in two columns, between the lines of both
    columns: an OCR that joined a left line to the right line beside it ("interdum sit amet
    pede ac sem"). The order signal's reference is made of the same lines, so it cannot see
    them; these are what a reading of two columns across the gutter leaves behind. A title,
    a wide figure or a full-width passage between two blocks of columns has no column lines
    both just above and just below it on both sides, and is left alone."""
    narrow = [ln for ln in lines if ln.x1 - ln.x0 <= page_width * 0.6]
    split = columns(narrow, page_width)
    if split is None:
        return []
    left, right = split
    gutter = (_median([ln.x1 for ln in left]) + _median([ln.x0 for ln in right])) / 2
    slack = page_width * 0.02
    reach = 2 * _line_height(lines)

    def beside(column: list[Line], y: float, above: bool) -> bool:
        return any(0 < (y - ln.y0 if above else ln.y0 - y) <= reach for ln in column)

    # A joined line starts where the left column's lines start and ends where the right
    # column's end; a key beside its value in a box by the text starts at neither.
    starts = _median([ln.x0 for ln in left]) + page_width * 0.1
    ends = _median([ln.x1 for ln in right]) - page_width * 0.1
    return [
        ln
        for ln in lines
        if ln.x0 < min(gutter - slack, starts)
        and ln.x1 > max(gutter + slack, ends)
        and all(beside(c, ln.y0, above) for c in split for above in (True, False))
    ]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _line_height(lines: list[Line]) -> float:
    heights = sorted(ln.y1 - ln.y0 for ln in lines)
    return heights[len(heights) // 2]


def _squash(text: str) -> str:
    """Letters and digits only, lower-cased: what survives hyphenation, emphasis and spacing."""
    text = unicodedata.normalize("NFKC", normalize_text(text)).lower()
    return "".join(ch for ch in text if ch.isalnum())


def order_agreement(markdown: str, expected: list[Line]) -> tuple[float, int] | None:
    """The share of pairs of placed lines that the output keeps in the expected order (the
    concordant pairs of Kendall's tau), and how many lines could be placed (found once,
    exactly, in the output). Two columns read across line by line keep each column's own order
    but put half the pairs across the gutter the wrong way round: about 0.75."""
    output = _squash(markdown)
    # A table's cells are read row by row across its columns; the table tests judge them.
    tables = [_squash(table) for table in _TABLE.findall(markdown)]
    positions = []
    for line in expected:
        snippet = _squash(line.text)
        if len(snippet) < MIN_SNIPPET or any(snippet in table for table in tables):
            continue
        at = output.find(snippet)
        if at >= 0 and output.find(snippet, at + 1) < 0:
            positions.append(at)
    if len(positions) < 2 * MIN_COLUMN_LINES:
        return None
    pairs = len(positions) * (len(positions) - 1) // 2
    kept = sum(1 for i, a in enumerate(positions) for b in positions[i + 1 :] if a < b)
    return kept / pairs, len(positions)
