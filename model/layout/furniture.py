"""A page's running heads and feet as the layout model marks them, dropped from its Markdown
unless they hold a formula.

pymupdf4llm's layout model labels a page's boxes, ``page-header`` and ``page-footer`` among
them, and leaves those out of the Markdown when asked to (``header=False, footer=False``).
The label is the model's guess from a box's place and shape: a short line centred at the foot
of a page reads as a page foot to it even when it is the page's last displayed formula (the
equation that closes docling's ``text_document_01``, ``X² + Y₂ = Z``, was lost so). A formula
is never furniture, so the engine asks pymupdf4llm for every box and cuts the heads and feet
out of the chunk itself (``drop_furniture``), keeping the ones with a formula on a line
(``model.formulas.line_formula``, ``model.math_runs.line_math_runs``). Asking once for every
box also answers, without a second pass of the layout model, what to do with a page whose
only text the model called a head or foot: it is kept (an empty page is worse than a page
number).
"""

from __future__ import annotations

from typing import Any

from model.formulas import line_formula
from model.layout.reading_order import boxes_tile
from model.math_runs import line_math_runs
from model.postprocess import tidy_markdown

FURNITURE = {"page-header", "page-footer"}


def drop_furniture(chunk: dict[str, Any], page_dict: dict[str, Any]) -> dict[str, Any] | None:
    """``chunk`` (one page of ``pymupdf4llm.to_markdown(..., page_chunks=True)`` with heads and
    feet kept) without the text of its head and foot boxes, each box's ``pos`` moved to match
    and a dropped box's made empty, as pymupdf4llm leaves them when it drops them itself. Boxes
    holding a formula stay (their lines read from ``page_dict``, the page's
    ``get_text("dict")``); so does everything where every box with text is a head or foot.
    None where the boxes do not tile the chunk's text (it cannot be cut by box)."""
    text = chunk.get("text") or ""
    boxes = chunk.get("page_boxes") or []
    if not any(box.get("class") in FURNITURE for box in boxes):
        return chunk
    if not boxes_tile(text, boxes):
        return None
    pieces, moved, offset = [], [], 0
    for box in boxes:
        start, end = box["pos"]
        if box.get("class") in FURNITURE and not holds_formula(page_dict, box["bbox"]):
            end = start
        pieces.append(text[start:end])
        moved.append({**box, "pos": (offset, offset + end - start)})
        offset += end - start
    kept = "".join(pieces)
    if not tidy_markdown(kept):
        return chunk
    return {**chunk, "text": kept, "page_boxes": moved}


def holds_formula(page_dict: dict[str, Any], bbox: Any) -> bool:
    """Whether a line of ``page_dict`` (``page.get_text("dict")``) whose middle lies inside
    ``bbox`` is a formula by its glyphs: scripts or a math font around a relation."""
    x0, y0, x1, y1 = (float(v) for v in bbox)
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            left, top, right, bottom = line.get("bbox", (0, 0, 0, 0))
            if not (x0 <= (left + right) / 2 <= x1 and y0 <= (top + bottom) / 2 <= y1):
                continue
            spans = line.get("spans", [])
            if line_math_runs(spans) or line_formula(spans) is not None:
                return True
    return False
