"""Ink inside a read OCR line that none of its recognised words covers: text the recogniser
skipped.

RapidOCR's detector finds lines of any script; its recognition models read Latin, Chinese and
Japanese. On a line that mixes a script it reads with one it does not ("habibi حبيبي"), the
recogniser returns the part it reads, with high confidence, while the line's box still spans
both: the rest of the box holds ink that no recognised word accounts for. Neither the line's
confidence nor the page's unread share (lines read under RapidOCR's own threshold) sees it.

Measured along each line kept after RapidOCR's filter: the columns (rows, for a vertical line)
with ink inside the line's quadrilateral and outside its words' boxes, widened by a fifth of
the line's height for the glyph edges the word boxes trim; those columns are joined across
gaps under half the line's height (letter and word spacing), and each run's width is kept in
line heights. The quality signal ``coverage`` judges the widths (``model.quality``).

Cost: a grey conversion of the page and a few array operations per line, about 10 ms a page
(``bench/review_costs.py``); it runs in the engine, on the pixels the OCR already has, so the
quality report's own timing does not include it.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from model.steps import nothing, page_step

# Grey level under which a pixel is ink (as ``model.quality.signals.INK_LEVEL``).
INK_LEVEL = 160
# A column is inked when this share of the line's height (and at least two pixels) is ink.
MIN_COLUMN_INK = 0.08
# Word boxes are widened by this share of the line's height on each side.
WORD_MARGIN = 0.2
# Inked columns closer than this (in line heights) belong to one stretch.
JOIN_GAP = 0.5
# Narrower stretches are not reported (a stray speck, a glyph edge); the signal's own
# threshold is higher.
MIN_REPORTED = 0.3


@page_step("unread-ink measurement", fallback=nothing)
def unread_stretches(pixels: np.ndarray, output: Any, min_score: float) -> list[list[Any]] | None:
    """``[width in line heights, the line's text]`` for every stretch of ink in a line read
    with at least ``min_score`` that none of its words covers, widest first; None when the
    reading has no word boxes to judge by (RapidOCR was not asked for them, or they cannot be
    matched to their lines)."""
    boxes, texts = getattr(output, "boxes", None), getattr(output, "txts", None)
    scores = getattr(output, "scores", None)
    words = getattr(output, "word_results", None)
    if boxes is None or texts is None or scores is None or not words:
        return None
    # RapidOCR leaves the lines read as nothing out of ``word_results``.
    with_text = [i for i, text in enumerate(texts) if str(text).strip()]
    if len(with_text) != len(words):
        return None
    words_of = dict(zip(with_text, words, strict=True))
    grey = pixels if pixels.ndim == 2 else cv2.cvtColor(pixels, cv2.COLOR_RGB2GRAY)
    ink = grey < INK_LEVEL
    found: list[list[Any]] = []
    for i, (quad, text, score) in enumerate(zip(boxes, texts, scores, strict=False)):
        if float(score) < min_score or i not in words_of:
            continue
        for width in _line_stretches(ink, np.asarray(quad, dtype=np.float32), words_of[i]):
            found.append([round(width, 2), str(text)])
    return sorted(found, key=lambda item: -item[0])


def _line_stretches(ink: np.ndarray, quad: np.ndarray, words: Any) -> list[float]:
    height, width = ink.shape
    x0, y0 = np.maximum(np.floor(quad.min(axis=0)).astype(int), 0)
    x1, y1 = np.minimum(np.ceil(quad.max(axis=0)).astype(int), [width, height])
    if x1 <= x0 or y1 <= y0:
        return []
    # The line's thickness: the mean length of its quadrilateral's two short sides.
    thick = float((np.linalg.norm(quad[0] - quad[3]) + np.linalg.norm(quad[1] - quad[2])) / 2)
    if thick < 2:
        return []
    vertical = (y1 - y0) > 2 * (x1 - x0)
    inside = np.zeros((y1 - y0, x1 - x0), dtype=np.uint8)
    cv2.fillPoly(inside, [np.round(quad - [x0, y0]).astype(np.int32)], 1)
    margin = WORD_MARGIN * thick
    for word in words or ():
        if len(word) < 3 or not str(word[0]).strip():
            continue
        points = np.asarray(word[2], dtype=np.float32) - [x0, y0]
        low, high = (
            (points[:, 1] if vertical else points[:, 0]).min(),
            (points[:, 1] if vertical else points[:, 0]).max(),
        )
        start, end = max(int(low - margin), 0), max(int(high + margin) + 1, 0)
        if vertical:
            inside[start:end, :] = 0
        else:
            inside[:, start:end] = 0
    left = ink[y0:y1, x0:x1] & inside.astype(bool)
    columns = left.sum(axis=1 if vertical else 0) >= max(2.0, MIN_COLUMN_INK * thick)
    return [
        (end - start) / thick
        for start, end in _runs(columns, JOIN_GAP * thick)
        if (end - start) / thick >= MIN_REPORTED
    ]


def _runs(flags: np.ndarray, gap: float) -> list[tuple[int, int]]:
    """Runs of True in ``flags``, joined across gaps of at most ``gap`` False entries."""
    where = np.flatnonzero(flags)
    if not where.size:
        return []
    breaks = np.flatnonzero(np.diff(where) > gap)
    starts = np.concatenate(([where[0]], where[breaks + 1]))
    ends = np.concatenate((where[breaks], [where[-1]])) + 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))
