"""Fractions set with a rule and radicals on born-digital pages, rebuilt as LaTeX.

A short horizontal rule (a drawn line, a thin filled rectangle, or a text line of rule
characters) with a line of glyphs just above it and a line just below it, both within its
width, is a fraction: ``\\frac{numerator}{denominator}``, placed in reading order among the
glyphs of the row it sits on (``x = \\frac{a + b}{2}``). A √ glyph whose top meets a rule
starting at its right edge is a radical: ``\\sqrt{…}`` over the glyphs under the rule.

A stack that is found but cannot be rebuilt with confidence (numerator and denominator not
centred on their rule, a fraction inside a fraction, a radical with nothing under its rule)
is left as text and reported, so the page is flagged rather than guessed at. A √ with no
rule after it is ordinary text (``√2`` in a sentence) and left alone.

Binomials and matrices (``model.formula_delimiters``) are stacks too, and take their place in
a row the same way (``2^{k} - \\binom{k}{1} 2^{k-1}``).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable
from typing import Any

from model.formula_delimiters import Wrapper, delimited_stacks, is_delimiter_glyph
from model.formula_glyphs import (
    Glyph,
    Rule,
    Segment,
    Stack,
    glyph_runs,
    glyphs_latex,
    glyphs_plain,
    page_glyphs,
    whole_expression,
)
from model.formulas import (
    _DASHES,
    SCRIPT_SIZE_RATIO,
    Formula,
    _is_mathy,
    _plain_of,
    _squash,
    spans_latex,
)
from model.steps import no_findings_no_notes, page_step
from model.tex_extension import SIZED_DELIMITER

# A rule longer than this share of the page's width is a separator, not a fraction bar.
MAX_RULE_SHARE = 0.4
# A rule at most this thick (pt) and at least this long (pt).
MAX_RULE_THICKNESS = 2.0
MIN_RULE_LENGTH = 3.0
# Numerator and denominator each centred on the rule within this share of its length (+1 pt).
CENTRE_TOLERANCE = 0.2
# A glyph on a numerator's or denominator's baseline closer than this share of the type
# size to the rule's end means a text line runs on past it (an overlined segment ``AB`` in a
# sentence under another line of text), not a fraction: a word space is about a third.
RUN_ON = 0.45
# A numerator or denominator is one expression: glyphs further apart than this many type
# sizes are separate labels (a figure's "P" and "Q" under the segment PQ), not one term.
MAX_PIECE_GAP = 2.0
# Typewriter fonts: TeX's (CMTT, LMMono, SFTT), Courier and the other monospaced ones.
_CODE_FONT = re.compile(r"^(?:CM|SF|EC)TT|Mono|Courier|Typewriter", re.IGNORECASE)
# How near (pt) another drawn stroke must come to a rule to meet it: the rule is then a line
# of a drawing (a figure's side, an axis) and the labels beside it are no fraction.
TOUCH = 1.0


def page_rules(page: Any) -> tuple[list[Rule], list[tuple[float, float, float]]]:
    """Short horizontal rules on a PyMuPDF page (drawn lines and thin filled rectangles), and
    the vertical lines (x, y0, y1), which make a table's grid with them."""
    rules, uprights, _ = page_strokes(page)
    return rules, uprights


def page_strokes(
    page: Any,
) -> tuple[list[Rule], list[tuple[float, float, float]], list[Segment]]:
    """:func:`page_rules`, and every drawn stroke as segments (lines, rectangles' sides,
    curves cut into eight pieces), to tell a rule that is a line of a figure."""
    limit = MAX_RULE_SHARE * page.rect.width
    rules = []
    uprights = []
    segments: list[Segment] = []
    for drawing in page.get_cdrawings():
        for item in drawing.get("items", []):
            segments += _segments(item)
            if item[0] == "l":
                (xa, ya), (xb, yb) = item[1], item[2]
            elif item[0] == "re":
                xa, ya, xb, yb = item[1]
                if abs(yb - ya) > MAX_RULE_THICKNESS:
                    if abs(xb - xa) <= MAX_RULE_THICKNESS:
                        uprights.append(((xa + xb) / 2, min(ya, yb), max(ya, yb)))
                    continue
                ya = yb = (ya + yb) / 2
            else:
                continue
            if abs(ya - yb) > MAX_RULE_THICKNESS / 2:
                if abs(xa - xb) <= MAX_RULE_THICKNESS / 2:
                    uprights.append(((xa + xb) / 2, min(ya, yb), max(ya, yb)))
                continue
            x0, x1 = min(xa, xb), max(xa, xb)
            if MIN_RULE_LENGTH <= x1 - x0 <= limit:
                rules.append(Rule(x0, x1, (ya + yb) / 2))
    return rules, uprights, segments


