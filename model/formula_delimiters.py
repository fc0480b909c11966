"""Binomials and matrices on born-digital pages: rows of glyphs between a pair of tall
delimiters, rebuilt as LaTeX (``\\binom{k}{1}``, ``\\begin{pmatrix} a & b \\\\ c & d
\\end{pmatrix}``).

TeX sets a display's large delimiters in its extension font (CMEX), one glyph for the sizes up
to ``\\Bigg`` and a top, extension pieces and a bottom beyond, with no Unicode: MuPDF gives
their character codes, which are the font's fixed layout. Other typesetters use the Unicode
pieces (⎛ ⎜ ⎝), the Symbol font's private-use ones (U+F8EB …), or a tall variant of ``(``.
The extractor's box for such a glyph is the font's ascent and descent, not the glyph's: their
extent is read again with MuPDF's accurate boxes.

A pair of delimiters of one height, an opening one and its closing one (or two bars), with
glyphs on two or more rows between them is a stack. A rule among those rows makes it a
fraction in large parentheses, which the fraction finder reads; a delimiter inside makes it
a nest of them. Columns are the gaps that cross every row. Two rows of one expression in
parentheses are a binomial; anything else a matrix of the delimiters' kind. A stack whose
cells do not each read as a whole expression (prose, a row of dots across the columns) is
left as text and reported, so the page is flagged rather than guessed at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pymupdf

from model.formula_glyphs import Glyph, Rule, Stack, glyphs_latex, glyphs_plain, whole_expression
from model.formulas import SCRIPT_SIZE_RATIO, _is_mathy, is_math_font
from model.tex_extension import DELIMITER_CODES, DELIMITER_LATEX, PIECE_CODES, is_extension_font

# A delimiter is tall when its ink is at least this many times its type size: more than a
# \big one, less than a display's binomial (in amsmath's guide, pp. 20 and 22, their ink is 1.2
# and 2.4 type sizes), so ``\big(`` around a line's text is none.
TALL = 1.7
# Pieces of one delimiter touch or overlap: a vertical gap of at most this share of the type
# size, and left edges this close.
PIECE_GAP = 0.35
PIECE_SHIFT = 0.3
# Two delimiters pair when their extents overlap by this share of the shorter.
PAIR_OVERLAP = 0.7
# A gap of at least this many type sizes, empty on every row, parts two columns (amsmath
# sets its matrices' columns two \arraycolsep, about an em, apart).
COLUMN_GAP = 0.8
# ... and this many in a small matrix, whose cells are set in script style, where TeX puts no
# space around an operator or a relation (\smallmatrix's columns are about 0.4 em apart).
SCRIPT_COLUMN_GAP = 0.3

# Unicode and the Symbol font's private-use code points for delimiters and their pieces;
# "" for a piece both kinds of brace share (the brace's extension). Pieces are the parts a
# large delimiter is built of; any other is whole and joins nothing.
_PRIVATE = "".join(map(chr, range(0xF8EB, 0xF8FF)))
_PIECES = frozenset("⎛⎜⎝⎞⎟⎠⎡⎢⎣⎤⎥⎦⎧⎨⎩⎪⎫⎬⎭⎮" + _PRIVATE)
_KINDS = {
    **dict.fromkeys("(⎛⎜⎝\uf8eb\uf8ec\uf8ed", "("),
    **dict.fromkeys(")⎞⎟⎠\uf8f6\uf8f7\uf8f8", ")"),
    **dict.fromkeys("[⎡⎢⎣\uf8ee\uf8ef\uf8f0", "["),
    **dict.fromkeys("]⎤⎥⎦\uf8f9\uf8fa\uf8fb", "]"),
    **dict.fromkeys("{⎧⎨⎩\uf8f1\uf8f2\uf8f3", "{"),
    **dict.fromkeys("}⎫⎬⎭\uf8fc\uf8fd\uf8fe", "}"),
    **dict.fromkeys("⎪\uf8f4", ""),
    **dict.fromkeys("|∣⎮", "|"),
    **dict.fromkeys("‖∥", "‖"),
}
_DOTS = ".·…⋯"
_CLOSING = {"(": ")", "[": "]", "{": "}", "|": "|", "‖": "‖"}
_ENVIRONMENTS = {"(": "pmatrix", "[": "bmatrix", "{": "Bmatrix", "|": "vmatrix", "‖": "Vmatrix"}
_ACCURATE = pymupdf.TEXTFLAGS_RAWDICT & ~pymupdf.TEXT_PRESERVE_IMAGES | pymupdf.TEXT_ACCURATE_BBOXES


@dataclass
class Delimiter:
    kind: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    glyphs: list[Glyph] = field(default_factory=list)

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    def latex(self, opening: bool) -> str:
        """``\\left(`` or ``\\right)``: sized to what it encloses, as it was set."""
        return ("\\left" if opening else "\\right") + DELIMITER_LATEX[self.kind]

    def written(self) -> list[Glyph]:
        """Its glyphs the Markdown holds: not one with no Unicode or a private-use one
        (``model.markdown_repair`` drops them)."""
        return [g for g in self.glyphs if g.c in _KINDS and g.c not in _PRIVATE]


@dataclass
class Wrapper:
    """A pair of tall delimiters around something that is no stack of its own."""

    left: Delimiter
    right: Delimiter


def delimited_stacks(
    page: Any, glyphs: list[Glyph], rules: list[Rule]
) -> tuple[list[Stack], list[Wrapper], list[str]]:
    """The binomials and matrices among a page's glyphs; the pairs of tall delimiters around
    anything else (a fraction, a sum with its limits: ``\\left( … \\right)``), for the row
    that holds it to take in; and notes for the stacks found but not rebuilt. ``rules`` are
    the page's short rules: one between a pair's rows makes it a fraction in delimiters."""
    pieces = [g for g in glyphs if is_delimiter_glyph(g)]
    if not pieces:
        return [], [], []
    inked = _accurate_boxes(page, pieces)
    delimiters = [d for d in _join_pieces(inked) if d.height >= TALL * d.size and d.kind]
    stacks: list[Stack] = []
    wrappers: list[Wrapper] = []
    notes: list[str] = []
    taken = {id(g) for d in delimiters for g in d.glyphs}
    for left, right in _pairs(delimiters):
        inside = [
            g
            for g in glyphs
            if id(g) not in taken
            and g.x0 >= left.x1 - 0.1 * g.size
            and g.x1 <= right.x0 + 0.1 * g.size
            and left.y0 <= g.cy <= left.y1
        ]
        if not inside or any(
            left.x1 <= d.x0 and d.x1 <= right.x0 and left.y0 <= (d.y0 + d.y1) / 2 <= left.y1
            for d in delimiters
        ):
            continue  # empty, or delimiters inside delimiters: beyond what this rebuilds
        rows = _rows(inside)
        body = max(g.size for g in inside)
        if (
            len(rows) < 2
            or any(max(g.size for g in row) < SCRIPT_SIZE_RATIO * body for row in rows)
            or any(left.x1 <= r.x0 and r.x1 <= right.x0 and left.y0 < r.y < left.y1 for r in rules)
        ):
            # one tall thing, a sum whose limits make rows, a fraction (or a radical's rule)
            wrappers.append(Wrapper(left, right))
            continue
        stack = _stack(left, right, inside, rows)
        if stack is None:
            notes.append(f"matrix left as text: {glyphs_plain(inside)[:40]}")
        else:
            stacks.append(stack)
    return stacks, wrappers, notes


def _by_code(g: Glyph) -> bool:
    """Whether a glyph is read by its extension-font code: a delimiter's own character wins
    over the code (an extension font with a Unicode map gives "(" for every size of
    parenthesis; only the \\Bigg braces, codes 0x28 and 0x29, would read as parentheses where
    it has none)."""
    return g.c not in _KINDS and is_extension_font(g.font)


def is_delimiter_glyph(g: Glyph) -> bool:
    """Whether a glyph is a delimiter of a math font or a piece of a tall one."""
    if _by_code(g):
        return ord(g.c) in DELIMITER_CODES
    # an ordinary bracket in a text font is text; a tall one in a math font may be a variant
    return g.c in _KINDS and (not g.c.isascii() or is_math_font(g.font))


def delimiter_kind(g: Glyph) -> str:
    """A delimiter glyph's kind (``(``, ``[``, ``{``, ``|`` …; "" for a brace's extension)."""
    if _by_code(g):
        return DELIMITER_CODES.get(ord(g.c), "")
    return _KINDS.get(g.c, "")


Box = tuple[float, float, float, float]


def _accurate_boxes(page: Any, pieces: list[Glyph]) -> list[tuple[Glyph, Box]]:
    """The pieces with the boxes of their ink (MuPDF's accurate boxes, one extraction of
    the band of the page they lie in)."""
    top = min(g.y0 for g in pieces) - 3 * max(g.size for g in pieces)
    bottom = max(g.y1 for g in pieces) + 3 * max(g.size for g in pieces)
    clip = pymupdf.Rect(page.rect.x0, top, page.rect.x1, bottom)
    boxes: dict[tuple[float, float], Box] = {}
    for block in page.get_text("rawdict", flags=_ACCURATE, clip=clip).get("blocks", []):
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                for ch in span.get("chars", []):
                    x, y = ch["origin"]
                    boxes[(round(x, 1), round(y, 1))] = tuple(ch["bbox"])
    return [
        (g, boxes.get((round(g.x0, 1), round(g.baseline, 1))) or (g.x0, g.y0, g.x1, g.y1))
        for g in pieces
    ]


def _join_pieces(pieces: list[tuple[Glyph, Box]]) -> list[Delimiter]:
    """Pieces stacked one on another at one left edge, as the delimiters they build (each
    glyph's box its ink's)."""
    delimiters: list[Delimiter] = []
    for g, (x0, y0, x1, y1) in sorted(pieces, key=lambda p: (round(p[1][0]), p[1][1])):
        kind = delimiter_kind(g)
        for d in delimiters:
            if (
                _is_piece(g)
                and all(_is_piece(other) for other in d.glyphs)
                and abs(d.x0 - x0) <= PIECE_SHIFT * g.size
                and d.y0 < y0
                and y0 - d.y1 <= PIECE_GAP * g.size
                and _joinable(d.kind, kind)
            ):
                d.y1, d.x1 = max(d.y1, y1), max(d.x1, x1)
                d.kind = d.kind or kind
                d.glyphs.append(g)
                break
        else:
            delimiters.append(Delimiter(kind, x0, y0, x1, y1, g.size, [g]))
    return delimiters


def _is_piece(g: Glyph) -> bool:
    if _by_code(g):
        return ord(g.c) in PIECE_CODES
    return g.c in _PIECES


def _joinable(kind: str, other: str) -> bool:
    """Pieces join those of their kind, and a brace's extension either brace."""
    return kind == other or "" in (kind, other)


