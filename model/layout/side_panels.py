"""Panels set side by side inside one of the layout model's text boxes, told apart.

pymupdf-layout sometimes draws one ``text`` box around two panels that stand side by side:
a LaTeX manual's example (the source on a grey ground at the left, what it typesets in a
frame at the right), a framed sidebar beside its column. pymupdf4llm then writes the box's
lines top to bottom, so the two panels' lines interleave: in the Korean *lshort* (p. 55) the
source ``$x^{2} \\geq 0\\qquad \\text{for all } x \\in \\mathbb{R}$`` came out cut in two by
its own typeset formula, inside broken code spans.

``split_panels`` cuts such a box in two, one box a panel, before pymupdf4llm writes it; the
engine's reading order (``model.layout.reading_order``) then reads one panel after the other,
the pair as one block among the page's others (three examples down a page are read source,
result, source, result: not as two columns).

A box is cut only where all of these hold:

- its lines (those of one band of it, where gaps a line high run across it) fall into a
  left and a right group with a gutter between them that no line crosses, at least
  ``MIN_GUTTER_LINES`` line heights wide;
- the page draws a panel around a side: a filled shape, or a cluster of touching strokes (a
  frame of four rules), holding every line of that side and no line of the other;
- both sides are panelled, or else the two sides' lines do not stand on common baselines. A
  two-column list or a table the layout model took for text has its rows side by side on
  shared baselines, and is read row by row as before, even with its first column shaded.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pymupdf

from model.layout.reading_order import enclosing, split_at_gaps

Rect = tuple[float, float, float, float]

# A gap between the two groups narrower than this many line heights is a space in a table
# or a list, not a gutter between panels.
MIN_GUTTER_LINES = 2.0
# Lines whose bottoms lie within this share of a line's height stand on one baseline.
BASELINE_SHARE = 0.3
# Drawings near a box past this many are a chart or a diagram, not panels: left alone.
MAX_DRAWINGS = 300
# Touching strokes are clustered with this slack (points): a frame's rules meet at corners.
STROKE_SLACK = 1.0
# A panel is read as holding a line when the line lies inside it with this slack (points).
INSIDE_SLACK = 2.0


@contextmanager
def panels_apart() -> Iterator[list[tuple[Rect, Rect]]]:
    """PyMuPDF's layout model, for the duration, with side-by-side panels cut apart
    (``split_panels``; call under MuPDF's lock). What it gives is the list of the boxes cut,
    each as its two halves' boxes, filled as pages are laid out: the reading order keeps
    each pair together, left then right (``reorder_chunk``'s ``together``)."""
    model: Callable[..., Any] = pymupdf._get_layout
    cut: list[tuple[Rect, Rect]] = []

    def get_layout(page: pymupdf.Page, *args: Any, **kwargs: Any) -> Any:
        boxes = model(page, *args, **kwargs)
        if not isinstance(boxes, list):
            return boxes
        return split_panels(boxes, page.get_cdrawings, cut)

    pymupdf._get_layout = get_layout
    try:
        yield cut
    finally:
        pymupdf._get_layout = model


def split_panels(
    groups: list[Any],
    drawings: Callable[[], list[dict[str, Any]]],
    cut: list[tuple[Rect, Rect]] | None = None,
) -> list[Any]:
    """The layout model's raw groups (what pymupdf4llm asks for, ``return_raw=True``: each a
    dict with its ``class_name``, its ``group_bbox`` and its members' ``bboxes`` and
    ``indicies``) with each text group that holds panels side by side cut apart, the halves'
    boxes added to ``cut``. A group is first cut into bands where a gap of at least a line's
    height runs across it (examples one under another, boxed as one), and each band holding
    two panels becomes two groups; where none does, the group stays whole. ``drawings``
    gives the page's vector drawings (``Page.get_cdrawings``), asked for only where a band
    has a gutter. Groups of another shape are left as they are."""
    drawn = functools.cache(drawings)  # read once a page, and only if a band asks
    result: list[Any] = []
    for group in groups:
        parts = _cut(group, drawn, cut) if _is_text_group(group) else None
        result.extend(parts or [group])
    return result


def _cut(
    group: dict[str, Any],
    drawings: Callable[[], list[dict[str, Any]]],
    cut: list[tuple[Rect, Rect]] | None,
) -> list[dict[str, Any]] | None:
    """The group as its bands, each band with two panels as its two halves; None where no
    band holds two panels."""
    members = [_rect(box) for box in group["bboxes"]]
    parts: list[dict[str, Any]] = []
    pairs: list[tuple[Rect, Rect]] = []
    for band in _bands(members):
        sides = _sides(band)
        if sides is not None and _panelled(enclosing(band), sides, drawings()):
            parts += [_subgroup(group, members, side) for side in sides]
            pairs.append((enclosing(sides[0]), enclosing(sides[1])))
        else:
            parts.append(_subgroup(group, members, band))
    if not pairs:
        return None
    if cut is not None:
        cut.extend(pairs)
    return parts


def _is_text_group(group: Any) -> bool:
    if not isinstance(group, dict) or group.get("class_name") != "text":
        return False
    boxes, indices = group.get("bboxes"), group.get("indicies")
    return isinstance(boxes, list) and isinstance(indices, list) and len(boxes) == len(indices)


def _subgroup(group: dict[str, Any], members: list[Rect], these: list[Rect]) -> dict[str, Any]:
    """The group cut down to ``these`` of its members (in their order), and their box."""
    keep = [i for i, member in enumerate(members) if member in these]
    return {
        **group,
        "indicies": [group["indicies"][i] for i in keep],
        "bboxes": [group["bboxes"][i] for i in keep],
        "group_bbox": list(enclosing(these)),
    }


def _bands(lines: list[Rect]) -> list[list[Rect]]:
    """The lines cut where a gap at least a line's height high (the median line's) runs
    across them all, top to bottom."""
    return split_at_gaps(lines, lambda line: line, axis=1, min_gap=_median_height(lines))


def _median_height(lines: list[Rect]) -> float:
    heights = sorted(line[3] - line[1] for line in lines)
    return heights[len(heights) // 2]


def _sides(lines: list[Rect]) -> tuple[list[Rect], list[Rect]] | None:
    """The lines cut at the widest vertical gap that no line crosses, where it is at least
    ``MIN_GUTTER_LINES`` line heights wide: (left, right), or None."""
    if len(lines) < 2:
        return None
    ordered = sorted(lines)
    best: tuple[float, float] | None = None
    reach = ordered[0][2]
    for line in ordered[1:]:
        if line[0] > reach and (best is None or line[0] - reach > best[1] - best[0]):
            best = (reach, line[0])
        reach = max(reach, line[2])
    if best is None:
        return None
    if best[1] - best[0] < MIN_GUTTER_LINES * _median_height(lines):
        return None
    left = [line for line in lines if line[2] <= best[0]]
    right = [line for line in lines if line[0] >= best[1]]
    return left, right


def _panelled(
    box: Any, sides: tuple[list[Rect], list[Rect]], drawings: list[dict[str, Any]]
) -> bool:
    left, right = sides
    near = _near(box, drawings)
    if near is None:
        return False
    panels = _panels(near)
    left_panelled = any(_holds_only(panel, left, right) for panel in panels)
    right_panelled = any(_holds_only(panel, right, left) for panel in panels)
    if left_panelled and right_panelled:
        return True
    return (left_panelled or right_panelled) and not _share_baselines(left, right)


def _near(box: Any, drawings: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The drawings that touch the box (a little around it), or None where they are too
    many to be panels."""
    x0, y0, x1, y1 = box[0] - 10, box[1] - 10, box[2] + 10, box[3] + 10
    near = []
    for drawing in drawings:
        r = drawing.get("rect")
        if r is None or r[2] < x0 or r[0] > x1 or r[3] < y0 or r[1] > y1:
            continue
        near.append(drawing)
        if len(near) > MAX_DRAWINGS:
            return None
    return near


def _panels(drawings: list[dict[str, Any]]) -> list[Rect]:
    """Rectangles the drawings enclose: each filled shape's, and each cluster of touching
    strokes' (a frame drawn as four rules)."""
    panels: list[Rect] = []
    strokes: list[Rect] = []
    for drawing in drawings:
        x0, y0, x1, y1 = (float(v) for v in drawing["rect"])
        if drawing.get("fill") is not None:
            panels.append((x0, y0, x1, y1))
        elif drawing.get("color") is not None:
            strokes.append((x0, y0, x1, y1))
    clusters: list[Rect] = []
    for stroke in strokes:
        merged = stroke
        # A cluster that grows may come to touch clusters it did not: merge until none does.
        while touching := [cluster for cluster in clusters if _touch(cluster, merged)]:
            clusters = [cluster for cluster in clusters if cluster not in touching]
            merged = enclosing([merged, *touching])
        clusters.append(merged)
    # A single rule is not a panel: only clusters with breadth both ways enclose anything.
    panels += [c for c in clusters if c[2] - c[0] > STROKE_SLACK and c[3] - c[1] > STROKE_SLACK]
    return panels


def _touch(a: Rect, b: Rect) -> bool:
    s = STROKE_SLACK
    return a[0] - s <= b[2] and b[0] - s <= a[2] and a[1] - s <= b[3] and b[1] - s <= a[3]


def _holds_only(panel: Rect, these: list[Rect], others: list[Rect]) -> bool:
    return all(_inside(line, panel) for line in these) and not any(
        _inside(line, panel) for line in others
    )


def _inside(line: Rect, panel: Rect) -> bool:
    s = INSIDE_SLACK
    return (
        line[0] >= panel[0] - s
        and line[1] >= panel[1] - s
        and line[2] <= panel[2] + s
        and line[3] <= panel[3] + s
    )


def _share_baselines(left: list[Rect], right: list[Rect]) -> bool:
    """Whether every line of the side with fewer lines stands on a baseline of the other's."""
    fewer, more = (left, right) if len(left) <= len(right) else (right, left)
    return all(
        any(abs(line[3] - other[3]) <= BASELINE_SHARE * (line[3] - line[1]) for other in more)
        for line in fewer
    )


def _rect(box: Any) -> Rect:
    x0, y0, x1, y1 = (float(v) for v in box[:4])
    return x0, y0, x1, y1