def _segments(item: tuple[Any, ...]) -> list[Segment]:
    """A drawing item (``get_cdrawings``) as straight segments."""
    kind = item[0]
    if kind == "l":
        (xa, ya), (xb, yb) = item[1], item[2]
        return [(xa, ya, xb, yb)]
    if kind == "re":
        xa, ya, xb, yb = item[1]
        return [(xa, ya, xb, ya), (xb, ya, xb, yb), (xb, yb, xa, yb), (xa, yb, xa, ya)]
    if kind == "qu":
        points = list(item[1])
        return [(*points[i], *points[(i + 1) % 4]) for i in range(4)]
    if kind == "c":
        (ax, ay), (bx, by), (cx, cy), (dx, dy) = item[1:5]
        points = []
        for i in range(9):
            t = i / 8
            u = 1 - t
            points.append(
                (
                    u**3 * ax + 3 * u * u * t * bx + 3 * u * t * t * cx + t**3 * dx,
                    u**3 * ay + 3 * u * u * t * by + 3 * u * t * t * cy + t**3 * dy,
                )
            )
        return [(*points[i], *points[i + 1]) for i in range(8)]
    return []


def _meets_other_stroke(rule: Rule, segments: list[Segment]) -> bool:
    """Whether a drawn stroke other than the rule itself ends on it: a side of a figure
    meeting it at a vertex, a dot on it, a line continuing it. A fraction bar stands alone.
    A stroke wholly within the rule's thin band (its outline, a copy of it) is the rule; one
    that passes right through it (a plot's grid line behind a tick label ``π/2``) is
    background, and says nothing."""
    left, right = rule.x0 - TOUCH, rule.x1 + TOUCH
    top, bottom = rule.y - MAX_RULE_THICKNESS / 2 - TOUCH, rule.y + MAX_RULE_THICKNESS / 2 + TOUCH
    for xa, ya, xb, yb in segments:
        inside_a = left <= xa <= right and top <= ya <= bottom
        inside_b = left <= xb <= right and top <= yb <= bottom
        if inside_a != inside_b:
            return True
    return False


def _fraction_like(
    rule: Rule,
    numerator: list[Glyph],
    denominator: list[Glyph],
    rules: list[Rule],
    uprights: list[tuple[float, float, float]],
    glyphs: list[Glyph],
    segments: list[Segment],
) -> bool:
    """Whether text above and below a rule reads as a fraction: formula-like words on both
    sides, each one expression (no gap of several type sizes inside it: a figure's vertex
    labels), neither a slice of a text line running on past the rule's ends (a line of text
    over an overlined ``AB``), the wider as wide as most of the rule (a table's cell border
    spans its column), and the rule no part of a grid (no rule of the very same span just
    above or below it, no vertical line at its ends; a fraction in a fraction has a shorter
    rule) nor of a drawing (no other stroke meets it)."""
    size = max(g.size for g in numerator + denominator)
    for part in (numerator, denominator):
        if not all(_is_mathy(word) for word in glyphs_latex(part).split()):
            return False
        if _widest_gap(part) > MAX_PIECE_GAP * size:
            return False
        baselines = {round(g.baseline, 1) for g in part}
        for g in glyphs:
            if (
                g in part
                or not any(abs(g.baseline - b) <= 0.2 * size for b in baselines)
                or is_delimiter_glyph(g)  # a tall bracket around it, not text running on
            ):
                continue
            if (
                -0.2 * size < rule.x0 - g.x1 < RUN_ON * size
                or -0.2 * size < g.x0 - rule.x1 < RUN_ON * size
            ):
                return False
    widest = max(max(g.x1 for g in p) - min(g.x0 for g in p) for p in (numerator, denominator))
    if widest < 0.5 * (rule.x1 - rule.x0):
        return False
    for other in rules:
        if (
            other is not rule
            and abs(other.x0 - rule.x0) <= 0.5
            and abs(other.x1 - rule.x1) <= 0.5
            and abs(other.y - rule.y) <= 3 * size
        ):
            return False
    if any(
        y0 - 2 <= rule.y <= y1 + 2 and (abs(x - rule.x0) <= 2 or abs(x - rule.x1) <= 2)
        for x, y0, y1 in uprights
    ):
        return False
    # A rule set as rule characters is text, not a drawing: nothing drawn is part of it.
    return bool(rule.text) or not _meets_other_stroke(rule, segments)