def _pairs(delimiters: list[Delimiter]) -> list[tuple[Delimiter, Delimiter]]:
    """Each opening delimiter with the nearest closing one of its kind and height to its
    right, innermost first; bars with the next bar alike."""
    used: set[int] = set()
    pairs = []
    ordered = sorted(delimiters, key=lambda d: d.x0)
    for left in sorted(ordered, key=lambda d: -d.x0):
        if id(left) in used or left.kind not in _CLOSING or left.kind in "|‖":
            continue
        right = next(
            (
                d
                for d in ordered
                if id(d) not in used
                and d.kind == _CLOSING[left.kind]
                and d.x0 > left.x1
                and _alike(left, d)
            ),
            None,
        )
        if right is not None:
            used.update((id(left), id(right)))
            pairs.append((left, right))
    for n, left in enumerate(ordered):
        if id(left) in used or left.kind not in "|‖":
            continue
        right = next(
            (d for d in ordered[n + 1 :] if id(d) not in used and d.kind == left.kind),
            None,
        )
        if right is not None and _alike(left, right):
            used.update((id(left), id(right)))
            pairs.append((left, right))
    return pairs


def _alike(a: Delimiter, b: Delimiter) -> bool:
    overlap = min(a.y1, b.y1) - max(a.y0, b.y0)
    return overlap >= PAIR_OVERLAP * min(a.height, b.height)


