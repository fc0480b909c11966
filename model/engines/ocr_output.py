"""What RapidOCR returns for a page, made usable: the lines read with its usual confidence,
their boxes, the share of the detected text left unread, and the mean confidence."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from model.scan_lines import TextBox

# RapidOCR's own default: a line read with less confidence is dropped.
TEXT_SCORE = 0.5
# Past this share of the detected text (by area) left unread, the page is flagged. Measured
# on the real-page set's scans: Persian, Arabic and Korean pages leave 25-54 % unread where
# the detector finds their lines at all (the bundled recognition model reads Latin, Chinese
# and Japanese only), eight Latin pages 0-4.4 %.
MAX_UNREAD_SHARE = 0.2


def ocr_boxes(output: Any) -> list[TextBox]:
    if getattr(output, "boxes", None) is None or getattr(output, "txts", None) is None:
        return []
    boxes = []
    for points, text in zip(output.boxes, output.txts, strict=False):
        xs, ys = np.asarray(points)[:, 0], np.asarray(points)[:, 1]
        boxes.append(
            TextBox(float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()), str(text))
        )
    return boxes


@dataclass
class ConfidentReading:
    """RapidOCR's output less the lines read under ``TEXT_SCORE`` (what RapidOCR itself
    returns at its default), and the share of the detected text those lines held."""

    boxes: Any
    txts: Any
    scores: Any
    word_results: Any
    unread: float


def read_confidently(output: Any) -> ConfidentReading:
    boxes, txts = getattr(output, "boxes", None), getattr(output, "txts", None)
    scores = getattr(output, "scores", None)
    words = getattr(output, "word_results", None) or ()
    if boxes is None or txts is None or scores is None:
        return ConfidentReading(None, None, None, (), 0.0)
    keep = [i for i, score in enumerate(scores) if float(score) >= TEXT_SCORE]
    # RapidOCR's own filter leaves out of ``word_results`` the lines without words (those
    # read as nothing), so its entries are the lines with text, in order.
    with_text = [i for i, text in enumerate(txts) if str(text).strip()]
    by_line = dict(zip(with_text, words, strict=False)) if len(with_text) == len(words) else {}
    return ConfidentReading(
        boxes=np.asarray([boxes[i] for i in keep]),
        txts=tuple(txts[i] for i in keep),
        scores=tuple(scores[i] for i in keep),
        word_results=tuple(by_line[i] for i in keep if by_line.get(i)),
        unread=unread_share(output),
    )


def unread_share(output: Any) -> float:
    """The share of the detected lines' area whose reading fell under ``TEXT_SCORE``."""
    boxes, scores = getattr(output, "boxes", None), getattr(output, "scores", None)
    if boxes is None or scores is None or not len(boxes):
        return 0.0
    areas = []
    for points in boxes:
        xs, ys = np.asarray(points)[:, 0], np.asarray(points)[:, 1]
        areas.append(float((xs.max() - xs.min()) * (ys.max() - ys.min())))
    total = sum(areas)
    unread = sum(a for a, s in zip(areas, scores, strict=False) if float(s) < TEXT_SCORE)
    return round(unread / total, 3) if total else 0.0


def unread_notes(unread: float) -> list[str]:
    if unread <= MAX_UNREAD_SHARE:
        return []
    return [
        f"{unread:.0%} of the page's text could not be read: a script the bundled OCR models "
        "do not know (they read Latin, Chinese and Japanese; not Arabic, Hebrew or Korean), "
        "or print too damaged to read"
    ]


def mean_confidence(output: Any) -> float | None:
    scores = getattr(output, "scores", None)
    texts = getattr(output, "txts", None)
    if scores is None or texts is None or not len(scores):
        return None
    weights = [max(len(str(text)), 1) for text in texts]
    total = sum(w * float(s) for w, s in zip(weights, scores, strict=False))
    return round(total / sum(weights[: len(scores)]), 4)