def _widest_gap(part: list[Glyph]) -> float:
    """The widest empty stretch between a piece's glyphs, left to right."""
    ordered = sorted(part, key=lambda g: g.x0)
    widest, edge = 0.0, ordered[0].x1
    for g in ordered[1:]:
        widest = max(widest, g.x0 - edge)
        edge = max(edge, g.x1)
    return widest


def _centred(glyphs: list[Glyph], rule: Rule) -> bool:
    middle = (min(g.x0 for g in glyphs) + max(g.x1 for g in glyphs)) / 2
    return abs(middle - (rule.x0 + rule.x1) / 2) <= CENTRE_TOLERANCE * (rule.x1 - rule.x0) + 1


def _within(g: Glyph, rule: Rule) -> bool:
    return rule.x0 - 0.2 * g.size <= g.cx <= rule.x1 + 0.2 * g.size


def _radical(rule: Rule, glyphs: list[Glyph]) -> tuple[Glyph | None, list[Glyph]]:
    """The √ glyph whose top meets the rule at its right edge, and the radicand under it."""
    sign = next(
        (
            g
            for g in glyphs
            if g.c == "√"
            and g.x1 - 0.5 * g.size <= rule.x0 <= g.x1 + 0.3 * g.size
            and abs(rule.y - g.y0) <= 0.6 * g.size
        ),
        None,
    )
    if sign is None:
        return None, []
    under = [
        g
        for g in glyphs
        if g is not sign
        and rule.x0 <= g.cx <= rule.x1
        and rule.y - 0.2 * g.size <= g.cy <= rule.y + 1.3 * g.size
    ]
    return sign, under


def _fraction(rule: Rule, glyphs: list[Glyph]) -> tuple[list[Glyph], list[Glyph]]:
    """The glyphs set just above the rule and just below it, within its width: whole lines,
    by baseline, so a numerator's superscript comes with it."""
    above = [
        g for g in glyphs if _within(g, rule) and -0.7 * g.size <= g.y1 - rule.y <= 0.3 * g.size
    ]
    below = [
        g for g in glyphs if _within(g, rule) and -0.3 * g.size <= g.y0 - rule.y <= 0.7 * g.size
    ]

    def lines(seed: list[Glyph], up: bool) -> list[Glyph]:
        baselines = {round(g.baseline, 1) for g in seed}
        size = max(g.size for g in seed)  # the line's body type: its scripts sit off it
        return [
            g
            for g in glyphs
            if _within(g, rule)
            and (g.cy < rule.y if up else g.cy > rule.y)
            and any(abs(g.baseline - b) <= 0.45 * size for b in baselines)
        ]

    return (lines(above, True) if above else []), (lines(below, False) if below else [])