def _stack(
    left: Delimiter, right: Delimiter, inside: list[Glyph], rows: list[list[Glyph]]
) -> Stack | None:
    size = max(g.size for g in inside)
    if any(all(g.c in _DOTS for g in row) and not _vertical_dots(row) for row in rows):
        return None  # a row of dots across the columns (\\hdotsfor): not rebuilt
    small = size < SCRIPT_SIZE_RATIO * left.size
    columns = _column_edges(rows, (SCRIPT_COLUMN_GAP if small else COLUMN_GAP) * size)
    cells = [
        [[g for g in row if _column(g, columns) == c] for c in range(len(columns) + 1)]
        for row in rows
    ]
    latex_cells = [[_cell_latex(cell) for cell in row] for row in cells]
    for row in latex_cells:
        for cell in row:
            if cell and not (whole_expression(cell) and all(_is_mathy(w) for w in cell.split())):
                return None
    if not all(any(row) for row in latex_cells):
        return None
    if left.kind == "(" and len(rows) == 2 and not columns:
        latex = rf"\binom{{{latex_cells[0][0]}}}{{{latex_cells[1][0]}}}"
    else:
        environment = _ENVIRONMENTS[left.kind]
        body = r" \\ ".join(" & ".join(row) for row in latex_cells)
        latex = rf"\begin{{{environment}}} {body} \end{{{environment}}}"
    axis = (left.y0 + left.y1) / 2
    pieces = tuple(glyphs_plain(cell) for row in cells for cell in row if cell)
    written = left.written() + right.written()
    return Stack(
        Rule(left.x0, right.x1, axis),
        [*left.glyphs, *right.glyphs, *inside],
        latex,
        axis + size / 3,
        pieces,
        written + inside,
    )


