"""Signals that judge what the output says against what the page shows: words that are no
words, contractions that lost their apostrophe, letter fragments, markup and tables of
contents shown as content, formulas left as broken text (by the text layer's fonts, or by
their shape on an OCR'd page), columns read across, a page laid out mirrored (read upside
down), Arabic read in visual order, characters that could not be read, and OCR lines read
with little confidence. Each is a ``Signal`` (``model.quality.review``) whose ``severity``
grows with how far the page is from passing.

Costs: each is a pass over the output or the page's lines, under a millisecond a page (about
two for ``mirrored`` on a dense page, a few for ``apostrophes``, which looks words up in the
list ``plausibility`` already loaded); the word lists behind ``plausibility`` load once per
process (``model.quality.plausibility``); the text layer's lines come with the page facts
(``get_text("dict")``). ``quality.seconds`` in a page's report is the measured total
(bench/review.py prints its mean).
"""

from __future__ import annotations

import re
from typing import Any

from model.quality.page_lines import (
    Line,
    across_gutter,
    order_agreement,
    reading_order,
    right_to_left,
)
from model.quality.parsed import ParsedPage
from model.quality.plausibility import MIN_KNOWN_SHARE, lost_apostrophes, plausibility
from model.quality.review import Signal, severity_below
from model.tables import Table

# --- plausibility ------------------------------------------------------------------------------


def plausibility_signal(page: ParsedPage) -> Signal | None:
    measured = plausibility(page.text)
    if measured is None:
        return None
    share, language = measured
    ok = share >= MIN_KNOWN_SHARE
    detail = "" if ok else f"only {share:.0%} of its words are {language} words"
    severity = severity_below(share, MIN_KNOWN_SHARE)
    return Signal("plausibility", ok, detail, round(share, 3), severity=severity)


# --- apostrophes --------------------------------------------------------------------------------

# One contraction without its apostrophe may be a slip; two are a font or a reader that lost
# the glyph on the whole page.
MIN_LOST_APOSTROPHES = 2


def apostrophe_signal(page: ParsedPage) -> Signal | None:
    """English contractions without their apostrophe ("Heres to the crazy ones", "Theyre",
    "cant"): the page's apostrophes were lost, in the font's Unicode map or by the OCR. The
    page image shows them; a reader of the text sees words that are wrong."""
    found = lost_apostrophes(page.text)
    if found is None:
        return None
    ok = len(found) < MIN_LOST_APOSTROPHES
    examples = ", ".join(dict.fromkeys(found[:5]))
    detail = "" if ok else f"{len(found)} contractions without their apostrophe ({examples})"
    severity = 0.0 if ok else min(1.0, 0.6 + 0.05 * (len(found) - MIN_LOST_APOSTROPHES))
    return Signal("apostrophes", ok, detail, float(len(found)), severity=severity)


# --- formulas ----------------------------------------------------------------------------------


def formula_signal(page: ParsedPage, lines: list[Line]) -> Signal | None:
    """Formula-shaped lines on the page, and no LaTeX for them in the output."""
    formulas = [ln for ln in lines if ln.formula]
    if not formulas:
        return None
    spans = len(page.math)
    missing = len(formulas) - spans
    ok = missing <= 0
    example = formulas[0].text.strip()[:40]
    detail = "" if ok else f"{missing} formula line(s) left as text, e.g. {example!r}"
    severity = 0.0 if ok else min(1.0, 0.6 + 0.1 * (missing - 1))
    return Signal("formula", ok, detail, float(spans), severity=severity)


# A paragraph that is a formula written as plain text: a relation between short symbols and
# numbers and no word ("a2+8=12", "x = 2y - 1"), where the output has no LaTeX for it. Code
# lines end in ; { } or call something, and are left alone.
_RELATION_TEXT = re.compile(r"[=<>≤≥≈≠]")
_FORMULA_TEXT = re.compile(r"^[A-Za-z0-9\s+\-−*/=<>≤≥≈≠^().,'²³¹]+$")
_LONG_WORD = re.compile(r"[A-Za-z]{3,}")
MAX_FORMULA_TEXT = 60


def formula_text_signal(page: ParsedPage, lines: list[Line]) -> Signal | None:
    """Formulas left as text on a page without a text layer to find them by their fonts
    (``formula_signal``): OCR reads "a² + 8 = 12" as "a2+8=12"."""
    if lines:  # the text layer's formula lines judge this page (formula_signal)
        return None
    found = [p for p in page.prose_blocks if _formula_shaped_text(p)]
    ok = not found
    detail = "" if ok else f"{len(found)} formula(s) left as text, e.g. {found[0][:40]!r}"
    severity = 0.0 if ok else min(1.0, 0.6 + 0.1 * (len(found) - 1))
    return Signal("formula_text", ok, detail, float(len(found)), severity=severity)