@page_step("formula rebuilding", fallback=no_findings_no_notes)
def stacked_formulas(page: Any, rawdict: dict[str, Any]) -> tuple[list[Formula], list[str]]:
    """The fractions, radicals, binomials and matrices on a page, as formulas to place in its
    Markdown, and notes for those found but not rebuilt. ``rawdict`` is
    ``page.get_text("rawdict")``."""
    glyphs, text_rules = page_glyphs(rawdict)
    drawn, uprights, segments = page_strokes(page)
    rules = sorted(set(drawn + text_rules), key=lambda r: (r.y, r.x0))
    if not glyphs:
        return [], []
    stacks, wrappers, notes = delimited_stacks(page, glyphs, rules)
    near = _near_rows(glyphs)
    for rule in rules:
        # Only glyphs a few lines from the rule can be its numerator, denominator or radicand
        # (a page of prose has thousands of glyphs and a hundred underlines and table rules).
        band = near(rule.y)
        sign, radicand = _radical(rule, band)
        if sign is not None:
            if not radicand:
                notes.append("radical left as text: nothing found under its rule")
                continue
            latex = r"\sqrt{" + glyphs_latex(radicand) + "}"
            stacks.append(
                Stack(rule, [sign, *radicand], latex, sign.baseline, (glyphs_plain(radicand),))
            )
            continue
        numerator, denominator = _fraction(rule, band)
        if not numerator or not denominator:
            continue  # an underline, an overline: no fraction
        if not _fraction_like(rule, numerator, denominator, rules, uprights, glyphs, segments):
            continue  # a table's border between two cells, a figure's line: no fraction
        plain = (
            _squash("".join(g.c for g in numerator))
            + "/"
            + _squash("".join(g.c for g in denominator))
        )
        # a rule over or under this one, a line away and overlapping it: a fraction in a
        # fraction (the inner one alone would be half the formula)
        nested = any(
            other is not rule
            and other.x0 < rule.x1
            and rule.x0 < other.x1
            and abs(other.y - rule.y) <= 1.6 * max(g.size for g in numerator + denominator)
            for other in rules
        )
        if nested or not (_centred(numerator, rule) and _centred(denominator, rule)):
            notes.append(f"fraction left as text: {plain[:40]}")
            continue
        top, bottom = glyphs_latex(numerator), glyphs_latex(denominator)
        if not (whole_expression(top) and whole_expression(bottom)):
            notes.append(f"fraction left as text: {plain[:40]}")
            continue
        latex = r"\frac{" + top + "}{" + bottom + "}"
        size = max(g.size for g in numerator + denominator)
        pieces = (glyphs_plain(numerator), glyphs_plain(denominator))
        stacks.append(Stack(rule, numerator + denominator, latex, rule.y + size / 3, pieces))
    # A glyph claimed by two stacks (a radical in a numerator …) is beyond what this rebuilds.
    claimed = Counter(id(g) for s in stacks for g in s.glyphs)
    clean = [s for s in stacks if all(claimed[id(g)] == 1 for g in s.glyphs)]
    for stack in stacks:
        if stack not in clean:
            notes.append(f"formula left as text: {stack.latex[:60]}")
    # Tall delimiters around a stack (``\\left( \\frac{a}{b} \\right)``) go into its row.
    held = [w for w in wrappers if any(_encloses(w, s) for s in clean)]
    used = {id(g) for s in clean for g in s.glyphs}
    used |= {id(g) for w in held for g in w.left.glyphs + w.right.glyphs}
    # Code beside a display (a manual's table of commands and what they typeset) is no part
    # of it: glyphs of a typewriter font are left out.
    free = [
        g for g in glyphs if id(g) not in used and not _CODE_FONT.search(g.font.split("+", 1)[-1])
    ]
    formulas: list[Formula] = []
    given: set[int] = set()  # a pair goes into one row's formula only
    for row in _rows(clean):
        around = [w for w in held if id(w) not in given and any(_encloses(w, s) for s in row)]
        given.update(id(w) for w in around)
        formula = _row_formula(row, free, around)
        if formula is not None:
            formulas.append(formula)
        else:
            notes.append(f"formula left as text: {' '.join(s.latex for s in row)[:60]}")
    return formulas, notes