def _vertical_dots(glyphs: list[Glyph]) -> bool:
    """Dots set one above another (TeX's \\vdots is three periods in a column), or ⋮."""
    if all(g.c == "⋮" for g in glyphs):
        return True
    baselines = {round(g.baseline, 1) for g in glyphs}
    size = max(g.size for g in glyphs)
    return (
        len(baselines) >= 2 and max(g.cx for g in glyphs) - min(g.cx for g in glyphs) < 0.3 * size
    )


def _cell_latex(cell: list[Glyph]) -> str:
    if not cell:
        return ""
    if all(g.c in _DOTS + "⋮" for g in cell) and _vertical_dots(cell):
        return r"\vdots"
    return glyphs_latex(cell)


def _rows(glyphs: list[Glyph]) -> list[list[Glyph]]:
    """Glyphs grouped into rows: runs of overlapping heights (a script overlaps the line it
    belongs to; the extractor's boxes are a font's whole height, trimmed here a little)."""
    rows: list[list[Glyph]] = []
    bottom = 0.0
    for g in sorted(glyphs, key=lambda g: g.y0 + 0.15 * g.size):
        top, low = g.y0 + 0.15 * g.size, g.y1 - 0.15 * g.size
        if rows and top < bottom:
            rows[-1].append(g)
            bottom = max(bottom, low)
        else:
            rows.append([g])
            bottom = low
    return rows


def _column_edges(rows: list[list[Glyph]], gap: float) -> list[float]:
    """The x of each gap, empty on every row, at least ``gap`` wide."""
    spans = sorted((g.x0, g.x1) for row in rows for g in row)
    edges = []
    reach = spans[0][1]
    for x0, x1 in spans[1:]:
        if x0 - reach >= gap:
            edges.append((reach + x0) / 2)
        reach = max(reach, x1)
    return edges


def _column(g: Glyph, edges: list[float]) -> int:
    return sum(1 for edge in edges if g.cx > edge)
