"""Doubtful OCR lines read again the way the page itself reads.

RapidOCR's per-line orientation classifier turns single lines upside down when it believes
them upside down (over 0.9), and then reads the turned crop. On an upright page it does so
for lines that look alike both ways round: the aviation handbook's scan had its italic
heading "Stainless Steel Self-Locking Nut" voted "180" at 0.999, read as "i Saice  ins" at
0.44 and dropped, and the line "and key and a thread insert ..." read as "ana  s  a a  and".
Read as the page is oriented, both come out right (0.99).

The page's own orientation is known better than any one line's (it is decided by the engine
from its longest lines, and checked by reading them both ways), so a line read with low
confidence is read once more in that orientation, and the reading with more confidence (times
its length: a confident single letter is no reading of a whole line) is kept. A line that
really is turned against the page (a label set upside down) reads worse that way, and keeps
its first reading. Only doubtful lines pay for it: a few recognitions a page, when any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from model.steps import page_step, unchanged

# Lines read with less confidence than this are read again. The same level the quality
# signal ``line_confidence`` calls a misreading (on the real scans every line under it was).
REREAD_BELOW = 0.75


@dataclass
class OcrLines:
    """RapidOCR's output as plain lists (boxes are four-cornered, in the image's pixels;
    ``word_results`` one entry per line when words were asked for, else empty)."""

    boxes: list[Any]
    txts: list[str]
    scores: list[float]
    word_results: list[Any]
    reread: int = 0  # how many lines took their second reading


@page_step("line re-reading", fallback=unchanged)
def reread_doubtful(
    output: Any, pixels: np.ndarray, rotation: int, reader: Any, crop: Any
) -> OcrLines | Any:
    """``output`` with its doubtful lines read again turned as the page is (``rotation`` 0 or
    180; other pages are left as they are). ``reader`` is a recognition-only RapidOCR,
    ``crop(pixels, quad)`` RapidOCR's own crop of a four-cornered box."""
    boxes, txts = getattr(output, "boxes", None), getattr(output, "txts", None)
    scores = getattr(output, "scores", None)
    if boxes is None or txts is None or scores is None or rotation not in (0, 180):
        return output
    doubtful = [i for i, score in enumerate(scores) if float(score) < REREAD_BELOW]
    if not doubtful:
        return output
    words = list(getattr(output, "word_results", None) or ())
    lines = OcrLines(list(boxes), [str(t) for t in txts], [float(s) for s in scores], words)
    for i in doubtful:
        quad = np.asarray(boxes[i], dtype=np.float32)
        width = float(np.linalg.norm(quad[1] - quad[0]))
        height = float(np.linalg.norm(quad[3] - quad[0]))
        if height >= 1.5 * width:
            continue  # a standing line: which way it reads is not the page's question
        image = crop(pixels, quad.copy())
        if rotation == 180:
            image = np.ascontiguousarray(np.rot90(image, 2))
        text, score = _read(reader, image)
        if _worth(text, score) <= _worth(lines.txts[i], lines.scores[i]):
            continue
        lines.txts[i], lines.scores[i] = text, score
        if len(words) == len(lines.txts):
            lines.word_results[i] = spread_words(text, score, quad, rotation)
        lines.reread += 1
    return lines


def _read(reader: Any, image: np.ndarray) -> tuple[str, float]:
    result = reader(image)
    texts, scores = getattr(result, "txts", None), getattr(result, "scores", None)
    if not texts or not scores:
        return "", 0.0
    return str(texts[0]), float(scores[0])


def _worth(text: str, score: float) -> float:
    return score * len(text.strip())


def spread_words(text: str, score: float, quad: np.ndarray, rotation: int) -> tuple[Any, ...]:
    """Word boxes for a line read again (the recognizer alone gives none): each word its
    share of the line by characters, along the box as the page reads it, the spaces shared
    out between neighbours so that the words cover the whole line (the ink a line's words
    leave uncovered is a review signal's question, ``model.engines.ocr_coverage``)."""
    start, end = (quad[0], quad[1]) if rotation == 0 else (quad[2], quad[3])
    down = quad[3] - quad[0] if rotation == 0 else quad[1] - quad[2]
    total = max(len(text), 1)
    starts, position = [], 0
    for word in text.split():
        starts.append((word, text.index(word, position)))
        position = starts[-1][1] + len(word)
    found: list[tuple[str, float, list[list[float]]]] = []
    for k, (word, begin) in enumerate(starts):
        first = 0 if k == 0 else begin
        last = starts[k + 1][1] if k + 1 < len(starts) else total
        a = start + (end - start) * (first / total)
        b = start + (end - start) * (last / total)
        corners = [a, b, b + down, a + down]
        found.append((word, score, [[float(p[0]), float(p[1])] for p in corners]))
    return tuple(found)
