"""Signals on the output's own form and on what the engine reported: tables that parse, LaTeX
that balances, no runaway repetition, no empty output for a page with ink, the OCR's own
confidence, agreement with the PDF's text layer, merged cells the output lost, and what the
engine says it could not recover. Each reads the page's ``ParsedPage`` (``model.quality.parsed``)
and is a pass over it: well under a millisecond a page.
"""

from __future__ import annotations

import re
from collections import Counter

from model.hangul_spacing import SYLLABLES
from model.quality.merged_cells import Grid, lost_merges
from model.quality.parsed import ParsedPage
from model.quality.review import Signal, severity_below
from model.repetition import periodic_tail

# Output with fewer letters and digits than this is "empty" ...
NEAR_EMPTY_CHARS = 10
# ... which matters on a page where at least this share of a 36 dpi rendering is ink.
INK_SHARE = 0.002
# A tail of at least this many words that repeats one unit at least MIN_COPIES times.
REPEAT_MAX_PERIOD = 32
REPEAT_MIN_WORDS = 40
REPEAT_MIN_COPIES = 4
# Mean OCR line confidence (0-1) under which a person should look. RapidOCR scores clean
# scans at 0.95-0.99 and the corpus's heavy-noise and heavy-blur scans under 0.85.
MIN_OCR_CONFIDENCE = 0.85
# Share of the text layer's words the output must contain, where the PDF has a text layer.
MIN_TEXT_LAYER_RECALL = 0.6
MIN_TEXT_LAYER_WORDS = 20


def table_signal(page: ParsedPage) -> Signal:
    """HTML tables well-formed and rectangular; pipe tables with one width for every row."""
    problems = list(page.html_problems)
    for index, table in enumerate(page.html_tables, start=1):
        if table.ragged:
            problems.append(f"HTML table {index} is not rectangular")
    for index, table in enumerate(page.pipe_tables, start=1):
        if table.ragged:
            problems.append(f"pipe table {index} has rows of different widths")
    count = len(page.tables)
    return Signal("table", not problems, "; ".join(problems[:3]), float(count), severity=0.6)


def merged_cells_signal(page: ParsedPage, grids: list[Grid] | None) -> Signal | None:
    """Empty cells of the output's tables where the page's ruled grid has one merged cell
    holding text: the span was lost, and the text sits in one column of several
    (``model.quality.merged_cells``). None where the page's grid was not looked at."""
    if grids is None:
        return None
    lost = lost_merges(page.tables_with_gaps, grids)
    detail = f"{lost} empty table cell(s) where the page merges cells: the span was lost"
    return Signal(
        "merged_cells", not lost, detail if lost else "", float(lost), severity=0.6 if lost else 0.0
    )


# --- LaTeX -------------------------------------------------------------------------------------

_BEGIN_END = re.compile(r"\\(begin|end)\{([^}]*)\}")


def latex_problems(latex: str) -> list[str]:
    problems = []
    depth = 0
    escaped = False
    for ch in latex:
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
    if depth != 0:
        problems.append("unbalanced braces")
    environments: list[str] = []
    for kind, name in _BEGIN_END.findall(latex):
        if kind == "begin":
            environments.append(name)
        elif not environments or environments.pop() != name:
            problems.append(f"\\end{{{name}}} does not close its \\begin")
            break
    if environments:
        problems.append(f"\\begin{{{environments[-1]}}} not closed")
    lefts = len(re.findall(r"\\left(?![a-zA-Z])", latex))
    rights = len(re.findall(r"\\right(?![a-zA-Z])", latex))
    if lefts != rights:
        problems.append("\\left and \\right do not pair")
    return problems


