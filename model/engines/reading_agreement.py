"""Two independent readings of the same lines, compared: the ``agreement`` review signal's
measurement (``model.quality.independent_signals``).

- A page with a text layer (born-digital, or a scan carrying an OCR layer): some of the
  layer's lines are drawn from the page and read by the recognizer, and each reading is
  compared with what the layer says is there. A layer whose text is not what the page shows
  (another program's poor OCR, a font whose Unicode map lies, text hidden behind a picture)
  disagrees, whichever reading is wrong.
- A scan: some of the OCR's own lines are read a second time from a different rendering of
  their pixels (enlarged and binarised), and the two readings compared. A line read right
  reads the same both ways; a line the recognizer guesses at does not.

Lines are sampled evenly down the page (``SAMPLE_LINES`` at most), and only those the bundled
recognizer can read at all (Latin, Chinese and Japanese characters: not Arabic, Hebrew or
Korean, ``model.engines.local``'s ``MAX_UNREAD_SHARE`` note) and long enough to compare. The
agreement is the mean of the lines' similarities (rapidfuzz's ratio of their letters and
digits, lower-cased), weighted by length; ``None`` where no line qualifies.
"""

from __future__ import annotations

import logging
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymupdf
from PIL import Image
from rapidfuzz import fuzz

logger = logging.getLogger(__name__)

# Lines compared a page, at most; the first FIRST_LINES (spread over the page) are read on
# every page, the others only where one of those disagrees: most pages pay four recognitions.
SAMPLE_LINES = 12
FIRST_LINES = 4
# A line read this alike both ways agrees; under it, the rest of the sample is read too.
AGREES = 0.9
# Lines with fewer letters and digits than this say little when they differ.
MIN_LINE_CHARS = 8
# The recognizer's input is 48 pixels high; a line is drawn at about that height.
LINE_PIXELS = 48
MAX_ZOOM = 8.0
# Scripts the bundled recognizer reads (the first word of a letter's Unicode name).
READABLE_SCRIPTS = {"LATIN", "DIGIT", "CJK", "HIRAGANA", "KATAKANA", "FULLWIDTH"}


@dataclass(frozen=True)
class LinePair:
    """One line as the first reading has it, and as the second one does."""

    first: str
    second: str

    @property
    def similarity(self) -> float:
        return fuzz.ratio(letters(self.first), letters(self.second)) / 100.0


def letters(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def readable(text: str) -> bool:
    """Whether a line is worth reading again: long enough, and in scripts the recognizer
    knows."""
    chars = [ch for ch in text if ch.isalnum()]
    if len(chars) < MIN_LINE_CHARS:
        return False
    return all(_script(ch) in READABLE_SCRIPTS for ch in chars)


def _script(char: str) -> str:
    if char.isdigit():
        return "DIGIT"
    try:
        return unicodedata.name(char).split(" ", 1)[0]
    except ValueError:
        return ""


def _evenly(items: list[Any], count: int) -> list[Any]:
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def agreement(pairs: list[LinePair]) -> dict[str, Any] | None:
    """What ``PageResult.extra["agreement"]`` holds: the length-weighted mean similarity, the
    lines compared, and the line that disagrees most (its two readings)."""
    if not pairs:
        return None
    weights = [max(len(letters(p.first)), 1) for p in pairs]
    similarities = [p.similarity for p in pairs]
    mean = sum(w * s for w, s in zip(weights, similarities, strict=True)) / sum(weights)
    worst = min(range(len(pairs)), key=lambda i: similarities[i])
    return {
        "agreement": round(mean, 3),
        "lines": len(pairs),
        "worst": [pairs[worst].first[:60], pairs[worst].second[:60], round(similarities[worst], 3)],
    }


# --- a text layer against the page as drawn ------------------------------------------------------

# A run of words of about this many characters is read from each sampled line: recognition
# costs grow with a crop's width, and a few words tell a right layer from a wrong one.
SEGMENT_CHARS = 24


def _segment(words: list[tuple[str, Any]]) -> tuple[str, Any] | None:
    """The line's first words up to about ``SEGMENT_CHARS`` characters, and their boxes."""
    taken: list[tuple[str, Any]] = []
    for word in words:
        taken.append(word)
        if sum(len(text) + 1 for text, _ in taken) >= SEGMENT_CHARS:
            break
    text = " ".join(text for text, _ in taken)
    return (text, [box for _, box in taken]) if readable(text) else None


def text_layer_lines(
    page: pymupdf.Page, textpage: pymupdf.TextPage | None = None
) -> list[tuple[str, np.ndarray]]:
    """Sampled runs of words of the page's text layer (from ``textpage`` where given), one a
    line, each with its drawing at about the recognizer's height (RGB pixels). Call under
    MuPDF's lock; reading them needs none."""
    lines: dict[tuple[int, int], list[tuple[str, Any]]] = {}
    for x0, y0, x1, y1, word, block, line, _ in page.get_text("words", textpage=textpage):
        lines.setdefault((block, line), []).append((word, pymupdf.Rect(x0, y0, x1, y1)))
    candidates = []
    for words in lines.values():
        segment = _segment(words)
        if segment is None:
            continue
        text, boxes = segment
        box = pymupdf.Rect(boxes[0])
        for other in boxes[1:]:
            box |= other
        # Horizontal lines only: a word box much taller than wide is set sideways.
        if box.width > box.height:
            candidates.append((text, box))
    chosen = _evenly(sorted(candidates, key=lambda c: (c[1].y0, c[1].x0)), SAMPLE_LINES)
    if not chosen:
        return []
    drawing = page.get_displaylist()
    found = []
    for text, box in chosen:
        zoom = min(MAX_ZOOM, LINE_PIXELS / box.height)
        # A margin of a fifth of the line's height, as the detector's boxes have.
        margin = box.height / 5
        clip = (box + (-margin, -margin, margin, margin)) & page.rect
        pix = drawing.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), clip=clip, alpha=False)
        image = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
        found.append((text, np.asarray(image)))
    return found


