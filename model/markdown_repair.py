"""Repairs to Markdown extracted from a PDF's text layer, each one for a defect seen on real
pages (the real-page set of ``model.quality.realpages``): debris a reader would see, words run
together at a change of style, accents left beside their letters, tables of contents set as
tables, and running heads and feet on a single page.

Pure string functions: the local engine runs them on pymupdf4llm's output, and they are
unit-tested on the fragments that real pages produced.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

from model.steps import page_step

# --- debris ------------------------------------------------------------------------------------

# pymupdf4llm writes the text it finds inside a picture (figure labels, a scanned form's
# printed words) between HTML comments, its lines joined by <br>.
_PICTURE_TEXT = re.compile(
    r"<!-- Start of picture text -->\s*(?P<body>.*?)\s*<!-- End of picture text -->", re.DOTALL
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# MuPDF marks text drawn over a filled rectangle as highlighted; LibreOffice and Word draw
# white rectangles behind ordinary paragraphs, so the mark says nothing a reader needs.
_MARK = re.compile(r"</?mark>", re.IGNORECASE)
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Private-use code points: icon fonts and flag glyphs no reader's font can draw.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010fffd]")
REPLACEMENT = "\ufffd"


@dataclass
class Repairs:
    """What was repaired or removed on a page: the engine reports it, and the quality signals
    flag a page whose text could not be recovered."""

    unmapped_characters: int = 0
    notes: list[str] = field(default_factory=list)


def picture_text(markdown: str) -> str:
    """Picture text as plain lines: a label per line, no comments, no <br>; and none at all
    where the page's tables already hold its words (the layout model called a form a
    picture, and pymupdf4llm wrote both its text and the tables it found in it:
    ``right_to_left_03`` came out twice)."""
    in_tables = _table_words(markdown)

    def lines(match: re.Match[str]) -> str:
        parts = [" ".join(p.split()) for p in _BR.split(match.group("body"))]
        kept = [p for p in parts if p]
        words = Counter(_WORDS.findall(" ".join(kept).lower()))
        total = sum(words.values())
        if total >= _DUPLICATE_MIN_WORDS and (
            sum((words & in_tables).values()) >= _DUPLICATE_SHARE * total
        ):
            return ""
        return "\n".join(kept) if kept else ""

    return _PICTURE_TEXT.sub(lines, markdown)


# Picture text is a copy of the page's tables when this share of its words (at least this
# many) are words of their cells.
_DUPLICATE_SHARE = 0.8
_DUPLICATE_MIN_WORDS = 5
_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
_HTML_CELL = re.compile(r"<t[dh]\b[^>]*>(.*?)</t[dh]>", re.DOTALL)


def _table_words(markdown: str) -> Counter[str]:
    cells = _HTML_CELL.findall(markdown)
    cells += [line for line in markdown.split("\n") if line.lstrip().startswith("|")]
    return Counter(_WORDS.findall(" ".join(cells).lower()))


def strip_debris(markdown: str, repairs: Repairs) -> str:
    """No HTML comments, <mark>, <br> outside tables, U+FFFD or private-use characters."""
    text = picture_text(markdown)
    text = _COMMENT.sub("", text)
    text = _MARK.sub("", text)
    unmapped = text.count(REPLACEMENT)
    if unmapped:
        repairs.unmapped_characters += unmapped
        repairs.notes.append(f"{unmapped} characters without a Unicode mapping removed")
        # "habibi������" → "habibi": the glyphs are lost either way; a run of U+FFFD between
        # two words is one gap, not a word.
        text = re.sub(f"(?<=\\S){REPLACEMENT}+(?=\\S)", " ", text)
        text = text.replace(REPLACEMENT, "")
    text = _PRIVATE_USE.sub("", text)
    out: list[str] = []
    for line in text.split("\n"):
        if _BR.search(line) and not _in_table(line):
            out.extend(part.rstrip() for part in _BR.split(line))
        else:
            out.append(line)
    return "\n".join(out)


def _in_table(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("|") or "<td" in stripped or "<th" in stripped


# A font whose glyphs map to the wrong code points reads as Latin-1 letters and typographic
# symbols ("]üìÆüéê •ìê °ê£ë†£"): a line with this share of such characters among at least
# this many is taken for one.
_MOJIBAKE = re.compile("[\u00c0-\u00ff\u2020-\u2030\u2200-\u22ff\u00a1-\u00bf]")
_MOJIBAKE_SHARE = 0.35
_MOJIBAKE_MIN_CHARS = 12


def garbled_lines(page_lines: list[str]) -> int:
    """How many of the page's text lines are set in a font without a usable Unicode map."""
    count = 0
    for line in page_lines:
        visible = [ch for ch in line if not ch.isspace()]
        if len(visible) < _MOJIBAKE_MIN_CHARS:
            continue
        odd = sum(1 for ch in visible if _MOJIBAKE.match(ch))
        if odd / len(visible) >= _MOJIBAKE_SHARE:
            count += 1
    return count


