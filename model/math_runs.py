"""Mathematics in a born-digital line found by its fonts: every run of math in the line.

``model.formulas`` finds one formula a line, around its first relation, from the words of the
whole line. On a page typeset by TeX or a math-aware word processor the fonts say more: a
variable is set in math italic (CMMI, Cambria Math …), an operator in the symbol font (CMSY),
so each stretch of math in a sentence can be found without guessing where its words end.
"Seien γ1, γ2 Wege in X mit γ1(1) = γ2(0). Dann ist" holds three: the subscripted pair, the
lone X, and the relation. A run becomes LaTeX where plain text cannot carry it (a sub- or
superscript, a relation, an operator, a set, pair or interval: "{1, . . . , k}", "(X, d)");
a lone italic letter or Greek letter stays as the extractor wrote it, which reads the same. A
run that is the whole line is a display.

Spans in text fonts join a run only when they hold no letters ("(1) =", "(0)": TeX sets
digits and brackets in its roman), so the sentence around a formula never goes inside it.
"""

from __future__ import annotations

import re
from typing import Any

from model.formulas import (
    RELATIONS,
    Formula,
    _balanced,
    _squash,
    is_math_font,
    line_body,
    line_formula,
    script_kind,
    spans_latex,
)
from model.steps import no_findings, page_step
from model.tex_extension import is_extension_font, whole_delimiter_latex

# Function names set upright in math (in the roman font): they do not make a span prose ...
_FUNCTIONS = "sin|cos|tan|log|ln|exp|lim|max|min|det|mod|sup|inf|dim"
_FUNCTION_WORDS = re.compile(f"^(?:{_FUNCTIONS})$")
# ... and are written as LaTeX's operators (\inf, not the letters i, n, f); \mod is LaTeX's
# binary operator, not a name, so it is left as the page wrote it.
_FUNCTION_NAMES = re.compile(
    r"(?<![\\A-Za-z])(" + _FUNCTIONS.replace("|mod", "") + r")(?![A-Za-z])"
)
# What a run may not end with: the sentence's punctuation, whichever font set it.
_TRAILING = ".,;:"
# A script with no base, or on a relation or an operator: the run is a piece of something
# else (a fraction's numerator beside its line, a subscript the extractor put on a line of its
# own), not a formula.
_STRAY_SCRIPT = re.compile(
    r"^[\^_]\{|(?:[=<>+\-]|\\(?:leq|geq|neq|sim|in|ast|times|cdot))\s*[\^_]\{"
)
# A set, a tuple or a list set in math ("{1, . . . , k}", "(X, d)"): braces, brackets or an
# ellipsis around more than one span. As text it reads as the extractor's italics scattered
# between the symbols ("_{_ 1 _, . . . , k}_").
_GROUPING = re.compile(r"\\[{}]|\\[lc]dots|[()\[\]]")
_OPERATORS = (
    r"\ast", r"\sum", r"\prod", r"\int", r"\sqrt", r"\times", r"\cdot", r"\pm", r"\circ",
    r"\cup", r"\cap", r"\oplus", r"\otimes", r"\partial", r"\nabla", r"\infty",
)  # fmt: skip


@page_step("formula rebuilding", fallback=no_findings)
def page_formulas(
    page_dict: dict[str, Any], skip: list[tuple[float, float, float, float]] | None = None
) -> list[Formula]:
    """The formulas on a page, from ``page.get_text("dict")``: each line's runs of math where
    it has a math font, else its formula around a relation (``line_formula``); lines meeting
    a box in ``skip`` (a fraction's or radical's, rebuilt by ``model.formula_stacks``) left
    out. Longest first, so that a short run ("γ1") is not placed inside the text of a longer
    one ("γ1(1) = γ2(0)") that holds the same characters."""
    found = []
    for block in page_dict.get("blocks", []):
        for line in block.get("lines", []):
            x0, y0, x1, y1 = line.get("bbox", (0, 0, 0, 0))
            if any(x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1 for b in skip or []):
                continue
            spans = line.get("spans", [])
            runs = line_math_runs(spans)
            if runs is not None:
                found += runs
                continue
            formula = line_formula(spans)
            if formula is not None:
                found.append(formula)
    return sorted(found, key=lambda f: -len(f.formula_plain))


