"""Blocks of a born-digital page, from pymupdf4llm's page boxes.

With ``page_chunks=True`` pymupdf4llm returns, beside the page's Markdown, the layout
model's boxes (pymupdf-layout's classes) in reading order, each with the span of the Markdown
it produced: the box and its Markdown come from the same pass, so nothing is matched after
the fact.
"""

from __future__ import annotations

import re
from typing import Any

from model.layout.schema import Block, PageLayout, whole_page_layout
from model.postprocess import tidy_markdown
from model.steps import page_step

# pymupdf-layout's classes → Folio's block types.
_TYPES = {
    "title": "title",
    "section-header": "heading",
    "text": "paragraph",
    "list-item": "list_item",
    "table": "table",
    "formula": "formula",
    "picture": "figure",
    "caption": "caption",
    "footnote": "footnote",
    "page-header": "page_header",
    "page-footer": "page_footer",
}
_HEADING = re.compile(r"^(#{1,6}) ")


def _one_block(chunk: dict[str, Any], size: tuple[float, float]) -> PageLayout:
    """The page's text as one block over the whole page."""
    return whole_page_layout(str(chunk.get("text") or ""), size)


@page_step("layout blocks", fallback=_one_block)
def text_layer_layout(chunk: dict[str, Any], size: tuple[float, float]) -> PageLayout:
    """The page's blocks from one ``pymupdf4llm.to_markdown(..., page_chunks=True)`` chunk.

    Boxes whose Markdown was left out (running heads when they are dropped) are left out
    too; a figure keeps its box even without text, so that it can be shown and cited."""
    text = chunk.get("text") or ""
    blocks = []
    for box in chunk.get("page_boxes") or []:
        start, end = box.get("pos") or (0, 0)
        markdown = tidy_markdown(text[start:end]).strip()
        kind = _TYPES.get(str(box.get("class")), "paragraph")
        if not markdown and kind != "figure":
            continue
        blocks.append(_block(kind, markdown, box["bbox"]))
    width, height = size
    return PageLayout(width, height, blocks, "text-layer")


def _block(kind: str, markdown: str, bbox: Any) -> Block:
    level = None
    heading = _HEADING.match(markdown)
    if kind in ("title", "heading"):
        level = len(heading.group(1)) if heading else (1 if kind == "title" else 2)
    elif heading:
        # The layout model called it text, the Markdown writer set it as a heading: the
        # Markdown is what readers see, so the block follows it.
        kind, level = "heading", len(heading.group(1))
    x0, y0, x1, y1 = (float(v) for v in bbox)
    return Block(kind, markdown, (x0, y0, x1, y1), level=level)