# --- words and accents -------------------------------------------------------------------------

_EMPHASIS_RUN = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")


def space_style_changes(markdown: str) -> str:
    """ "**STRDBMON**or**ENDDBMON**commands" → "**STRDBMON** or **ENDDBMON** commands".

    pymupdf4llm strips each span's spaces and joins spans of one style without them, so a
    bold word against a plain one loses the space between; a style change inside a word is
    rare enough in print that a space there is the better guess."""

    out = []
    last = 0
    for match in _EMPHASIS_RUN.finditer(markdown):
        start, end = match.span()
        out.append(markdown[last:start])
        before = markdown[start - 1] if start else ""
        after = markdown[end] if end < len(markdown) else ""
        prefix = " " if before.isalnum() else ""
        suffix = " " if after.isalnum() else ""
        out.append(prefix + match.group(0) + suffix)
        last = end
    out.append(markdown[last:])
    return "".join(out)


def respace_code(markdown: str, page_lines: list[str]) -> str:
    """Code blocks with the word gaps the page shows.

    pymupdf4llm writes a code line as its words run together ("functionadd(a,b){"); MuPDF's
    own line text puts a space wherever the glyphs leave a gap. Each code line is matched to
    the page line with the same characters and takes that line's spacing."""
    if "```" not in markdown:
        return markdown
    lines = [line.strip() for line in page_lines if line.strip()]
    # MuPDF splits a line where the font changes (a keyword set in bold): pairs count too.
    candidates = lines + [f"{a} {b}" for a, b in zip(lines, lines[1:], strict=False)]
    spaced: dict[str, str] = {}
    for candidate in candidates:
        spaced.setdefault(re.sub(r"\s+", "", candidate), candidate)
    out = []
    in_code = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            in_code = not in_code
        elif in_code:
            indent = line[: len(line) - len(line.lstrip())]
            line = indent + spaced.get(re.sub(r"\s+", "", line), line.strip())
        out.append(line)
    return "\n".join(out)


# Spacing accents as TeX and some word processors emit them: beside the letter, not on it.
_SPACING_ACCENTS = {
    "\u00b4": "\u0301",  # ´ acute
    "\u02ca": "\u0301",
    "`": "\u0300",  # grave
    "\u02cb": "\u0300",
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02c7": "\u030c",  # ˇ caron
    "\u02d8": "\u0306",  # ˘ breve
    "\u02dc": "\u0303",  # ˜ tilde
    "\u02da": "\u030a",  # ˚ ring
    "\u02d9": "\u0307",  # ˙ dot above
    "\u00af": "\u0304",  # ¯ macron
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02db": "\u0328",  # ˛ ogonek
}
_ACCENT_CLASS = "".join(re.escape(ch) for ch in _SPACING_ACCENTS if ch != "`")
# TeX puts the accent before its letter ("J´an"); the cedilla and ogonek come after.
_ACCENT_BEFORE = re.compile(f"(?<=[A-Za-z\u0131])([{_ACCENT_CLASS}])([A-Za-z\u0131])")
_ACCENT_START = re.compile(f"(?<![\\w{_ACCENT_CLASS}])([{_ACCENT_CLASS}])([A-Za-z\u0131])(?=\\w)")


