"""Blocks and words of an OCR'd page, from RapidOCR's line and word boxes.

The blocks are the paragraphs ``model.scan_layout`` lays the lines out into (the same ones
the page's Markdown is written from); the words carry RapidOCR's own word boxes (its
``return_word_box`` output), which the searchable PDF's invisible text is placed on.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np

from model.layout.schema import Block, PageLayout, Word
from model.scan_layout import boxes_to_paragraphs
from model.scan_lines import TextBox
from model.steps import nothing, page_step

_HEADING = re.compile(r"^(#{1,6}) ")


def word_boxes(output: Any) -> list[TextBox]:
    """RapidOCR's word boxes (``return_word_box=True``), in the scanned image's pixels."""
    words = []
    for line in getattr(output, "word_results", None) or ():
        for item in line or ():
            if len(item) < 3 or not str(item[0]).strip():
                continue
            points = np.asarray(item[2], dtype=float)
            xs, ys = points[:, 0], points[:, 1]
            words.append(
                TextBox(float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()), item[0])
            )
    return words


def line_scores(output: Any) -> list[float]:
    scores = getattr(output, "scores", None)
    return [float(s) for s in scores] if scores is not None else []


@page_step("layout blocks", fallback=nothing)
def ocr_layout(
    lines: Sequence[TextBox],
    scores: Sequence[float],
    words: Sequence[TextBox],
    *,
    image_size: tuple[int, int],
    page_size: tuple[float, float],
    skew_degrees: float = 0.0,
) -> PageLayout:
    """The page's paragraphs as blocks, and its words, with pixel boxes scaled to points.

    ``lines``, ``scores`` and ``words`` are upright (the page's rotation undone); ``scores``
    are in the order of ``lines``."""
    width, height = page_size
    sx, sy = width / image_size[0], height / image_size[1]

    def points(box: TextBox) -> tuple[float, float, float, float]:
        return (
            max(0.0, box.x0 * sx),
            max(0.0, box.y0 * sy),
            min(width, box.x1 * sx),
            min(height, box.y1 * sy),
        )

    score_of = {box: score for box, score in zip(lines, scores, strict=False)}
    blocks = []
    paragraphs = boxes_to_paragraphs(
        lines, image_size[0], page_height=image_size[1], skew_degrees=skew_degrees
    )
    for markdown, members in paragraphs:
        heading = _HEADING.match(markdown)
        known = [score_of[b] for b in members if b in score_of]
        blocks.append(
            Block(
                "heading" if heading else "paragraph",
                markdown,
                points(_union(members)),
                level=len(heading.group(1)) if heading else None,
                confidence=statistics.fmean(known) if known else None,
            )
        )
    return PageLayout(
        width,
        height,
        blocks,
        "ocr",
        words=[Word(w.text.strip(), points(w)) for w in words if w.text.strip()],
    )


def _union(boxes: Sequence[TextBox]) -> TextBox:
    return TextBox(
        min(b.x0 for b in boxes),
        min(b.y0 for b in boxes),
        max(b.x1 for b in boxes),
        max(b.y1 for b in boxes),
        "",
    )
