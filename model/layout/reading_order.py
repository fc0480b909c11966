"""Blocks of a page in the order a person reads them: column by column, by cuts along the
whitespace between the blocks (a recursive XY-cut).

pymupdf-layout's reading order goes by rows on some two-column pages: on the aviation
handbook's page, the right column's top, a heading and its paragraph came between two
paragraphs of the left column, each paragraph under the wrong heading. Here a set of blocks is
read as:

- columns, left to right, where a vertical strip of whitespace runs down through all of them
  (each column read the same way in its turn);
- otherwise bands, top to bottom, cut at the horizontal strips of whitespace; a band that
  holds columns is read together with the bands after it as long as a vertical gutter still
  runs through all of them, so that two columns whose paragraphs happen to end at the same
  height are not read across, and a block that spans the gutter (a title, a full-width
  figure or note) closes the columns above it and opens those below;
- a band that cannot be cut keeps the order it came in (overlapping boxes: the layout
  model's order is all there is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
Box = tuple[float, float, float, float]

# A gutter narrower than this (in points) is not a gap: the layout model's picture boxes
# are padded, and the handbook's two figures stand 3 pt apart with their columns 8 pt apart.
MIN_GUTTER = 2.0


def reading_order(items: Sequence[T], box: Callable[[T], Box]) -> list[T]:
    """``items`` (each with a box x0, y0, x1, y1) in reading order, ties in the given order."""
    return _order(list(items), box)


def _order(items: list[T], box: Callable[[T], Box]) -> list[T]:
    if len(items) < 2:
        return items
    columns = split_at_gaps(items, box, axis=0)
    if len(columns) > 1:
        return [item for column in columns for item in _order(column, box)]
    bands = split_at_gaps(items, box, axis=1)
    if len(bands) == 1:
        return items
    # Columns begin at a band that has columns of its own; a band of one column (a column's
    # last paragraph where the other has ended) goes on with them while the gutter runs
    # through both. Two one-column bands on either side of the page (a centred subtitle
    # over a heading set flush left) are not columns.
    groups: list[list[T]] = []
    columned = False
    for band in bands:
        if groups and columned and len(split_at_gaps(groups[-1] + band, box, axis=0)) > 1:
            groups[-1] = groups[-1] + band
            continue
        groups.append(band)
        columned = len(split_at_gaps(band, box, axis=0)) > 1
    if len(groups) == 1:
        # Every band shares the gutter, so the whole has it too; cannot happen, but never loop.
        return items
    return [item for group in groups for item in _order(group, box)]


def split_at_gaps(
    items: list[T], box: Callable[[T], Box], *, axis: int, min_gap: float = MIN_GUTTER
) -> list[list[T]]:
    """``items`` cut at every gap of at least ``min_gap`` along ``axis`` (0: across the
    page, giving columns; 1: down it, giving bands), each part in the given order."""
    spans = sorted(
        ((box(item)[axis], box(item)[axis + 2], index) for index, item in enumerate(items)),
        key=lambda span: (span[0], span[1]),
    )
    parts: list[list[int]] = []
    reach = float("-inf")
    for start, end, index in spans:
        if not parts or start - reach >= min_gap:
            parts.append([index])
        else:
            parts[-1].append(index)
        reach = max(reach, end)
    return [[items[index] for index in sorted(part)] for part in parts]


def reorder_chunk(chunk: dict[str, Any], together: Sequence[Sequence[Box]] = ()) -> dict[str, Any]:
    """A pymupdf4llm page chunk with its boxes, and their Markdown, in reading order.

    Each box carries the span of the chunk's text it wrote (``pos``); the text is put back
    together from those spans in the new order. A chunk whose spans do not tile its text
    (text outside every box) is returned as it is, since moving its boxes would lose that.
    Each run of boxes in ``together`` (by their boxes, within ``SAME_BOX`` points: the
    halves of a box cut in two, ``model.layout.side_panels``) is read as one block, its
    boxes one after the other in that order, where the chunk holds them all."""
    text = chunk.get("text") or ""
    boxes = chunk.get("page_boxes") or []
    if len(boxes) < 2 or not boxes_tile(text, boxes):
        return chunk
    units = _units(boxes, together)
    ordered = [box for unit in reading_order(units, _units_bbox) for box in unit]
    if ordered == boxes:
        return chunk
    pieces, moved, offset = [], [], 0
    for box in ordered:
        start, end = box["pos"]
        pieces.append(text[start:end])
        moved.append({**box, "pos": (offset, offset + end - start)})
        offset += end - start
    return {**chunk, "text": "".join(pieces), "page_boxes": moved}


# pymupdf4llm writes a box's bbox from the layout model's, rounded: this far apart is the same.
SAME_BOX = 2.0


def _units(
    boxes: list[dict[str, Any]], together: Sequence[Sequence[Box]]
) -> list[list[dict[str, Any]]]:
    """The boxes as the blocks to order: each run of ``together`` found among them one block,
    every other box a block of its own, in the boxes' order (a run where its first is)."""
    run_of: dict[int, list[int]] = {}
    for run in together:
        found = [_find(boxes, wanted) for wanted in run]
        if all(index is not None for index in found) and len(set(found)) == len(found):
            indices = [index for index in found if index is not None]
            if not any(index in run_of for index in indices):
                for index in indices:
                    run_of[index] = indices
    units = []
    for index, box in enumerate(boxes):
        members = run_of.get(index)
        if members is None:
            units.append([box])
        elif index == min(members):
            units.append([boxes[i] for i in members])
    return units


def _find(boxes: list[dict[str, Any]], wanted: Box) -> int | None:
    for index, box in enumerate(boxes):
        if "bbox" in box and all(
            abs(a - b) <= SAME_BOX for a, b in zip(_bbox(box), wanted, strict=True)
        ):
            return index
    return None


def _units_bbox(unit: list[dict[str, Any]]) -> Box:
    return enclosing([_bbox(box) for box in unit])


def enclosing(boxes: Sequence[Box]) -> Box:
    """The smallest box holding all of ``boxes``."""
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _bbox(box: dict[str, Any]) -> Box:
    x0, y0, x1, y1 = (float(v) for v in box["bbox"])
    return x0, y0, x1, y1


def boxes_tile(text: str, boxes: list[dict[str, Any]]) -> bool:
    """Whether the boxes' spans, in their order, cover the text end to end without overlap."""
    offset = 0
    for box in boxes:
        pos = box.get("pos")
        if not pos or "bbox" not in box or pos[0] != offset or pos[1] < pos[0]:
            return False
        offset = pos[1]
    return offset == len(text)