def line_math_runs(spans: list[dict[str, Any]]) -> list[Formula] | None:
    """The runs of math on one line of ``page.get_text("dict")`` spans that need LaTeX, each
    as a formula to place in the page's Markdown; None where no span is in a math font (the
    fonts say nothing there)."""
    spans = [s for s in spans if s.get("text")]
    if not any(is_math_font(s.get("font", "")) and s["text"].strip() for s in spans):
        return None
    body = line_body(spans)
    runs: list[list[dict[str, Any]]] = [[]]
    for span in spans:
        if _in_math(span, body):
            runs[-1].append(span)
        elif runs[-1]:
            runs.append([])
    line_plain = _squash("".join(written_text(s) for s in spans))
    found = []
    for run in runs:
        run = _trimmed(run)
        if not run:
            continue
        formula = _run_formula(run, body, line_plain)
        if formula is not None:
            found.append(formula)
    return found


def written_text(span: dict[str, Any]) -> str:
    """A span's text as the Markdown holds it: TeX's extension-font delimiters, which have no
    Unicode, are not in it (``model.tex_extension``)."""
    if not is_extension_font(span.get("font", "")):
        return str(span["text"])
    return "".join(ch for ch in span["text"] if whole_delimiter_latex(ch) is None)


def _in_math(span: dict[str, Any], body: tuple[float, float]) -> bool:
    text = span["text"]
    if is_math_font(span.get("font", "")) or not text.strip():
        return True
    if script_kind(span, body) != "text":
        return True
    if not text.strip(" " + _TRAILING):
        return False  # the sentence's comma or full stop, in its own font, ends the run
    words = re.findall(r"[^\W\d_]+", text)
    return all(_FUNCTION_WORDS.match(w) for w in words)


def _trimmed(run: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run without the blank spans at its ends and the sentence punctuation it ends
    with (a span is cut, not dropped, where it holds more)."""
    run = list(run)
    while run and not run[0]["text"].strip():
        run.pop(0)
    while run:
        text = run[-1]["text"].rstrip().rstrip(_TRAILING).rstrip()
        if text:
            if text != run[-1]["text"]:
                run[-1] = {**run[-1], "text": text}
            break
        run.pop()
    if run and run[0]["text"] != run[0]["text"].lstrip():
        run[0] = {**run[0], "text": run[0]["text"].lstrip()}
    return run


def _run_formula(
    run: list[dict[str, Any]], body: tuple[float, float], line_plain: str
) -> Formula | None:
    latex = re.sub(r"\s+", " ", spans_latex(run, body)).strip()
    latex = _FUNCTION_NAMES.sub(r"\\\1", latex)
    if not latex or not _balanced(latex) or _STRAY_SCRIPT.search(latex):
        return None  # cut inside a bracket or a stack: left as the extractor wrote it
    scripted = bool(re.search(r"[\^_]\{", latex))
    words = latex.split()
    related = any(w in RELATIONS for w in words)
    operated = any(op in latex for op in _OPERATORS) and len(words) > 1
    formula_plain = _squash("".join(written_text(s) for s in run))
    if not (scripted or related or operated or _grouped(run, latex, formula_plain)):
        return None  # a lone "X" or "γ" reads the same as text
    return Formula(latex, line_plain, formula_plain, whole_line=formula_plain == line_plain)


def _grouped(run: list[dict[str, Any]], latex: str, formula_plain: str) -> bool:
    """A set, tuple or interval of letters or digits, set in more than one span, that does
    not stop at a relation or an operator (where the rest of the formula, a radical or a
    big union the runs do not rebuild, was cut off: "d(x, y) :=")."""
    if len(run) < 2 or not _GROUPING.search(latex) or not any(c.isalnum() for c in formula_plain):
        return False
    last = latex.split()[-1]
    return last not in RELATIONS and last not in (":=", "+", "-", "−", *_OPERATORS)