def compose_accents(markdown: str) -> str:
    """ "J´an Min´aˇc" → "Ján Mináč": a spacing accent between letters (or starting a word)
    goes onto the letter after it, and the pair is composed (NFC)."""

    def attach(match: re.Match[str]) -> str:
        accent, letter = match.group(1), match.group(2)
        letter = "i" if letter == "\u0131" else letter  # TeX's dotless i under an accent
        combined = unicodedata.normalize("NFC", letter + _SPACING_ACCENTS[accent])
        return combined

    text = _ACCENT_BEFORE.sub(attach, markdown)
    text = _ACCENT_START.sub(attach, text)
    # Combining marks the extractor left as separate characters: compose what composes.
    return unicodedata.normalize("NFC", text)


# --- tables of contents ------------------------------------------------------------------------

_LEADER = re.compile(r"(?:\s*\.){4,}\s*|…{2,}|_{4,}")
_PAGE_REF = re.compile(r"^(?:\d{1,4}|[ivxlcdm]{1,7})$", re.IGNORECASE)
_CONTENTS_HEADING = re.compile(
    r"^#{1,6}\s*(?:\*\*)?(?:table of )?(?:contents|inhalt(?:sverzeichnis)?|table des "
    r"matières|índice|indice|sommaire)(?:\*\*)?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def _pipe_rows(block: list[str]) -> list[list[str]]:
    rows = []
    for line in block:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c) and any(cells):
            continue  # the separator row
        rows.append(cells)
    return rows


def _plain(cell: str) -> str:
    return re.sub(r"\*\*|__|<br>", " ", cell).strip()


def toc_tables_to_lists(markdown: str) -> str:
    """A pipe table that is a table of contents (dot leaders in its cells, or rows of title and
    page number under a "Contents" heading) becomes a list: one entry per line, the leader
    dots dropped, the page number after the title."""
    lines = markdown.split("\n")
    out: list[str] = []
    i = 0
    under_contents = False
    while i < len(lines):
        line = lines[i]
        if _CONTENTS_HEADING.match(line):
            under_contents = True
        elif line.startswith("#"):
            under_contents = False
        if not line.lstrip().startswith("|"):
            out.append(line)
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            block.append(lines[i])
            i += 1
        rows = _pipe_rows(block)
        if _is_toc(rows, under_contents):
            out.extend(_toc_entry(row) for row in rows if any(_plain(c) for c in row))
        else:
            out.extend(block)
    return "\n".join(out)


