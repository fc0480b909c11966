"""Turning engine output into clean Markdown: tidying text-layer Markdown, and a vision-language
model's output (grounding tags, figures). OCR'd text lines are laid out by
``model.scan_layout``."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from model.markdown_hygiene import outside_code
from model.steps import no_findings, page_step, unchanged

# --- Markdown from a text layer ----------------------------------------------------------------

# pymupdf4llm's own markers: page separators, and placeholders for pictures it did not keep.
_ARTIFACT_LINES = re.compile(
    r"^\s*(?:-{5,}|\*\*==> picture \[.*?\] intentionally omitted <==\*\*"
    r"|\*\*----- (?:Start|End) of picture text -----\*\*(?:<br>)?)\s*$",
    re.MULTILINE,
)
_HEADING = re.compile(r"^(#{1,6}) +(.*\*\*.*)$", re.MULTILINE)


def _unbolded_heading(match: re.Match[str]) -> str:
    """A heading's bold runs unmarked (its code is out of sight: ``outside_code``).
    pymupdf4llm bolds each run of a bold heading apart ("# **The** `scan()` **function**"):
    taking off only the outer pair would leave "The** `scan()` **function", which no renderer
    reads as bold."""
    marks, text = match.group(1), match.group(2)
    if text.count("**") % 2:
        return match.group(0)  # an odd count is someone's literal asterisks
    return f"{marks} {re.sub(r' {2,}', ' ', text.replace('**', '')).strip()}"


@page_step("markdown tidying", fallback=unchanged)
def tidy_markdown(markdown: str) -> str:
    """Strip extractor artifacts and stray whitespace; at most one blank line in a row."""
    text = markdown.replace("\r\n", "\n")
    text = _ARTIFACT_LINES.sub("", text)
    # A heading is already emphasized; "# **Title**" only adds noise for every reader. In
    # a code block, "# x = a**2 + b**2" is a comment, not a heading.
    text = outside_code(text, lambda prose: _HEADING.sub(_unbolded_heading, prose))
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n" if text.strip() else ""


# --- Markdown from a vision-language model (DeepSeek-OCR / jina-ocr-v1) ------------------------

# A grounded block: <|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>, boxes on a
# 0-999 scale of the page. The label is the block's type (text, title, table, image, ...).
_GROUNDING = re.compile(
    r"<\|ref\|>(?P<label>.*?)<\|/ref\|>\s*<\|det\|>(?P<boxes>.*?)<\|/det\|>[ \t]*\n?", re.DOTALL
)
_BOX = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")
# Special tokens a model may echo when it was asked for grounding or ran out of tokens.
_STRAY_SPECIAL = re.compile(r"<\|(?:/?ref|/?det|grounding)\|>|<｜end▁of▁sentence｜>")
GROUNDING_SCALE = 999
FIGURE_LABEL = "image"


@dataclass(frozen=True)
class Figure:
    """A picture on the page the model pointed at, in pixels of the page image it saw."""

    index: int  # 1-based, in reading order
    box: tuple[int, int, int, int]
    name: str


def figure_name(page_number: int, index: int) -> str:
    return f"figures/page-{page_number:04d}-figure-{index}.png"


def scale_box(box: tuple[int, int, int, int], width: int, height: int) -> tuple[int, int, int, int]:
    """A 0-999 box as pixels of a width × height page, clamped to the page."""
    x0, y0, x1, y1 = (v / GROUNDING_SCALE for v in box)
    left, right = sorted((round(x0 * width), round(x1 * width)))
    top, bottom = sorted((round(y0 * height), round(y1 * height)))
    return (max(0, left), max(0, top), min(width, right), min(height, bottom))


def _tags_dropped(text: str, **kwargs: object) -> tuple[str, list[Figure]]:
    """The model's output with its grounding tags and special tokens dropped, no figures."""
    return _STRAY_SPECIAL.sub("", _GROUNDING.sub("", text)), []


@page_step("model output cleaning", fallback=_tags_dropped)
def vlm_markdown(
    text: str, *, page_size: tuple[int, int], page_number: int, figures: bool
) -> tuple[str, list[Figure]]:
    """The model's output as clean Markdown, and the figures it found.

    Grounding tags go; each ``image`` region becomes a link to its crop when ``figures`` is
    asked for (the caller cuts and stores the crops), and disappears otherwise. HTML tables
    and LaTeX pass through untouched; blank lines are tidied.
    """
    found: list[Figure] = []

    def replace(match: re.Match[str]) -> str:
        if match.group("label").strip() != FIGURE_LABEL:
            return ""
        boxes = [
            (int(x0), int(y0), int(x1), int(y1))
            for x0, y0, x1, y1 in _BOX.findall(match.group("boxes"))
        ]
        if not figures or not boxes:
            return ""
        links = []
        for raw in boxes:
            box = scale_box(raw, *page_size)
            if box[2] - box[0] < 2 or box[3] - box[1] < 2:
                continue  # a degenerate box cuts no picture
            figure = Figure(len(found) + 1, box, figure_name(page_number, len(found) + 1))
            found.append(figure)
            links.append(f"![]({figure.name})")
        return "\n\n".join(links) + "\n\n" if links else ""

    text = _GROUNDING.sub(replace, text.replace("\r\n", "\n"))
    text = _STRAY_SPECIAL.sub("", text)
    return tidy_markdown(text), found


@page_step("figure crops", fallback=no_findings)
def figure_reports(page: Image.Image, figures: Iterable[Figure]) -> list[dict[str, Any]]:
    """The figures as an engine reports them in ``PageResult.extra["figures"]``: name, box on
    the page, and the crop's PNG (base64; the service stores it and drops the bytes)."""
    return [
        {
            "name": figure.name,
            "box": list(figure.box),
            "png_base64": base64.b64encode(figure_png(page, figure)).decode(),
        }
        for figure in figures
    ]


def figure_png(page: Image.Image, figure: Figure) -> bytes:
    """The figure's crop of the page image, as PNG bytes."""
    buffer = io.BytesIO()
    page.crop(figure.box).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
