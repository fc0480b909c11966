"""A born-digital page's glyphs one by one, and the stacks rebuilt from them: what the
fraction and radical finder (``model.formula_stacks``) and the delimited-stack finder
(``model.formula_delimiters``) share."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from model.formulas import _squash, spans_latex
from model.tex_extension import DELIMITER_CODES, is_extension_font

_RULE_CHARS = re.compile(r"^[_\u2014\u2015\u2500\u2012\u2013\u2212-]{3,}$")


@dataclass
class Glyph:
    c: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    baseline: float
    span: int  # which span it came from, to group glyphs back into runs
    font: str = ""

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclass(frozen=True)
class Rule:
    x0: float
    x1: float
    y: float
    # a rule set as a line of rule characters: those characters, which the Markdown holds
    text: str = ""


# A drawn stroke as a straight segment (curves are cut into short ones): (x0, y0, x1, y1).
Segment = tuple[float, float, float, float]


@dataclass
class Stack:
    """A fraction, a radical or a delimited stack (a binomial, a matrix): the span it covers
    as a rule, the glyphs it consumes, and its LaTeX."""

    rule: Rule
    glyphs: list[Glyph] = field(default_factory=list)
    latex: str = ""
    # the baseline of the row it sits on: a radical's sign's, or a fraction's rule's (the
    # math axis) lowered by a third of the type size, near enough to find the row's glyphs
    baseline: float = 0.0
    # its numerator and denominator, radicand or cells, as the extractor's characters
    pieces: tuple[str, ...] = ()
    # the glyphs the Markdown holds as themselves, where not all of them: a delimiter with
    # no Unicode or a private-use one is gone from it (``model.markdown_repair``)
    written: list[Glyph] | None = None


def page_glyphs(rawdict: dict[str, Any]) -> tuple[list[Glyph], list[Rule]]:
    """The page's glyphs, and the rules set as a line of rule characters (those glyphs left
    out)."""
    glyphs: list[Glyph] = []
    rules: list[Rule] = []
    span_id = 0
    for block in rawdict.get("blocks", []):
        for line in block.get("lines", []):
            text = "".join(ch["c"] for s in line.get("spans", []) for ch in s.get("chars", []))
            if _RULE_CHARS.match(text.strip()):
                x0, y0, x1, y1 = line["bbox"]
                rules.append(Rule(x0, x1, (y0 + y1) / 2, text.strip()))
                continue
            for span in line.get("spans", []):
                span_id += 1
                font = span.get("font", "")
                for ch in span.get("chars", []):
                    if _invisible(ch["c"]) or (ch["c"].isspace() and not _coded(ch["c"], font)):
                        continue
                    x0, y0, x1, y1 = ch["bbox"]
                    glyphs.append(
                        Glyph(ch["c"], x0, y0, x1, y1, span["size"], ch["origin"][1], span_id, font)
                    )
    return glyphs, rules


def _coded(c: str, font: str) -> bool:
    """An extension-font delimiter whose code reads as white space (a bar's extension pieces
    are codes 0x0C and 0x0D, a form feed and a carriage return)."""
    return is_extension_font(font) and ord(c) in DELIMITER_CODES


def _invisible(c: str) -> bool:
    """A format character (zero-width space and joiners, direction marks, a soft hyphen):
    no ink and nothing of a formula, though a font may give it a width and a place. A zero
    width space set small and raised after a fraction read as a superscript on it, and the
    fraction's place in its row was lost (a page of Maxwell's equations)."""
    return unicodedata.category(c) == "Cf"


def glyph_runs(glyphs: list[Glyph]) -> list[dict[str, Any]]:
    """Glyphs in reading order grouped back into span-like runs for :func:`spans_latex`
    (a space where the gap between two glyphs is wider than a fifth of their size)."""
    runs: list[dict[str, Any]] = []
    last: Glyph | None = None
    for g in sorted(glyphs, key=lambda g: g.x0):
        gap = last is not None and g.x0 - last.x1 > 0.2 * g.size
        if last is not None and last.span == g.span and last.baseline == g.baseline:
            runs[-1]["text"] += (" " if gap else "") + g.c
        else:
            text = (" " if gap else "") + g.c
            # the font sets an alphabet (ℝ as an R in MSBM) or delimiters by their codes
            runs.append(
                {"text": text, "size": g.size, "origin": (g.x0, g.baseline), "font": g.font}
            )
        last = g
    return runs


def glyphs_latex(glyphs: list[Glyph]) -> str:
    """Glyphs as LaTeX, their scripts judged against the largest type among them (a line's
    main span, judged by the type it sets, would be the ``11`` of ``a_{11}``)."""
    if not glyphs:
        return ""
    largest = max(g.size for g in glyphs)
    baseline = Counter(g.baseline for g in glyphs if g.size == largest).most_common(1)[0][0]
    return spans_latex(glyph_runs(glyphs), body=(largest, baseline)).strip()


def glyphs_plain(glyphs: list[Glyph]) -> str:
    """Glyphs' characters in the order the extractor writes a line's (scripts in it too)."""
    ordered = sorted(glyphs, key=lambda g: g.x0)
    return _squash("".join(g.c for g in ordered))


def whole_expression(latex: str) -> bool:
    """Whether a numerator's or denominator's LaTeX stands on its own: brackets and braces
    balanced, no script with nothing before it (a part cut out of something larger)."""
    if not latex or latex[0] in "^_":
        return False
    for open_, close in (("(", ")"), ("[", "]"), ("{", "}")):
        depth = 0
        for ch in latex:
            depth += (ch == open_) - (ch == close)
            if depth < 0:
                return False
        if depth:
            return False
    return True