def _near_rows(glyphs: list[Glyph]) -> Callable[[float], list[Glyph]]:
    """The glyphs whose middles lie within three of the page's largest type sizes of a
    height: farther than any stack's pieces or the lines they sit on (``_fraction``)."""
    ordered = sorted(glyphs, key=lambda g: g.cy)
    middles = [g.cy for g in ordered]
    reach = 3 * max(g.size for g in glyphs)

    def near(y: float) -> list[Glyph]:
        return ordered[bisect_left(middles, y - reach) : bisect_right(middles, y + reach)]

    return near


def _rows(stacks: list[Stack]) -> list[list[Stack]]:
    """Stacks on the same row of a formula (``\\frac{a}{b} + \\frac{c}{d}``) together."""
    rows: list[list[Stack]] = []
    for stack in sorted(stacks, key=lambda s: (s.baseline, s.rule.x0)):
        size = max(g.size for g in stack.glyphs)
        if rows and abs(rows[-1][0].baseline - stack.baseline) <= 0.5 * size:
            rows[-1].append(stack)
        else:
            rows.append([stack])
    return rows


def _encloses(wrapper: Wrapper, stack: Stack) -> bool:
    left, right = wrapper.left, wrapper.right
    return (
        left.x1 - 1 <= stack.rule.x0
        and stack.rule.x1 <= right.x0 + 1
        and (left.y0 <= stack.rule.y <= left.y1)
    )


def _row_formula(row: list[Stack], free: list[Glyph], around: list[Wrapper]) -> Formula | None:
    """The row's stacks among the glyphs beside them on their baseline, as one formula: the
    run of formula-like words around the stacks (prose on the row stays out of it), with the
    tall delimiters ``around`` them."""
    size = max(g.size for s in row for g in s.glyphs)
    guess = sum(s.baseline for s in row) / len(row)
    # the row's baseline: the nearest free glyph level with the stacks, beside them
    beside = [g for g in free if abs(g.baseline - guess) <= 0.45 * g.size]
    if beside:
        left, right = min(s.rule.x0 for s in row), max(s.rule.x1 for s in row)
        nearest = min(beside, key=lambda g: min(abs(g.x1 - left), abs(g.x0 - right)))
        baseline, size = nearest.baseline, nearest.size
        base = [g for g in free if abs(g.baseline - baseline) <= 0.45 * size]
    else:
        baseline, base = guess, []
    base = _chain(base, row, size) + _delimiter_scripts(around, free, size)
    mine = [g for s in row for g in s.glyphs] + base
    top, bottom = min(g.y0 for g in mine), max(g.y1 for g in mine)
    left, right = min(g.x0 for g in mine), max(g.x1 for g in mine)
    if any(
        g.size * SCRIPT_SIZE_RATIO > size
        and g.y0 < bottom
        and top < g.y1
        and left - 3 * size < g.cx < right + 3 * size
        for g in free
        if g not in base
    ):
        return None  # a fraction in a line's exponent or index: beyond this rebuilding
    # Reading order: base glyphs and stacks by x; each stack a placeholder word for now.
    items: list[tuple[float, Any]] = [(g.x0, g) for g in base] + [(s.rule.x0, s) for s in row]
    for wrapper in around:
        items += [
            (wrapper.left.x0, (wrapper.left, True)),
            (wrapper.right.x0, (wrapper.right, False)),
        ]
    items.sort(key=lambda item: item[0])
    runs: list[dict[str, Any]] = []
    pending: list[Glyph] = []
    for _, item in items:
        if isinstance(item, Glyph):
            pending.append(item)
            continue
        runs += glyph_runs(pending)
        pending = []
        if isinstance(item, tuple):
            delimiter, opening = item
            latex = delimiter.latex(opening)
            runs.append({"text": f" {latex} ", "size": size, "origin": (delimiter.x0, baseline)})
            continue
        runs.append(
            {
                "text": f" \\stack{chr(97 + row.index(item))} ",
                "size": size,
                "origin": (item.rule.x0, baseline),
            }
        )
    runs += glyph_runs(pending)
    words = spans_latex(runs, body=(size, baseline)).split()
    # A placeholder may carry a script (``\stacka^{2}``: the fraction squared).
    marks = [i for i, w in enumerate(words) if re.match(r"\\stack[a-z](?![a-z])", w)]
    if len(marks) != len(row):
        return None  # two stacks' places ran into one word: left as text, not guessed
    start, end = marks[0], marks[-1] + 1
    if any(not _is_mathy(w) for w in words[start:end]):
        return None  # prose between two stacks: not one formula
    while start > 0 and _is_mathy(words[start - 1]):
        start -= 1
    while end < len(words) and _is_mathy(words[end]):
        end += 1
    chosen = words[start:end]
    if not _nested(chosen):
        # a delimiter's partner outside the formula's words: the delimiters are left out
        chosen = [w for w in (SIZED_DELIMITER.sub("", w) for w in chosen) if w]
        around = []
    latex = " ".join(chosen)
    plain = _plain_of([w for w in chosen if not w.startswith("\\stack")])
    plain += "".join(g.c for w in around for g in w.left.written() + w.right.written())
    for n, stack in enumerate(row):
        latex = latex.replace(f"\\stack{chr(97 + n)}", stack.latex)
        plain += "".join(g.c for g in (stack.glyphs if stack.written is None else stack.written))
    whole = start == 0 and end == len(words)
    mine = [g for s in row for g in s.glyphs] + base
    mine += [g for w in around for g in w.left.glyphs + w.right.glyphs]
    box = (
        min(g.x0 for g in mine),
        min(g.y0 for g in mine),
        max(g.x1 for g in mine),
        max(g.y1 for g in mine),
    )
    # A rule set in dashes comes out of the extractor as however many dashes it makes of it:
    # dashes are left out of the matching then (the run placed still spans them).
    dashes = any(s.rule.text for s in row)
    dash = re.compile(f"[{re.escape(_DASHES)}]") if dashes else None
    pieces = tuple(
        dash.sub("", piece) if dash else piece for s in row for piece in s.pieces if piece
    )
    return Formula(
        latex,
        "",
        _squash(plain),
        whole,
        scattered=True,
        box=box,
        ignore_dashes=dashes,
        pieces=pieces,
    )


