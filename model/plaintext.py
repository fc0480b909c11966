"""Markdown to plain text, for Reader's ``X-Respond-With: text``: the words and their order,
without markup. Tables become tab-separated rows, so their cells stay apart."""

from __future__ import annotations

import html
import re

_HTML_ROW = re.compile(r"</tr\s*>", re.IGNORECASE)
_HTML_CELL_END = re.compile(r"</t[dh]\s*>", re.IGNORECASE)
_HTML_BREAK = re.compile(r"<br\s*/?>|</p\s*>|</h[1-6]\s*>|</li\s*>", re.IGNORECASE)
_HTML_TAG = re.compile(r"<[^>]+>")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_LIST_MARK = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|\*|~~|`)(?=\S)(.+?)(?<=\S)\1")
# Underscores mark emphasis only at word edges: snake_case_names are words, not markup.
_UNDERSCORE_EMPHASIS = re.compile(r"(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_FENCE = re.compile(r"^\s*(```|~~~).*$")


def markdown_to_text(markdown: str) -> str:
    text = _html_to_text(markdown)
    lines = []
    for line in text.split("\n"):
        if _FENCE.match(line) or _TABLE_RULE.match(line):
            continue
        line = _HEADING.sub("", line)
        line = _QUOTE.sub("", line)
        line = _LIST_MARK.sub(r"\1", line)
        if line.strip().startswith("|") and line.strip().endswith("|"):
            line = "\t".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        line = _IMAGE.sub(r"\1", line)
        line = _LINK.sub(r"\1", line)
        line = _EMPHASIS.sub(r"\2", line)
        line = _UNDERSCORE_EMPHASIS.sub(r"\2", line)
        lines.append(line.rstrip())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip() + "\n"


def _html_to_text(text: str) -> str:
    if "<" not in text:
        return text
    text = _HTML_ROW.sub("\n", text)
    text = _HTML_CELL_END.sub("\t", text)
    text = _HTML_BREAK.sub("\n", text)
    text = _HTML_TAG.sub("", text)
    text = re.sub(r"\t+\n", "\n", text)
    return html.unescape(text)
