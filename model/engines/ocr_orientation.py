"""Which way up a scanned page is: RapidOCR's orientation classifier over the page's longest
lines, its upside-down verdict checked by reading those lines both ways, and boxes turned
back onto the upright page."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from model.scan_lines import TextBox

# How many of a page's longest lines vote on its orientation.
ORIENTATION_SAMPLE = 8


def page_rotation(boxes: list[TextBox], pixels: np.ndarray, classifier: Any) -> int:
    """How far clockwise the page was turned before it was scanned: 0, 90, 180 or 270.

    Lines standing upright (taller than wide, RapidOCR's own 1.5 rule) mean a sideways page.
    RapidOCR turns such a crop 90° counter-clockwise before reading it, so its classifier
    saying "0" for that crop means the page was turned clockwise, "180" counter-clockwise.
    """
    vertical = sum(1 for b in boxes if b.height >= 1.5 * (b.x1 - b.x0))
    sideways = vertical > len(boxes) / 2
    sample = sorted(boxes, key=lambda b: max(b.height, b.x1 - b.x0), reverse=True)
    votes: defaultdict[str, float] = defaultdict(float)
    for box in sample[:ORIENTATION_SAMPLE]:
        crop = pixels[int(box.y0) : int(box.y1) + 1, int(box.x0) : int(box.x1) + 1]
        if crop.size == 0:
            continue
        if sideways:
            crop = np.ascontiguousarray(np.rot90(crop))
        label, score = _classify(classifier, crop)
        votes[label] += score
    if sideways:
        return 270 if votes["180"] > votes["0"] else 90
    # Upside-down pages are rare and a few doubtful crops (a logo, a stray mark) should not
    # turn an upright page over: it takes a clear majority.
    return 180 if votes["180"] > 2 * votes["0"] else 0


def reads_better_turned(boxes: list[TextBox], pixels: np.ndarray, reader: Any) -> bool:
    """Whether the page's longest lines read with more confidence turned 180° than as they
    are. The orientation classifier alone is not enough: on an upright Google Docs page scanned
    with noise it voted "180" for six of eight lines (0.5-0.99), and the page came out upside
    down, last line first. Reading a line upside down gives low-confidence garbage."""
    sample = sorted(boxes, key=lambda b: b.x1 - b.x0, reverse=True)[:ORIENTATION_SAMPLE]
    as_is = turned = 0.0
    for box in sample:
        crop = pixels[int(box.y0) : int(box.y1) + 1, int(box.x0) : int(box.x1) + 1]
        if crop.size == 0:
            continue
        as_is += _read_score(reader, crop)
        turned += _read_score(reader, np.ascontiguousarray(np.rot90(crop, 2)))
    return turned > as_is


def crop_line(pixels: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """A line's four-cornered box cut out of the page and set level, as RapidOCR cuts it
    for its recognizer."""
    from rapidocr.utils.process_img import get_rotate_crop_image

    return np.asarray(get_rotate_crop_image(pixels, quad))


def _read_score(reader: Any, crop: np.ndarray) -> float:
    result = reader(crop)
    scores = getattr(result, "scores", None)
    texts = getattr(result, "txts", None)
    if not scores or not texts:
        return 0.0
    # Confidence times length: a confident one-letter reading of a whole line is no reading.
    return float(scores[0]) * len(str(texts[0]).strip())


def _classify(classifier: Any, crop: np.ndarray) -> tuple[str, float]:
    result = classifier(crop)
    labels = getattr(result, "cls_res", None)
    if not labels:
        return "0", 0.0
    label, score = labels[0]
    return ("180" if "180" in str(label) else "0"), float(score)


def unrotate(box: TextBox, rotation: int, width: int, height: int) -> TextBox:
    """A box in the scanned image's pixels → the same box on the upright page."""
    if rotation == 90:  # upright (x, y) was drawn at (height_up - y, x)
        return TextBox(box.y0, width - box.x1, box.y1, width - box.x0, box.text)
    if rotation == 270:
        return TextBox(height - box.y1, box.x0, height - box.y0, box.x1, box.text)
    if rotation == 180:
        return TextBox(width - box.x1, height - box.y1, width - box.x0, height - box.y0, box.text)
    return box