def _formula_shaped_text(paragraph: str) -> bool:
    if not paragraph or len(paragraph) > MAX_FORMULA_TEXT or "\n" in paragraph:
        return False
    if paragraph.startswith(("|", "#", "-", "*")) or paragraph.rstrip().endswith((";", "{", "}")):
        return False
    return (
        bool(_FORMULA_TEXT.match(paragraph))
        and bool(_RELATION_TEXT.search(paragraph))
        and bool(re.search(r"[A-Za-z]", paragraph))
        and not _LONG_WORD.search(paragraph)
    )


# --- reading order -----------------------------------------------------------------------------

MIN_ORDER_AGREEMENT = 0.9
# Lines run across the gutter (``across_gutter``) before the page counts as read across: one
# can be a heading or an equation set between the columns.
MIN_ACROSS_GUTTER = 2


def order_signal(
    page: ParsedPage, lines: list[Line], page_width: float | None, *, ocr: bool = False
) -> Signal | None:
    """On a page in two columns, the output keeps each column's lines together and in order;
    and (``ocr``: the lines are the OCR's own) the OCR did not join lines across the gutter."""
    if not lines or not page_width:
        return None
    joined = across_gutter(lines, page_width) if ocr else []
    if len(joined) >= MIN_ACROSS_GUTTER:
        example = joined[0].text.strip()[:40]
        detail = f"{len(joined)} line(s) read across the gutter of two columns, e.g. {example!r}"
        severity = min(1.0, 0.6 + 0.1 * (len(joined) - MIN_ACROSS_GUTTER))
        return Signal("order", False, detail, 0.0, severity=severity)
    expected = reading_order(lines, page_width)
    if expected is None:
        return None
    measured = order_agreement(page.markdown, expected)
    if measured is None:
        return None
    agreement, placed = measured
    ok = agreement >= MIN_ORDER_AGREEMENT
    detail = "" if ok else f"{1 - agreement:.0%} of its column lines' pairs out of order"
    severity = severity_below(agreement, MIN_ORDER_AGREEMENT)
    return Signal("order", ok, detail, round(agreement, 3), severity=severity)


# --- a page read upside down -------------------------------------------------------------------

# A paragraph's last line is shorter than the lines above it and starts where they start: flush
# left in a left-to-right script, flush right in a right-to-left one. On a page whose OCR boxes
# were turned over by a wrong orientation (read as upside down when it was not), those short
# lines end up flush with the other side, and the page comes out bottom to top.
MIN_MIRRORED_LINES = 3
SHORT_LINE = 0.85  # of its neighbour's width
EDGE_TOLERANCE = 0.015  # of the page's width


def mirrored_signal(lines: list[Line], page_width: float | None) -> Signal | None:
    """The OCR'd page's short lines sit against the wrong margin for its script: its lines
    were laid out mirrored, and the output reads bottom to top."""
    if len(lines) < 2 * MIN_MIRRORED_LINES or not page_width:
        return None
    start, end = _short_line_edges(lines, page_width)
    if right_to_left(lines):
        start, end = end, start
    ok = end < MIN_MIRRORED_LINES or end <= 2 * start
    detail = (
        ""
        if ok
        else f"{end} short lines end against the wrong margin ({start} against the right one): "
        "the page may have been read upside down, bottom to top"
    )
    severity = 0.0 if ok else round(0.5 + 0.5 * (end - start) / (end + start), 3)
    return Signal("mirrored", ok, detail, float(end - start), severity=severity)


def _short_line_edges(lines: list[Line], page_width: float) -> tuple[int, int]:
    """How many short lines share their left edge, and how many their right edge, with the
    longest line just above or below them in the same column."""
    tolerance = EDGE_TOLERANCE * page_width
    ordered = sorted(lines, key=lambda ln: ln.y0)
    left = right = 0
    for i, line in enumerate(ordered):
        height = line.y1 - line.y0
        neighbour: Line | None = None
        for other in ordered[max(0, i - 6) : i + 7]:
            if other is line or max(other.y0 - line.y1, line.y0 - other.y1) > 0.8 * height:
                continue
            overlap = min(line.x1, other.x1) - max(line.x0, other.x0)
            if overlap < 0.5 * min(line.x1 - line.x0, other.x1 - other.x0):
                continue
            if neighbour is None or other.x1 - other.x0 > neighbour.x1 - neighbour.x0:
                neighbour = other
        if neighbour is None or line.x1 - line.x0 > SHORT_LINE * (neighbour.x1 - neighbour.x0):
            continue
        flush_left = abs(line.x0 - neighbour.x0) < tolerance
        flush_right = abs(line.x1 - neighbour.x1) < tolerance
        if flush_left and not flush_right:
            left += 1
        elif flush_right and not flush_left:
            right += 1
    return left, right


