"""Blocks of a page read by a vision-language model, from its grounding tags.

DeepSeek-OCR (and jina-ocr-v1, a post-trained DeepSeek-OCR) asked for grounding writes each
block as ``<|ref|>label<|/ref|><|det|>[[x0, y0, x1, y1], ...]<|/det|>`` followed by its
text, boxes on a 0-999 scale of the page image (DeepSeek-OCR's own
``DeepSeek-OCR-vllm/run_dpsk_ocr_image.py`` scales them back as ``x / 999 * width``).
That script names the labels ``title`` and ``image``; the other labels a model writes are
mapped by their name below, and anything unknown is a paragraph. A page without tags is
left to the pipeline, which makes the whole page one block.
"""

from __future__ import annotations

import re

from model.layout.schema import Block, PageLayout
from model.postprocess import GROUNDING_SCALE, tidy_markdown
from model.steps import nothing, page_step

_TAG = re.compile(
    r"<\|ref\|>(?P<label>.*?)<\|/ref\|>\s*<\|det\|>(?P<boxes>.*?)<\|/det\|>", re.DOTALL
)
_BOX = re.compile(r"\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")
_STRAY = re.compile(r"<\|(?:/?ref|/?det|grounding)\|>|<｜end▁of▁sentence｜>")
_HEADING = re.compile(r"^(#{1,6}) ")

_TYPES = {
    "title": "title",
    "sub_title": "heading",
    "subtitle": "heading",
    "heading": "heading",
    "text": "paragraph",
    "paragraph": "paragraph",
    "list": "list_item",
    "list_item": "list_item",
    "table": "table",
    "equation": "formula",
    "formula": "formula",
    "image": "figure",
    "figure": "figure",
    "footnote": "footnote",
    "header": "page_header",
    "page_header": "page_header",
    "footer": "page_footer",
    "page_footer": "page_footer",
}


@page_step("layout blocks", fallback=nothing)
def grounded_layout(text: str, size: tuple[float, float]) -> PageLayout | None:
    """The blocks a model's raw output locates, boxes in points of a ``size`` page; ``None``
    when it has no grounding tags."""
    matches = list(_TAG.finditer(text.replace("\r\n", "\n")))
    if not matches:
        return None
    text = text.replace("\r\n", "\n")
    width, height = size
    blocks = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        markdown = tidy_markdown(_STRAY.sub("", text[match.end() : end])).strip()
        boxes = [tuple(int(v) for v in b) for b in _BOX.findall(match.group("boxes"))]
        if not boxes:
            continue
        kind = _block_type(match.group("label"))
        if kind == "figure":
            markdown = ""  # the page's Markdown links the crop, when crops were asked for
        elif not markdown:
            continue
        x0 = min(min(b[0], b[2]) for b in boxes) / GROUNDING_SCALE * width
        y0 = min(min(b[1], b[3]) for b in boxes) / GROUNDING_SCALE * height
        x1 = max(max(b[0], b[2]) for b in boxes) / GROUNDING_SCALE * width
        y1 = max(max(b[1], b[3]) for b in boxes) / GROUNDING_SCALE * height
        bbox = (max(0.0, x0), max(0.0, y0), min(width, x1), min(height, y1))
        heading = _HEADING.match(markdown)
        level = None
        if heading:
            kind = "title" if kind == "title" else "heading"
            level = len(heading.group(1))
        elif kind in ("title", "heading"):
            level = 1 if kind == "title" else 2
        blocks.append(Block(kind, markdown, bbox, level=level))
    return PageLayout(width, height, blocks, "grounding")


def _block_type(label: str) -> str:
    label = label.strip().lower()
    if label in _TYPES:
        return _TYPES[label]
    if "caption" in label:
        return "caption"
    return "paragraph"