def _delimiter_scripts(around: list[Wrapper], free: list[Glyph], size: float) -> list[Glyph]:
    """The scripts set on closing delimiters (``\\right)^{2}``): smaller type just after one,
    within its height, each glyph near the one before it."""
    scripts: list[Glyph] = []
    for wrapper in around:
        right = wrapper.right
        edge = right.x1
        candidates = [
            g
            for g in free
            if g.size < SCRIPT_SIZE_RATIO * size
            and right.y0 - 0.5 * size <= g.cy <= right.y1
            and g.x0 >= right.x1 - 0.1 * size
        ]
        for g in sorted(candidates, key=lambda g: g.x0):
            if g.x0 - edge > 0.5 * size:
                break
            scripts.append(g)
            edge = g.x1
    return scripts


def _nested(words: list[str]) -> bool:
    """Whether the ``\\left`` and ``\\right`` among a formula's words pair up."""
    depth = 0
    for word in words:
        for match in SIZED_DELIMITER.finditer(word):
            token = match.group(0)
            depth += 1 if token.startswith("\\left") else -token.startswith("\\right")
            if depth < 0:
                return False
    return depth == 0


def _chain(base: list[Glyph], row: list[Stack], size: float) -> list[Glyph]:
    """The base glyphs that reach the stacks without a gap wider than two ems (not text in
    the next column on the same baseline)."""
    left, right = min(s.rule.x0 for s in row), max(s.rule.x1 for s in row)
    kept: list[Glyph] = []
    edge = left
    for g in sorted((g for g in base if g.cx < left), key=lambda g: -g.x1):
        if edge - g.x1 > 2 * size:
            break
        kept.append(g)
        edge = g.x0
    edge = right
    for g in sorted((g for g in base if g.cx > right), key=lambda g: g.x0):
        if g.x0 - edge > 2 * size:
            break
        kept.append(g)
        edge = g.x1
    # glyphs between two stacks of the row
    kept += [g for g in base if left <= g.cx <= right]
    return kept