def latex_signal(page: ParsedPage) -> Signal:
    """Every formula balances; and no display delimiter is left open."""
    problems = []
    for span in page.math:
        for problem in latex_problems(span):
            problems.append(f"{problem} in {span[:40]!r}")
    # A $$ or \[ left open swallows the rest of the page when rendered.
    markdown = page.markdown
    if markdown.count("$$") % 2:
        problems.append("a $$ display is not closed")
    if markdown.count("\\[") != markdown.count("\\]"):
        problems.append("a \\[ display is not closed")
    value = float(len(page.math))
    return Signal("latex", not problems, "; ".join(problems[:3]), value, severity=0.6)


# --- repetition, emptiness, confidence, text-layer agreement -----------------------------------


def repetition_signal(page: ParsedPage) -> Signal:
    """A runaway tail: many copies of one short unit of words (``model.repetition``)."""
    words = page.tokens
    tail = periodic_tail(words, max_period=REPEAT_MAX_PERIOD)
    if tail is None:
        return Signal("repetition", True, "", 1.0)
    runaway = len(words) - tail.start >= REPEAT_MIN_WORDS and tail.copies >= REPEAT_MIN_COPIES
    detail = f"ends in {tail.copies:.0f} copies of a {tail.period}-word unit" if runaway else ""
    return Signal("repetition", not runaway, detail, round(tail.copies, 1), severity=1.0)


def readable_chars(page: ParsedPage) -> int:
    """The output's letters and digits, markup left out."""
    return sum(1 for ch in page.text if ch.isalnum())


def empty_signal(page: ParsedPage, ink: float | None) -> Signal:
    chars = readable_chars(page)
    if ink is None or chars >= NEAR_EMPTY_CHARS or ink < INK_SHARE:
        return Signal("empty", True, "", float(chars))
    detail = f"{chars} characters for a page with {ink:.1%} ink"
    return Signal("empty", False, detail, float(chars), severity=1.0)


def confidence_signal(confidence: float | None) -> Signal | None:
    if confidence is None:
        return None
    ok = confidence >= MIN_OCR_CONFIDENCE
    detail = "" if ok else f"mean OCR confidence {confidence:.2f} < {MIN_OCR_CONFIDENCE}"
    severity = severity_below(confidence, MIN_OCR_CONFIDENCE)
    return Signal("ocr_confidence", ok, detail, round(confidence, 3), severity=severity)


_WORD = re.compile(r"[^\W_]{2,}", re.UNICODE)
# What is counted: words, but Korean syllable by syllable, since a Korean text layer may set
# its word spaces as gaps, which the engine writes as spaces (``model.hangul_spacing``) and
# the layer's own text has not: counted as words, the layer's run-together words would be
# missing from a rightly spaced reading.
_COUNTED = re.compile(rf"[{SYLLABLES}]|[^\W_{SYLLABLES}]{{2,}}", re.UNICODE)


def text_layer_signal(page: ParsedPage, text_layer: str | None) -> Signal | None:
    """The share of the text layer's words that the output holds (a multiset recall), for a
    layer of at least ``MIN_TEXT_LAYER_WORDS`` words."""
    if not text_layer:
        return None
    layer = text_layer.replace("\u00ad", "")
    if len(_WORD.findall(layer)) < MIN_TEXT_LAYER_WORDS:
        return None
    truth = Counter(w.lower() for w in _COUNTED.findall(layer))
    got = Counter(w.lower() for w in _COUNTED.findall(page.text))
    recall = sum((truth & got).values()) / sum(truth.values())
    ok = recall >= MIN_TEXT_LAYER_RECALL
    detail = "" if ok else f"holds {recall:.0%} of the text layer's words"
    severity = severity_below(recall, MIN_TEXT_LAYER_RECALL)
    return Signal("text_layer", ok, detail, round(recall, 3), severity=severity)


def extraction_signal(notes: list[str] | None) -> Signal | None:
    """What the engine itself says it could not recover (glyphs without a Unicode mapping, a
    formula it is unsure of, right-to-left text in an order it cannot trust)."""
    if notes is None:
        return None
    return Signal("extraction", not notes, "; ".join(notes), float(len(notes)))
