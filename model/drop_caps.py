"""A born-digital page's drop caps put back at the front of the word they begin.

A drop cap is a letter set two or three lines tall at the start of a paragraph, its word's
rest on the first line beside it ("W" + "HEN the river rose"). MuPDF gives it a line of its
own whose baseline is the last line's it drops beside, and pymupdf4llm joins it to that line:
"… and into Wthe lower street", the paragraph opening "HEN the river". Here the letter is
taken from where it landed and set before the first line beside it. Only where both are
found in the Markdown, once each; otherwise the Markdown stays as it is."""

from __future__ import annotations

import re
import statistics
from typing import Any

# A drop cap is a lone letter at least this many times the size of the page's usual text.
CAP_SIZE = 1.8
# The lines beside it start within this many body sizes to its right.
REACH = 3.0
# So many characters of a line's start find it in the Markdown.
PROBE = 12


def join_drop_caps(markdown: str, page_dict: dict[str, Any]) -> str:
    lines = [
        (line["bbox"], "".join(span["text"] for span in line["spans"]), line["spans"])
        for block in page_dict.get("blocks", [])
        for line in block.get("lines", [])
        if line.get("spans")
    ]
    sizes = [span["size"] for _, _, spans in lines for span in spans if span["text"].strip()]
    if len(lines) < 3 or not sizes:
        return markdown
    body = statistics.median(sizes)
    for bbox, text, spans in lines:
        letter = text.strip()
        if (
            len(letter) != 1
            or not letter.isalpha()
            or max(s["size"] for s in spans) < CAP_SIZE * body
        ):
            continue
        x0, y0, x1, y1 = bbox
        beside = sorted(
            (other_box, other.strip())
            for other_box, other, _ in lines
            if other.strip()
            and other_box is not bbox
            and x1 - body <= other_box[0] <= x1 + REACH * body
            and y0 <= (other_box[1] + other_box[3]) / 2 <= y1
        )
        if len(beside) < 2:
            continue
        markdown = _moved(markdown, letter, beside[0][1], [t for _, t in beside[1:]])
    return markdown


def _moved(markdown: str, letter: str, first: str, others: list[str]) -> str:
    """``letter`` removed from before one of ``others`` and set before ``first``."""
    head = re.escape(first[:PROBE])
    opening = [m for m in re.finditer(rf"(?<![^\W\d_]){head}", markdown)]
    if len(opening) != 1 or markdown[: opening[0].start()].endswith(letter):
        return markdown
    for other in others:
        stray = list(re.finditer(rf"{re.escape(letter)} ?(?={re.escape(other[:PROBE])})", markdown))
        if len(stray) != 1:
            continue
        s0, s1 = stray[0].span()
        at = opening[0].start()
        if at > s0:
            at -= s1 - s0
        without = markdown[:s0] + markdown[s1:]
        return without[:at] + letter + without[at:]
    return markdown