# --- unreadable characters ---------------------------------------------------------------------

# U+FFFD (a glyph without a Unicode mapping), private-use code points (a font's own glyph ids)
# and C0/C1 controls other than whitespace: none of them is text a person can read.
_UNREADABLE = re.compile("[\ufffd\ue000-\uf8ff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def unreadable_signal(page: ParsedPage) -> Signal:
    count = len(_UNREADABLE.findall(page.markdown))
    ok = count == 0
    detail = "" if ok else f"{count} character(s) that could not be read"
    severity = 0.0 if ok else min(1.0, 0.5 + 0.05 * count)
    return Signal("unreadable", ok, detail, float(count), severity=severity)


# --- markup that is no content -----------------------------------------------------------------

# HTML comments and <mark> show as text or as highlights in a reader; <br> belongs in table
# cells only (Markdown has no other use for it).
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_MARK = re.compile(r"</?mark\b", re.I)
_TABLE_HTML = re.compile(r"<table.*?</table>", re.I | re.S)
_BREAK = re.compile(r"<br\s*/?>", re.I)


def markup_signal(page: ParsedPage) -> Signal:
    markdown = page.markdown
    outside_tables = _TABLE_HTML.sub(" ", markdown)
    outside_tables = "\n".join(
        line for line in outside_tables.splitlines() if not line.lstrip().startswith("|")
    )
    found = []
    if _COMMENT.search(markdown):
        found.append("HTML comments")
    if _MARK.search(markdown):
        found.append("<mark>")
    if _BREAK.search(outside_tables):
        found.append("<br> outside tables")
    ok = not found
    detail = "" if ok else "markup shown as text: " + ", ".join(found)
    return Signal("markup", ok, detail, float(len(found)), severity=0.0 if ok else 0.6)


# --- a table of contents made into a table ------------------------------------------------------

_LEADER = re.compile(r"(?:\.\s?){4,}")
_PAGE_NUMBER = re.compile(r"(?:\d{1,4}|[ivxlcdm]{1,7})\W*$", re.I)
_CONTENTS_HEADING = re.compile(r"^#{1,6}\s.*\b(contents|inhalt|sommaire|índice|indice)\b", re.I)


def contents_table_signal(page: ParsedPage) -> Signal:
    """A list of entries and page numbers (dot leaders, or rows under a "Contents" heading
    that end in a page number) set as a table: its rows are no table's rows."""
    found = sum(1 for table in page.pipe_tables if _contents_rows(table))
    ok = not found
    detail = "" if ok else "a table of contents set as a table"
    return Signal("contents_table", ok, detail, float(found), severity=0.0 if ok else 0.55)


def _contents_rows(table: Table) -> bool:
    rows = [" | ".join(row).replace("*", "") for row in table.rows]
    return len(rows) >= 3 and _looks_like_contents(rows, table.heading)


def _looks_like_contents(rows: list[str], heading: str) -> bool:
    leaders = sum(1 for row in rows if _LEADER.search(row))
    if leaders >= len(rows) / 2:
        return True
    numbered = sum(1 for row in rows if _PAGE_NUMBER.search(row.rstrip(" |")))
    return bool(_CONTENTS_HEADING.match(heading)) and numbered >= 0.8 * len(rows)


# --- right to left -----------------------------------------------------------------------------

# Arabic read in visual order: the lam-alef ligature comes apart as alef, hamza-alef, lam
# ("اإلنتاجية" for "الإنتاجية"); presentation forms are glyphs, not letters, and search
# and copy fail on them.
_BROKEN_LAM_ALEF = re.compile("ا[أإآ]ل")
_PRESENTATION_FORMS = re.compile("[\ufb50-\ufdff\ufe70-\ufeff]")
# Teh marbuta (ة) ends an Arabic word and never stands inside one: a letter after it means two
# words run together, where lines were joined end to start in the wrong order ("فعالةتعتبر").
_GLUED = re.compile("ة[\u0621-\u064a]")


def right_to_left_signal(page: ParsedPage) -> Signal | None:
    markdown = page.markdown
    broken = len(_BROKEN_LAM_ALEF.findall(markdown))
    glyphs = len(_PRESENTATION_FORMS.findall(markdown))
    glued = len(_GLUED.findall(markdown))
    if not broken and not glyphs and not re.search("[\u0590-\u06ff]", markdown):
        return None
    ok = broken < 2 and glyphs < 5 and glued < 2
    detail = (
        ""
        if ok
        else f"{broken} broken ligatures, {glyphs} glyph forms, {glued} words run together: "
        "letters or lines out of order"
    )
    value = float(broken + glyphs + glued)
    return Signal("right_to_left", ok, detail, value, severity=0.0 if ok else 0.6)


# --- the OCR's confidence, line by line --------------------------------------------------------

# A line under this confidence is probably misread; RapidOCR scores clean print at 0.9-1.0.
LOW_LINE_CONFIDENCE = 0.75
# A page with more than this share of its text in low-confidence lines needs a look, even when
# the mean (the ``ocr_confidence`` signal) looks fine because the long lines read well. The
# share was 5 %; on the real scans every line under 0.75 was a misreading a reader would see
# ("dataeee oeagns" for "Database performance and scalability", "°Wei" for "Back cover",
# "8aar" for "8 Bar"), most of them one short line on a page of good ones (0.3-2 % of its
# text), and no clean scan had any. ``bench/review.py --tune``, choosing the share leaving each
# document out, chose 0 for every document (docs/QUALITY.md): any misread line flags the page.
MAX_LOW_SHARE = 0.0


def line_confidence_signal(lines: list[Line]) -> Signal | None:
    scored = [ln for ln in lines if ln.confidence is not None and ln.text.strip()]
    if len(scored) < 3:
        return None
    total = sum(len(ln.text) for ln in scored)
    misread = [ln for ln in scored if (ln.confidence or 0.0) < LOW_LINE_CONFIDENCE]
    share = sum(len(ln.text) for ln in misread) / total
    ok = share <= MAX_LOW_SHARE
    detail = (
        ""
        if ok
        else f"{len(misread)} line(s) read with low confidence ({share:.1%} of the text), "
        f"e.g. {misread[0].text.strip()[:30]!r}"
    )
    severity = 0.0 if ok else min(1.0, 0.5 + (share - MAX_LOW_SHARE))
    return Signal("line_confidence", ok, detail, round(share, 3), severity=severity)


# --- coverage: ink in a read line that no recognised word explains -----------------------------

# The widest stretch of ink a read line may hold outside its recognised words, in line heights
# (``model.engines.ocr_coverage`` measures them; a character is about 0.4). On the real scans,
# their worn copies and the generated corpus, no OCR'd page whose tests pass has a stretch of
# even 0.3 (the narrowest reported); the Arabic word the OCR leaves out beside "habibi" is 0.87.
# ``bench/review.py --tune``, leaving each document out, finds the flag the same from 0.5 to
# 0.75 and chooses 0.5 for every document.
MAX_UNREAD_STRETCH = 0.5


def coverage_signal(stretches: list[list[Any]] | None) -> Signal | None:
    """Text the recogniser skipped inside a line it read: "habibi" read, the Arabic word
    beside it not, the line's box spanning both. None where the engine measured nothing."""
    if stretches is None:
        return None
    wide = [(float(width), str(text)) for width, text in stretches if width > MAX_UNREAD_STRETCH]
    widest = max((float(width) for width, _ in stretches), default=0.0)
    ok = not wide
    detail = (
        ""
        if ok
        else f"{len(wide)} stretch(es) of ink left unread inside read lines, e.g. beside "
        f"{wide[0][1].strip()[:30]!r}: a script the OCR cannot read, or text it dropped"
    )
    severity = 0.0 if ok else min(1.0, 0.5 + 0.1 * len(wide))
    return Signal("coverage", ok, detail, round(widest, 2), severity=severity)


# --- fragments ---------------------------------------------------------------------------------

# Runs of this many one- and two-letter tokens in a row are what OCR makes of smudges, ruled
# lines and handwriting ("e e se e s s o"); prose almost never has them.
MIN_FRAGMENT_RUN = 6


def fragment_signal(page: ParsedPage) -> Signal:
    runs = fragment_runs(page.tokens)
    ok = not runs
    detail = "" if ok else f"{len(runs)} run(s) of letter fragments, e.g. {runs[0][:30]!r}"
    severity = 0.0 if ok else min(1.0, 0.55 + 0.1 * (len(runs) - 1))
    return Signal("fragments", ok, detail, float(len(runs)), severity=severity)


def fragment_runs(tokens: tuple[str, ...]) -> list[str]:
    """The runs of at least MIN_FRAGMENT_RUN short letter tokens in a row."""
    runs: list[str] = []
    current: list[str] = []
    for token in [*tokens, ""]:
        word = token.strip(".,;:!?()[]'\"|*_")
        if word and len(word) <= 2 and word.isalpha():
            current.append(word)
            continue
        if len(current) >= MIN_FRAGMENT_RUN:
            runs.append(" ".join(current))
        current = []
    return runs
