"""pymupdf4llm's HTML table pass made cheaper, with the same tables.

Asked for HTML tables (``table_output="html"``, which the engine's default ``auto`` tables
need), pymupdf4llm runs ``page.find_tables(use_layout=True, union=True, refine=True)`` on
every page, table or not. Its tables come from two sources only: the layout model's table
boxes, and grids of ruling lines among the page's vector drawings (a nested line-based
finder). On a page with neither the answer is empty, yet the finder first turns every glyph
into a character record in Python: measured on the real set's text-layer pages, that pass
was a third of pymupdf4llm's time, and the largest share of what the engine spent beyond
bare ``pymupdf4llm.to_markdown`` (``bench/local_speed.py``).

``cheaper_tables`` (around the engine's own pymupdf4llm calls) wraps pymupdf4llm's
``page_html_tables`` so that such a page gets the empty answer at once; every other page runs
the finder as before, with its character records built in one numpy pass instead of a
PyMuPDF geometry object per glyph (``fast_make_chars``: the same records to the bit, about
40 % less time). The Markdown is the same.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pymupdf
from pymupdf import table as _table


def cannot_hold_table(page: pymupdf.Page) -> bool:
    """Whether ``find_tables(union=True)`` has nothing to find on the page: the layout model
    (its raw result, already on the page) saw no table, and the page draws no vector path
    from which a ruled grid could be built."""
    layout = page.layout_information
    if layout is None:
        return False  # the layout model has not run: find_tables would run it
    if any(not isinstance(group, dict) or group.get("class_name") == "table" for group in layout):
        return False
    return not page.get_cdrawings()


@contextmanager
def cheaper_tables() -> Iterator[None]:
    """pymupdf4llm's ``page_html_tables`` and PyMuPDF's ``make_chars`` replaced for the
    duration (call under MuPDF's lock, as every use of PyMuPDF here is): the engine's own
    calls get them, and pymupdf4llm and PyMuPDF are left as they are for anyone else in the
    process (a bench's bare pymupdf4llm side among them). pymupdf4llm imports
    ``page_html_tables`` from its module at each page, and ``find_tables`` calls
    ``make_chars`` by its module's name, so the replacements are what they call."""
    from pymupdf import table
    from pymupdf4llm.helpers import table_html

    tables, chars = table_html.page_html_tables, table.make_chars
    # Only the make_chars this replacement was checked against (its source's hash): another
    # PyMuPDF keeps its own.
    fast = _code_hash(chars) == MAKE_CHARS_CODE

    def page_html_tables(page: pymupdf.Page) -> list[Any]:
        if cannot_hold_table(page):
            return []
        return list(tables(page))

    table_html.page_html_tables = page_html_tables
    if fast:
        table.make_chars = fast_make_chars
    try:
        yield
    finally:
        table_html.page_html_tables = tables
        table.make_chars = chars


# --- the finder's character records, built without a geometry object per glyph -------------

# pymupdf.table.make_chars as verified against this replacement (its source's SHA-256): a
# different PyMuPDF keeps its own.
MAKE_CHARS_CODE = "4631a69307e0bb81af65d4f865dc5b51947e51317ba02c01fb6a126b6b5e6f36"
_FLT_EPSILON = 1.1920929e-07
_PYMUPDF_MAKE_CHARS = _table.make_chars


@functools.cache  # inspect.getsource reads the module's file: 7 ms a page, once is enough
def _code_hash(function: Any) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def fast_make_chars(page: pymupdf.Page, clip: Any = None) -> Any:
    """``pymupdf.table.make_chars`` (the finder's ``CHARS`` from the page's "rawdict"), the
    same records to the bit: MuPDF transforms a rectangle or point in C floats, one rounding
    a multiplication or addition, and so does this, for all the page's glyphs at once in
    numpy's float32, where the matrix neither rotates nor shears (find_tables un-rotates the
    page first). Any other matrix takes the original."""
    from pymupdf import table

    ctm = page.transformation_matrix
    if abs(np.float32(ctm.b)) >= _FLT_EPSILON or abs(np.float32(ctm.c)) >= _FLT_EPSILON:
        return _PYMUPDF_MAKE_CHARS(page, clip=clip)
    a, b, c, d, e, f = (np.float32(value) for value in ctm)
    textpage = page.get_textpage(clip=clip, flags=table.FLAGS)
    blocks = page.get_text("rawdict", textpage=textpage)["blocks"]
    glyphs = []  # (the span's fields, the line's, the glyph) in the original's order
    for block in blocks:
        for line in block["lines"]:
            ldir = (round(line["dir"][0], 4), round(line["dir"][1], 4))
            turn = (float(ldir[0]), float(-ldir[1]), float(ldir[1]), float(ldir[0]))
            upright = ldir[1] == 0
            for span in sorted(line["spans"], key=lambda s: s["bbox"][0]):
                shared = (
                    span["font"],
                    span["size"],
                    bool(span["flags"] & pymupdf.TEXT_FONT_BOLD or span["char_flags"] & 8),
                    pymupdf.sRGB_to_pdf(span["color"]),
                    turn,
                    upright,
                )
                for char in sorted(span["chars"], key=lambda ch: ch["bbox"][0]):
                    glyphs.append((shared, char))
    if not glyphs:
        return textpage
    boxes = np.array([char["bbox"] for _, char in glyphs], dtype=np.float64).reshape(-1, 4)
    origins = np.array([char["origin"] for _, char in glyphs], dtype=np.float64).reshape(-1, 2)
    # fz_transform_rect: the corners swapped where the matrix mirrors, then each corner
    # transformed as fz_transform_point does it (x*b + y*d + f, each step a float).
    corners = boxes.astype(np.float32)
    low_x, high_x = (corners[:, 2], corners[:, 0]) if a < 0 else (corners[:, 0], corners[:, 2])
    low_y, high_y = (corners[:, 3], corners[:, 1]) if d < 0 else (corners[:, 1], corners[:, 3])
    top = (low_x * b + low_y * d + f).tolist()
    bottom = (high_x * b + high_y * d + f).tolist()
    points = origins.astype(np.float32)
    moved_x = (points[:, 0] * a + points[:, 1] * c + e).tolist()
    moved_y = (points[:, 0] * b + points[:, 1] * d + f).tolist()
    chars = table.CHARS._list()
    page_number = page.number + 1
    doctop_base = page.rect.height * page.number
    for n, (shared, char) in enumerate(glyphs):
        fontname, fontsize, bold, color, turn, upright = shared
        x0, y0, x1, y1 = (float(v) for v in char["bbox"])
        chars.append(
            {
                "adv": x1 - x0 if upright else y1 - y0,
                "bottom": y1,
                "doctop": y0 + doctop_base,
                "fontname": fontname,
                "height": y1 - y0,
                "matrix": (*turn, moved_x[n], moved_y[n]),
                "ncs": "DeviceRGB",
                "non_stroking_color": color,
                "non_stroking_pattern": None,
                "object_type": "char",
                "page_number": page_number,
                "size": fontsize if upright else y1 - y0,
                "stroking_color": color,
                "stroking_pattern": None,
                "bold": bold,
                "text": char["c"],
                "top": y0,
                "upright": upright,
                "width": x1 - x0,
                "x0": x0,
                "x1": x1,
                "y0": top[n],
                "y1": bottom[n],
            }
        )
    return textpage
