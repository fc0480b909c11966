"""Signals that do not depend on the page's kind: each asks a question of every page, born
digital, scanned or carrying another program's OCR layer, read by any engine.

- ``agreement``: two independent readings of the same lines (the text layer against the
  page's drawing read by the recognizer; on a scan, the OCR against a second reading of the
  same ink), measured by the engine (``model.engines.reading_agreement``). A low agreement is
  a bad page whichever reading is wrong.
- ``ink``: the page's drawing has glyph-shaped marks (``facts.glyph_count``) that the reading's
  length does not come near: text left out, a region not read, a page returned empty.
- ``steps``: a processing step failed (the page kept its reading from before it) or a
  measurement a signal needs could not be made: the page was not judged in full.
- ``math_prose``: mathematics written as prose: text-layer runs in math fonts found in the
  output's prose, or formula-shaped runs in it ("x2 + y2 = z2", "∑ i=1 n").
- ``invisible_text``: the text layer is invisible text over a picture (a scan's OCR layer),
  which a text-layer reading copies, however well or badly it was read.

Each is a pass over what is already measured, well under a millisecond a page (the engine
times its second reading: ``agreement.seconds`` in its report). Thresholds are chosen with
whole documents held out (``bench/review.py --tune``, docs/QUALITY.md).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from model.quality.form_signals import readable_chars
from model.quality.page_lines import MATH_CHARS
from model.quality.parsed import ParsedPage
from model.quality.review import Signal, severity_below

# --- two readings ------------------------------------------------------------------------------

# Under this agreement between the two readings of the sampled lines, a person should look.
MIN_AGREEMENT = 0.85


def agreement_signal(measured: dict[str, Any] | None) -> Signal | None:
    if not measured or measured.get("agreement") is None:
        return None
    value = float(measured["agreement"])
    ok = value >= MIN_AGREEMENT
    worst = measured.get("worst") or ["", "", 1.0]
    detail = (
        ""
        if ok
        else f"two readings of {measured.get('lines')} lines agree {value:.0%}, e.g. "
        f"{worst[0][:30]!r} read again as {worst[1][:30]!r}"
    )
    severity = severity_below(value, MIN_AGREEMENT)
    return Signal("agreement", ok, detail, round(value, 3), severity=severity)


# --- ink against the reading's length ----------------------------------------------------------

# A page with fewer glyph-shaped marks than this says little about the length its reading
# should have (a title page, a figure with a caption).
MIN_GLYPHS = 80
# Under this many letters and digits read for each glyph-shaped mark, the reading is much
# shorter than the page's ink suggests.
MIN_CHARS_PER_GLYPH = 0.35


def ink_signal(page: ParsedPage, glyphs: int | None) -> Signal | None:
    if glyphs is None or glyphs < MIN_GLYPHS:
        return None
    ratio = readable_chars(page) / glyphs
    ok = ratio >= MIN_CHARS_PER_GLYPH
    detail = (
        ""
        if ok
        else f"{readable_chars(page)} letters and digits read for {glyphs} glyph-shaped marks: "
        "text the reading left out"
    )
    severity = severity_below(ratio, MIN_CHARS_PER_GLYPH)
    return Signal("ink", ok, detail, round(ratio, 3), severity=severity)


# --- steps that failed or were skipped ---------------------------------------------------------


def steps_signal(failed: list[Any], skipped: list[str]) -> Signal:
    """``failed``: processing steps after the engine's reading that raised (the page kept its
    reading from before each); ``skipped``: measurements the signals needed that could not
    be made (the page was not judged in full)."""
    names = [_step_name(step) for step in failed]
    ok = not names and not skipped
    parts = []
    if names:
        parts.append(f"failed: {', '.join(names)} (the reading from before kept)")
    if skipped:
        parts.append(f"not measured: {', '.join(dict.fromkeys(skipped))}")
    severity = 0.0 if ok else (0.6 if names else 0.5)
    value = float(len(names) + len(skipped))
    return Signal("steps", ok, "; ".join(parts), value, severity=severity)


def _step_name(step: Any) -> str:
    if isinstance(step, dict):
        return str(step.get("step") or step.get("name") or step)
    return str(step)


# --- mathematics written as prose --------------------------------------------------------------

# At least this many pieces of mathematics in the output's prose flag the page.
MIN_MATH_PROSE = 1
# A formula written as plain text: three operands or more joined by operators, one of them a
# relation, a letter among them ("x2 + y2 = z2", "a = b + c"), standing apart from words.
_OPERAND = r"(?:\d+(?:[.,]\d+)?|[A-Za-z\u03b1-\u03c9]{1,2}\d{0,2})"
_OPERATOR = r"\s*[=+\-−×·/<>≤≥≈≠^]\s*"
_FORMULA_RUN = re.compile(rf"(?<![\w/.:-]){_OPERAND}(?:{_OPERATOR}{_OPERAND}){{2,}}(?![\w/.:-])")
_RELATION = re.compile(r"[=<>≤≥≈≠]")
# Large operators and relations that only mathematics uses.
MIN_MATH_SYMBOLS = 2


def math_prose_signal(page: ParsedPage, runs: tuple[str, ...]) -> Signal:
    """Text-layer runs in math fonts that the output has in its prose, and formula-shaped
    runs (or lines thick with math symbols) in the output's prose."""
    prose_lines = [line for block in page.prose_blocks for line in block.splitlines()]
    squashed = _squash(" ".join(prose_lines))
    found = [run for run in runs if len(_squash(run)) >= 4 and _squash(run) in squashed]
    for line in prose_lines:
        if line.lstrip().startswith(("|", "<")):
            continue  # tables are the table signals' question
        shaped = [
            m.group(0)
            for m in _FORMULA_RUN.finditer(line)
            if _RELATION.search(m.group(0)) and re.search(r"[A-Za-z]", m.group(0))
        ]
        if shaped:
            found.append(shaped[0])
        elif len(MATH_CHARS.findall(line)) >= MIN_MATH_SYMBOLS:
            found.append(line.strip())
    found = list(dict.fromkeys(found))
    ok = len(found) < MIN_MATH_PROSE
    detail = "" if ok else f"{len(found)} formula(s) written as prose, e.g. {found[0][:40]!r}"
    severity = 0.0 if ok else min(1.0, 0.55 + 0.05 * (len(found) - 1))
    return Signal("math_prose", ok, detail, float(len(found)), severity=severity)


def _squash(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


# --- an OCR layer under a reading ----------------------------------------------------------------

# Past this share of its characters invisible over a picture, the text layer is an OCR layer.
MAX_INVISIBLE = 0.5


def invisible_text_signal(invisible: float | None, method: str) -> Signal | None:
    """A reading copied from invisible text over a picture: another program's OCR of the page,
    as good or as bad as that program was. Judged where the reading is the text layer's."""
    if invisible is None or method != "text-layer":
        return None
    ok = invisible < MAX_INVISIBLE
    detail = (
        ""
        if ok
        else f"{invisible:.0%} of the text layer is invisible text over a picture: another "
        "program's OCR, copied as it is"
    )
    return Signal("invisible_text", ok, detail, invisible, severity=0.0 if ok else 0.5)
