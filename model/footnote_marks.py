"""A footnote's mark set off from its text.

TeX (and most typesetters) begin a footnote with its number raised and smaller, and no space
after it: the glyphs stand apart only by their size and height. pymupdf4llm writes the line's
spans one after the other, so the footnote reads "1Diese Metrik wird auch …" or
"2More precisely: …", a number glued to the word after it. Here the page's own spans say
which lines begin with such a mark (digits at most three, at most ``MAX_MARK_SIZE`` of the
next span's size and raised by at least ``MIN_RAISE`` of it), and the Markdown line that
begins with that mark and that text gets it back as a superscript: "<sup>1</sup> Diese
Metrik", as the mark in the body ("Metrik<sup>1</sup>") is written. Pure string functions
over ``get_text("dict")``'s blocks."""

from __future__ import annotations

import re
from typing import Any

from model.steps import page_step, unchanged

# A mark is smaller than its footnote's text (TeX: 6 pt on 8 pt, 6 on 9) ...
MAX_MARK_SIZE = 0.85
# ... and its baseline higher, by this share of the text's size (TeX: about a third).
MIN_RAISE = 0.2
# How much of the text after a mark is kept, and how many of its first characters (spaces
# aside) must follow the mark in the Markdown line that is the footnote's.
PREFIX_CHARS = 12
FIRST_CHARS = 5
_DIGITS = re.compile(r"\d{1,3}")
# Emphasis markers, which may open the footnote's text.
_EMPHASIS = r"(?:\*\*|\*|_)*"
# What may stand before the mark at a Markdown line's start: a quote block, a list bullet,
# emphasis markers.
_LEAD = rf"(?P<block>(?:>\s*|[-*]\s+)?)(?P<emphasis>{_EMPHASIS})"


def raised_marks(page_dict: dict[str, Any]) -> list[tuple[str, str]]:
    """(mark, the text after it) for each line of the page that begins with a raised,
    smaller number followed by text."""
    found = []
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            spans = [span for span in line.get("spans", []) if span["text"].strip()]
            if len(spans) < 2:
                continue
            mark, text = spans[0], spans[1]
            digits = mark["text"].strip()
            first = text["text"].lstrip()[:1]
            if not _DIGITS.fullmatch(digits) or first.isdigit():
                continue
            size = text["size"]
            raised = text["origin"][1] - mark["origin"][1]
            if mark["size"] <= MAX_MARK_SIZE * size and raised >= MIN_RAISE * size:
                rest = "".join(span["text"] for span in spans[1:]).lstrip()
                found.append((digits, rest[:PREFIX_CHARS]))
    return found


@page_step("word spacing", fallback=unchanged)
def set_off_footnote_marks(markdown: str, page_dict: dict[str, Any]) -> str:
    """The Markdown with each footnote's mark, glued to its first word, written as a
    superscript before it."""
    for digits, prefix in raised_marks(page_dict):
        # The footnote's first characters; the spaces between them may differ (a TeX PDF's
        # spans carry none, pymupdf4llm writes them from the gaps).
        chars = "".join(prefix.split())[:FIRST_CHARS]
        if not chars:
            continue
        first = r"\s*".join(map(re.escape, chars))
        pattern = re.compile(rf"^{_LEAD}(?P<mark>{digits})(?={_EMPHASIS}{first})", re.MULTILINE)
        markdown = pattern.sub(r"\g<block><sup>\g<mark></sup> \g<emphasis>", markdown, 1)
    return markdown