def _is_toc(rows: list[list[str]], under_contents: bool) -> bool:
    if not rows:
        return False
    cells = [_plain(c) for row in rows for c in row]
    leaders = sum(1 for c in cells if _LEADER.search(c))
    if leaders >= max(2, len(rows) // 2):
        return True
    if not under_contents or len(rows) < 3:
        return False
    # title | page: the last filled cell of (nearly) every row is a page number
    ends = [next((_plain(c) for c in reversed(row) if _plain(c)), "") for row in rows]
    return sum(1 for e in ends if _PAGE_REF.match(e)) >= 0.8 * len(rows)


def _toc_entry(row: list[str]) -> str:
    text = " ".join(_LEADER.sub(" ", _plain(cell)) for cell in row)
    words = text.replace(" .", " ").split()
    if len(words) >= 2 and _PAGE_REF.match(words[-1]):
        title = " ".join(words[:-1]).rstrip(" .")
        return f"- {title} — {words[-1]}"
    return "- " + " ".join(words)


# --- running heads and feet on one page --------------------------------------------------------

# Lines that are running heads or feet wherever they stand first or last on a page: page
# numbers in every common form, revision lines, download and print stamps.
_RUNNING_LINE = re.compile(
    r"^(?:"
    r"[-–—]?\s*\d{1,4}\s*[-–—]?"  # 12, - 12 -
    r"|[ivxlcdm]{1,7}"  # roman page numbers
    r"|(?:page|seite|página|pagina|p\.)\s*\d{1,4}(?:\s*(?:of|/|von|de|sur)\s*\d{1,4})?"
    r"|\d{1,4}\s*(?:/|of|von|de|sur)\s*\d{1,4}"
    # a browser's print: the page's address, and the date and time it was printed
    r"|https?://\S+"
    r"|\d{1,2}[./-]\d{1,2}[./-]\d{2,4},?\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]m)?"
    r"|(?:revision|rev\.|version)\s*:?\s*[\w.]{1,12}(?:\s*[-–,|]\s*.{0,40})?"
    r"|downloaded (?:from|by|on) .{3,160}"
    r"|printed (?:on|from|by) .{3,120}"
    r")$",
    re.IGNORECASE,
)
# How many lines at either end of a page are looked at.
_RUNNING_WINDOW = 2


def is_running_line(text: str) -> bool:
    """Whether a line's text is a page number, revision line or download stamp."""
    return bool(_RUNNING_LINE.match(_plain(text).strip("#*_ >").strip()))


def drop_running_lines(markdown: str) -> str:
    """Page numbers, revision lines and download stamps at the top or bottom of one page."""
    lines = markdown.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 2:
        return markdown  # a page that is only a number keeps it
    ends = filled[:_RUNNING_WINDOW] + filled[-_RUNNING_WINDOW:]
    drop = {i for i in ends if is_running_line(lines[i])}
    if len(drop) == len(filled):
        return markdown
    return "\n".join(line for i, line in enumerate(lines) if i not in drop)


# --- fractions ---------------------------------------------------------------------------------

# "<sup>1</sup> ⁄4" (a typeset fraction: raised numerator, fraction slash) → "1/4"
_SUP_FRACTION = re.compile(r"<sup>(\d{1,3})</sup>\s*⁄\s*(\d{1,3})")
_SLASH_FRACTION = re.compile(r"(?<=\d)\s*⁄\s*(?=\d)")


def plain_fractions(markdown: str) -> str:
    def fraction(match: re.Match[str]) -> str:
        # pymupdf4llm strips the space before a superscript ("up to<sup>1</sup> ⁄4 inch"):
        # right for a footnote mark, wrong for a fraction's numerator after a word.
        start = match.start()
        space = " " if start and markdown[start - 1].isalpha() else ""
        return f"{space}{match.group(1)}/{match.group(2)}"

    text = _SUP_FRACTION.sub(fraction, markdown)
    return _SLASH_FRACTION.sub("/", text)


# --- all of it ---------------------------------------------------------------------------------


def _unrepaired(markdown: str, **kwargs: object) -> tuple[str, Repairs]:
    return markdown, Repairs()


@page_step("markdown repair", fallback=_unrepaired)
def repair_text_layer(
    markdown: str, *, drop_running: bool, page_lines: list[str] | None = None
) -> tuple[str, Repairs]:
    """All the repairs, in order; ``page_lines`` are MuPDF's text lines of the page (for the
    word gaps of code)."""
    repairs = Repairs()
    text = strip_debris(markdown, repairs)
    if page_lines:
        text = respace_code(text, page_lines)
        garbled = garbled_lines(page_lines)
        if garbled:
            repairs.notes.append(f"{garbled} lines in a font without a usable Unicode map")
    text = space_style_changes(text)
    text = compose_accents(text)
    text = plain_fractions(text)
    text = toc_tables_to_lists(text)
    if drop_running:
        text = drop_running_lines(text)
    return text, repairs