def read_lines(lines: list[tuple[str, np.ndarray]], reader: Any) -> list[LinePair]:
    """Lines' drawings read by ``reader`` (a recognition-only RapidOCR), beside the text the
    first reading gave each: ``FIRST_LINES`` of them spread over the sample, and the rest
    only where one of those disagrees."""
    first = set(_evenly(list(range(len(lines))), FIRST_LINES))
    pairs = {i: LinePair(lines[i][0], _read(reader, lines[i][1])) for i in sorted(first)}
    if any(pair.similarity < AGREES for pair in pairs.values()):
        for i, (text, pixels) in enumerate(lines):
            if i not in pairs:
                pairs[i] = LinePair(text, _read(reader, pixels))
    return [pairs[i] for i in sorted(pairs)]


def measured(lines: list[tuple[str, np.ndarray]], reader: Any) -> dict[str, Any] | None:
    """The agreement of ``lines`` read again (``agreement``), or ``None`` with none to read."""
    return agreement(read_lines(lines, reader))


# --- a scan's lines, read a second time ----------------------------------------------------------


def second_pass_lines(
    words: Any, pixels: np.ndarray, rotation: int
) -> list[tuple[str, np.ndarray]]:
    """Sampled runs of words of an OCR reading (RapidOCR's ``word_results``: per line, its
    words with their four-cornered boxes in the image's pixels), one a line, each cut out of
    the image, turned as the page reads, then enlarged and binarised: a second rendering of
    the same ink for a second reading."""
    if not words or rotation not in (0, 180):
        return []
    candidates = []
    for line in words:
        segment = _segment([(str(word), box) for word, _score, box in line])
        if segment is not None:
            candidates.append(segment)
    found = []
    height, width = pixels.shape[:2]
    for text, boxes in _evenly(candidates, SAMPLE_LINES):
        points = np.asarray(boxes, dtype=np.float32).reshape(-1, 2)
        x0, y0 = np.floor(points.min(axis=0)).astype(int)
        x1, y1 = np.ceil(points.max(axis=0)).astype(int)
        margin = max(1, (y1 - y0) // 5)
        image = pixels[
            max(0, y0 - margin) : min(height, y1 + margin),
            max(0, x0 - margin) : min(width, x1 + margin),
        ]
        if image.size == 0:
            continue
        if rotation == 180:
            image = np.ascontiguousarray(np.rot90(image, 2))
        found.append((text, _binarised(image)))
    return found


def _binarised(image: np.ndarray) -> np.ndarray:
    """The crop enlarged 1.5 times and cut to black and white at Otsu's level."""
    grey = Image.fromarray(image).convert("L")
    grey = grey.resize(
        (max(1, grey.width * 3 // 2), max(1, grey.height * 3 // 2)), Image.Resampling.LANCZOS
    )
    values = np.asarray(grey)
    level = _otsu(values)
    return np.stack([np.where(values > level, 255, 0).astype(np.uint8)] * 3, axis=-1)


def _otsu(values: np.ndarray) -> int:
    histogram = np.bincount(values.ravel(), minlength=256).astype(float)
    total = histogram.sum()
    weights = np.cumsum(histogram)
    means = np.cumsum(histogram * np.arange(256))
    between = (means[-1] * weights - means * total) ** 2 / np.maximum(
        weights * (total - weights), 1e-9
    )
    return int(np.argmax(between))


def _read(reader: Any, pixels: np.ndarray) -> str:
    text = _recognized(reader, pixels)
    if letters(text):
        return text
    # Light text on a dark ground (a banner, a table's heading row) reads as nothing: read
    # the crop inverted too.
    return _recognized(reader, np.ascontiguousarray(255 - pixels))


def _recognized(reader: Any, pixels: np.ndarray) -> str:
    result = reader(pixels)
    texts = getattr(result, "txts", None)
    return str(texts[0]) if texts else ""


# --- measuring without failing the page ----------------------------------------------------------


def safely(measure: Any, *args: Any) -> list[Any] | None:
    """A measurement for the review signals, which must not fail the page's reading: its
    result as a list, or ``None`` if it raised."""
    try:
        return list(measure(*args))
    except Exception:
        logger.warning("%s not measured", getattr(measure, "__name__", measure), exc_info=True)
        return None


def second_reading(
    lines: list[Any] | None, reader: Any, *, drawing_seconds: float = 0.0
) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """``lines`` read again and their agreement (``None`` with none to compare; its
    ``seconds`` include ``drawing_seconds``, the time the lines took to draw), and the
    measurements that failed (``("agreement",)`` when the lines could not be drawn or read)."""
    if lines is None:
        return None, ("agreement",)
    started = time.perf_counter()
    try:
        found = measured(lines, reader)
    except Exception:
        logger.warning("the readings' agreement not measured", exc_info=True)
        return None, ("agreement",)
    if found is not None:
        found["seconds"] = round(drawing_seconds + time.perf_counter() - started, 4)
    return found, ()
