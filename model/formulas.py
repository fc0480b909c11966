"""Simple formulas on born-digital pages, rebuilt as LaTeX from the glyphs' geometry.

A text line whose spans include smaller type set above or below the line's baseline (a
superscript or subscript), around a relation (=, ≤, ≈ …), is a formula candidate. Each span is
read as normal text, superscript or subscript by its size and baseline offset; Greek letters,
operators and primes are mapped to LaTeX; the run of formula-like words around the relation
becomes ``$…$`` (or ``$$…$$`` when it is the whole line) in the page's Markdown, in place of
the flat text the extractor wrote (``a<sup>2</sup> + 8 = 12`` → ``$$a^{2} + 8 = 12$$``).

Fractions set with a rule and radicals are rebuilt by ``model.formula_stacks``, and placed
here too: their characters come out of the extractor in an order of its making, so they are
matched in any order (``Formula.scattered``). On a line with a math font, ``model.math_runs``
finds each run of math by its fonts instead, and hands the runs here to place; binomials
and matrices between tall delimiters come from ``model.formula_delimiters``. What this does
not attempt: ``cases``, aligned multi-line displays as one environment. A formula
that cannot be located or rebuilt is left as text and reported, so the page is flagged
rather than guessed at.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from model.steps import page_step, unchanged_with_no_notes
from model.tex_extension import SIZED_DELIMITER, is_extension_font, whole_delimiter_latex

# A span is a script when its type is this much smaller than the line's body type ...
SCRIPT_SIZE_RATIO = 0.9
# ... and its baseline sits this share of the body size above (super) or below (sub) it.
SCRIPT_SHIFT = 0.12

_GREEK_NAMES = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau "
    "upsilon phi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Phi Psi Omega epsilon "
    "vartheta phi"
)
_GREEK = {
    letter: "\\" + name
    for letter, name in zip(
        "αβγδεζηθικλμνξπρστυφχψωΓΔΘΛΞΠΣΦΨΩϵϑϕ", _GREEK_NAMES.split(), strict=True
    )
}
_SYMBOLS = {
    "∑": r"\sum",
    "∏": r"\prod",
    "∫": r"\int",
    "√": r"\sqrt",
    "∞": r"\infty",
    "−": "-",
    "–": "-",
    "×": r"\times",
    "·": r"\cdot",
    "⋅": r"\cdot",
    "÷": r"\div",
    "±": r"\pm",
    "≤": r"\leq",
    "≥": r"\geq",
    "≠": r"\neq",
    "≈": r"\approx",
    "≡": r"\equiv",
    "→": r"\rightarrow",
    "∈": r"\in",
    "∂": r"\partial",
    "∇": r"\nabla",
    "∗": r"\ast",
    "∘": r"\circ",
    "∼": r"\sim",
    "≃": r"\simeq",
    "≅": r"\cong",
    "⊂": r"\subset",
    "⊆": r"\subseteq",
    "⊃": r"\supset",
    "⊇": r"\supseteq",
    "∪": r"\cup",
    "∩": r"\cap",
    "∉": r"\notin",
    "∅": r"\emptyset",
    "∀": r"\forall",
    "∃": r"\exists",
    "⇒": r"\Rightarrow",
    "⇔": r"\Leftrightarrow",
    "↦": r"\mapsto",
    "⊕": r"\oplus",
    "⊗": r"\otimes",
    "≪": r"\ll",
    "≫": r"\gg",
    "∝": r"\propto",
    "⟨": r"\langle",
    "∥": r"\parallel",
    "∧": r"\wedge",
    "∨": r"\vee",
    "¬": r"\neg",
    "∠": r"\angle",
    "⊥": r"\perp",
    "⟩": r"\rangle",
    # TeX sets \neq and \notin as a slash overstruck on the relation (U+0338, combining).
    "\u0338": r"\not",
    "′": "'",
    "″": "''",
    "⁄": "/",
}
# Σ the letter and ∑ the operator look alike; a capital sigma standing alone is the operator.
_OPERATOR_SIGMA = re.compile(r"(?<![A-Za-z\\])\\Sigma(?![A-Za-z])")
RELATIONS = (
    "=", "<", ">", r"\leq", r"\geq", r"\neq", r"\approx", r"\equiv", r"\rightarrow", r"\sim",
    r"\simeq", r"\cong", r"\subset", r"\subseteq", r"\supset", r"\supseteq", r"\in",
    r"\notin", r"\Rightarrow", r"\Leftrightarrow", r"\mapsto", r"\ll", r"\gg", r"\propto",
    r"\parallel", r"\perp",
)  # fmt: skip
# The overstruck slash and the relation after it: one negated relation.
_NEGATED = re.compile(r"\\not\s*(=|\\in(?![A-Za-z]))")
# TeX sets \cdots as three centred dots, which the extractor gives one by one.
_CDOTS = re.compile(r"\\cdot(?:\s*\\cdot){2}(?![A-Za-z])")
# ... and \ldots as three periods of its math italic, a thin space apart.
_LDOTS = re.compile(r"(?<![.\w])\.(?: ?\.){2}(?![.\w])")
_FUNCTIONS = {"sin", "cos", "tan", "log", "ln", "exp", "lim", "max", "min", "det", "mod"}
# A formula word: LaTeX commands, letters, digits, operators and brackets, no sentence
# punctuation (a colon or a trailing comma belongs to the prose around it).
_MATHY = re.compile(r"^[\\A-Za-z0-9()\[\]{}+\-=/*^_'.<>|!]+$")
_WORDS = re.compile(r"[A-Za-z]{4,}")


@dataclass(frozen=True)
class Formula:
    """A formula found on a text line: its LaTeX, the line's plain text (what the extractor
    wrote, spaces and markup aside) and the part of it the formula replaces."""

    latex: str
    line_plain: str
    formula_plain: str
    whole_line: bool
    # Its characters are spread over the Markdown in an order of the extractor's making (a
    # fraction's numerator, rule row and denominator): matched in any order.
    scattered: bool = False
    # Where it is on the page (x0, y0, x1, y1), for a stacked one: no script formula there.
    box: tuple[float, float, float, float] | None = None
    # Leave dashes and rule characters out of the matching (a fraction's rule set in them).
    ignore_dashes: bool = False
    # Parts that must each come out whole inside the run (a numerator, a denominator, a
    # radicand: the extractor writes each line's characters together), so a run of the same
    # characters elsewhere (the denominator of the fraction beside it) is not taken for it.
    pieces: tuple[str, ...] = ()


def _latex_char(ch: str) -> str:
    if ch in "{}":
        return "\\" + ch  # a set's brace, printed: in LaTeX it must be escaped
    if ch in _GREEK:
        return _GREEK[ch] + " "
    return _SYMBOLS.get(ch, ch) + (" " if ch in _SYMBOLS and _SYMBOLS[ch][:1] == "\\" else "")


def _alphabet(font: str, text: str) -> str:
    """A span's LaTeX, its letters in the alphabet its font sets (``\\mathbb{R}``), and TeX's
    extension-font delimiters, which have no Unicode, by their codes (``\\bigl(``)."""
    if is_extension_font(font):
        return "".join(
            sized + " " if (sized := whole_delimiter_latex(ch)) else _latex_char(ch) for ch in text
        )
    for pattern, command in _ALPHABETS:
        if pattern.search(font):
            return re.sub(r"([A-Za-z])", command.replace("\\", "\\\\") + r"{\1}", text)
    return _latex_text(text)


def _latex_text(text: str) -> str:
    return "".join(_latex_char(ch) for ch in text)


def line_formula(spans: list[dict[str, Any]]) -> Formula | None:
    """The formula on one line of ``page.get_text("dict")`` spans, if it has one."""
    spans = [s for s in spans if s.get("text")]
    if len(spans) < 2:
        return None
    latex_line, scripts = _spans_latex(spans)
    if not scripts and not any(is_math_font(span.get("font", "")) for span in spans):
        return None
    plain = "".join(span["text"] for span in spans)
    return _formula_run(latex_line, plain)


# Fonts that set mathematics: TeX's math italic, symbols and extension fonts, the AMS symbol
# fonts, and the OpenType and Type 1 math fonts of other typesetters.
_MATH_FONT = re.compile(
    r"CMMI|CMSY|CMEX|MSAM|MSBM|EUFM|RSFS|Euclid|esint|Math|STIX|Symbol|XITS|Asana", re.IGNORECASE
)
# Alphabets of their own: TeX's blackboard bold (ℝ set as an R in MSBM) and Fraktur.
_ALPHABETS = ((re.compile(r"MSBM", re.I), r"\mathbb"), (re.compile(r"EUFM", re.I), r"\mathfrak"))
_ALPHABET_COMMAND = re.compile(r"\\math(?:bb|frak)\{([^{}]*)\}")


def is_math_font(name: str) -> bool:
    """Whether a span's font is one that sets mathematics (a line in it around a relation is
    a formula even with no sub- or superscript)."""
    return bool(_MATH_FONT.search(name.split("+", 1)[-1]))


def spans_latex(spans: list[dict[str, Any]], body: tuple[float, float] | None = None) -> str:
    """Spans (``text``, ``size``, ``origin``) as LaTeX, scripts by size and baseline against
    ``body`` (size, baseline), or against the line's main span."""
    return _spans_latex([s for s in spans if s.get("text")], body)[0]


def line_body(spans: list[dict[str, Any]]) -> tuple[float, float]:
    """The size and baseline of a line's main span (the most type set at the largest size):
    what its scripts are judged against."""
    main = max(spans, key=lambda s: (s["size"] * len(s["text"].strip()), s["size"]))
    return float(main["size"]), float(main["origin"][1])


def script_kind(span: dict[str, Any], body: tuple[float, float]) -> str:
    """``sup``, ``sub`` or ``text``: a span is a script when its type is smaller than the
    line's body and its baseline sits above or below the body's."""
    size, baseline = body
    if float(span["size"]) < SCRIPT_SIZE_RATIO * size:
        shift = float(span["origin"][1]) - baseline
        if shift < -SCRIPT_SHIFT * size:
            return "sup"
        if shift > SCRIPT_SHIFT * size / 2:
            return "sub"
    return "text"


def _spans_latex(
    spans: list[dict[str, Any]], body: tuple[float, float] | None = None
) -> tuple[str, int]:
    if not spans:
        return "", 0
    body = body or line_body(spans)
    # (kind, spans): a run of spans set as one script is one group ("k", "−", "1" in 2^{k-1})
    parts: list[tuple[str, list[dict[str, Any]]]] = []
    scripts = 0
    for span in spans:
        kind = script_kind(span, body)
        scripts += kind != "text"
        if kind != "text" and parts and parts[-1][0] == kind:
            parts[-1][1].append(span)
        else:
            parts.append((kind, [span]))
    latex_line = ""
    for kind, group in parts:
        text = "".join(span["text"] for span in group)
        if kind == "text":
            latex_line += _alphabet(group[0].get("font", ""), text)
        elif kind == "sup" and text.strip() and not text.strip().strip("′″'"):
            latex_line = latex_line.rstrip() + _latex_text(text.strip())  # γ′ is \gamma'
        else:
            # A script's own scripts (the i of n_i in an exponent): read against its main span.
            inner = _spans_latex(group)[0] if len({s["size"] for s in group}) > 1 else None
            body_text = (inner or _latex_text(text.strip())).strip()
            latex_line = latex_line.rstrip() + ("^{" if kind == "sup" else "_{") + body_text + "}"
    latex_line = _NEGATED.sub(lambda m: r"\neq" if m.group(1) == "=" else r"\notin", latex_line)
    latex_line = _CDOTS.sub(r"\\cdots", latex_line)
    latex_line = _LDOTS.sub(r"\\ldots", latex_line)
    return _OPERATOR_SIGMA.sub(r"\\sum", latex_line), scripts


def _formula_run(latex_line: str, plain: str) -> Formula | None:
    words = latex_line.split()
    relation = next((i for i, w in enumerate(words) if w in RELATIONS), None)
    if relation is None or relation == 0:
        return None
    start = relation
    while start > 0 and _is_mathy(words[start - 1]):
        start -= 1
    end = relation + 1
    while end < len(words) and _is_mathy(words[end]):
        end += 1
    if start == relation or end == relation + 1:
        return None
    latex = " ".join(words[start:end])
    if not _balanced(latex) or latex.startswith(("^{", "_{")):
        return None  # "x_{2}) = d_{Y} (\phi": cut inside a bracket; the text stays as it is
    if not re.search(r"[\^_]\{", latex) and not any(w.startswith("\\") for w in words[start:end]):
        return None  # "page 1 = cover" is prose; a formula has a script or a symbol
    # The same words in the extractor's text: count the non-space characters they came from.
    line_plain = _squash(plain)
    formula_plain = _squash(_plain_of(words[start:end]))
    whole = start == 0 and end == len(words)
    return Formula(latex, line_plain, formula_plain, whole)


def _is_mathy(word: str) -> bool:
    # A comma ends a formula (", where …") unless a bracket it opened is still open:
    # "d(x," in "d(x, z)".
    if word.endswith(","):
        opened = sum(word.count(b) for b in "([{") - sum(word.count(b) for b in ")]}")
        if opened <= 0:
            return False
        word = word.rstrip(",")
    if not _MATHY.match(word) or _is_prose_word(word):
        return False
    letters = [w for w in _WORDS.findall(re.sub(r"\\[A-Za-z]+", "", word))]
    return all(w.lower() in _FUNCTIONS for w in letters)


# A word of two letters or more, letters only, that is this frequent in English, German or
# French (wordfreq's Zipf scale: "of" 7.4, "und" 7.0, "mit" 6.4; "dx" 2.2, "xy" 2.9) is a
# word of the sentence around a formula, not a product of variables.
_PROSE_ZIPF = 4.0
_PROSE_LANGUAGES = ("en", "de", "fr")


def _is_prose_word(word: str) -> bool:
    if len(word) < 2 or not word.isalpha() or word.lower() in _FUNCTIONS:
        return False
    import wordfreq  # loaded once per process, where a formula candidate is found

    return any(wordfreq.zipf_frequency(word, lang) >= _PROSE_ZIPF for lang in _PROSE_LANGUAGES)


def _balanced(latex: str) -> bool:
    """Whether the formula's own brackets pair up (a run cut inside a bracket is no formula)."""
    escaped = re.findall(r"\\[{}]", latex)
    for opening, text in (("\\{", escaped), ("([{", re.sub(r"\\[{}]", "", latex))):
        depth = 0
        for token in text:
            depth += 1 if token in opening else -1 if token in ("\\}", ")", "]", "}") else 0
            if depth < 0:
                return False
        if depth:
            return False
    return True


_BACK = {v.strip(): k for k, v in {**{k: v for k, v in _SYMBOLS.items()}, **_GREEK}.items()}
_BACK.update({"-": "−", "'": "′", r"\cdots": "···", r"\ldots": "..."})


def _plain_of(words: list[str]) -> str:
    """The extractor's characters for LaTeX words (inverse of :func:`_latex_text`, scripts
    flattened), for locating the formula in its line."""
    text = SIZED_DELIMITER.sub("", " ".join(words))  # not in the Markdown (tex_extension)
    text = _ALPHABET_COMMAND.sub(r"\1", text)
    text = re.sub(r"[\^_]\{([^{}]*)\}", r"\1", text)
    text = text.replace("\\{", "{").replace("\\}", "}")
    return re.sub(r"\\[A-Za-z]+", lambda m: _BACK.get(m.group(0), m.group(0)), text)


def _squash(text: str) -> str:
    text = re.sub(r"\s+", "", text).replace("−", "-").replace("′", "'").replace("⁄", "/")
    return text.replace("∑", "Σ").replace("⋅", "·")


# --- placing formulas in the page's Markdown ---------------------------------------------------

# Markup pymupdf4llm puts around text: emphasis, superscript tags, heading marks.
_MARKUP = re.compile(r"</?su[pb]>|\*\*|__|(?<!\w)_|_(?!\w)|`|^#{1,6}\s+")


_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)")
_BARRIER = "\x00"


def _plain_index(line: str) -> tuple[str, list[int]]:
    """The line without markup and spaces, and for each of its characters its index in the
    line. An inline code span is one character no formula holds: a formula is never placed
    inside code, nor across it."""
    chars: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(line):
        code = _CODE_SPAN.match(line, i) if line[i] == "`" else None
        if code:
            chars.append(_BARRIER)
            where.append(i)
            i = code.end()
            continue
        match = _MARKUP.match(line, i) if i == 0 or line[i] in "<*_`#" else None
        if match and match.end() > i:
            i = match.end()
            continue
        if not line[i].isspace():
            chars.append(line[i])
            where.append(i)
        i += 1
    return _squash("".join(chars)), where


@page_step("formula rebuilding", fallback=unchanged_with_no_notes)
def place_formulas(markdown: str, formulas: list[Formula]) -> tuple[str, list[str]]:
    """The Markdown with each formula's flat text replaced by its LaTeX; and notes for the
    formulas that could not be placed (they stay as text, and the page is flagged)."""
    lines = markdown.split("\n")
    tables = _table_lines(lines)
    notes: list[str] = []
    for formula in formulas:
        if formula.scattered:
            if not _place_scattered(lines, formula):
                notes.append(f"formula left as text: {formula.latex[:60]}")
            continue
        placed = False
        for n, line in enumerate(lines):
            if n in tables:
                continue
            plain, where = _plain_index(line)
            if formula.formula_plain not in plain or len(where) != len(plain):
                continue
            start = _free_match(line, plain, where, formula.formula_plain)
            if start is None:
                continue
            end = start + len(formula.formula_plain)
            if formula.whole_line and start == 0 and end == len(plain):
                lines[n] = f"$${formula.latex}$$"
            else:
                left, right = where[start], where[end - 1] + 1
                # keep markup that closes inside the formula from dangling outside it
                right = _through_closing_tags(line, right)
                left = _through_opening_marks(line, left, right)
                lines[n] = f"{line[:left]}${formula.latex}${line[right:]}"
            placed = True
            break
        if not placed:
            notes.append(f"formula left as text: {formula.latex[:60]}")
    return "\n".join(line for line in lines if line is not _GONE), notes


def _table_lines(lines: list[str]) -> set[int]:
    """The lines of the Markdown's tables (pipe rows, HTML tables). A cell's text is what the
    page's table model holds too, and its blocks, chunks and HTML are read from that model:
    a formula placed in the Markdown's cell alone would make the outputs disagree."""
    found, inside = set(), False
    for n, line in enumerate(lines):
        opened = "<table" in line.lower()
        if inside or opened or line.lstrip().startswith("|"):
            found.add(n)
        inside = (inside or opened) and "</table>" not in line.lower()
    return found


# A formula already placed, inline or displayed: nothing else is matched inside it.
_PLACED = re.compile(r"\$\$.+?\$\$|\$[^$]+\$")


def _free_match(line: str, plain: str, where: list[int], wanted: str) -> int | None:
    """Where ``wanted`` starts in the line's ``plain`` text as a whole (no letter of a word
    around it: the subscripted l_i is not the "li" of "line") and outside any formula already
    placed; None where it is nowhere so."""
    placed = [m.span() for m in _PLACED.finditer(line)]
    start = plain.find(wanted)
    while start >= 0:
        left, right = where[start], where[start + len(wanted) - 1] + 1
        after = _through_closing_tags(line, right)
        if (
            not (left and line[left - 1].isalnum())
            and not (after < len(line) and line[after].isalnum())
            and not any(a < right and left < b for a, b in placed)
        ):
            return start
        start = plain.find(wanted, start + 1)
    return None


_GONE = "\x00gone"
_DASHES = "-_\u2012\u2013\u2014\u2015\u2500"
# A stacked formula's characters may be spread over this many lines of the Markdown.
_MAX_SCATTER_LINES = 4


def _place_scattered(lines: list[str], formula: Formula) -> bool:
    """Put a stacked formula in place of the run of characters, in any order, that it was
    extracted as: within a line, or over up to a few consecutive lines (the blank lines
    between them go too)."""
    dashes = _DASHES if formula.ignore_dashes else ""
    want = Counter(ch for ch in formula.formula_plain if ch not in dashes)
    width = sum(want.values())
    filled = [n for n, line in enumerate(lines) if line.strip() and line is not _GONE]
    for first in range(len(filled)):
        for count in range(1, _MAX_SCATTER_LINES + 1):
            window = filled[first : first + count]
            if len(window) < count:
                break
            chars: list[tuple[int, int, str]] = []  # (line, index in it, character)
            for n in window:
                plain, where = _plain_index(lines[n])
                if len(where) != len(plain):
                    break
                chars += [
                    (n, i, ch) for ch, i in zip(plain, where, strict=True) if ch not in dashes
                ]
            else:
                text = "".join(ch for _, _, ch in chars)
                match = next(
                    (
                        at
                        for at in _anagrams(chars, want, width)
                        if all(piece in text[at : at + width] for piece in formula.pieces)
                    ),
                    None,
                )
                if match is None or (count > 1 and chars[match][0] != window[0]):
                    continue
                start, end = chars[match], chars[match + width - 1]
                if count > 1 and end[0] != window[-1]:
                    continue  # the run does not reach the last line: a smaller window has it
                head = lines[start[0]][: start[1]]
                tail = _through_closing_tags(lines[end[0]], end[1] + 1)
                rest = lines[end[0]][tail:]
                if formula.whole_line and not head.strip() and not rest.strip():
                    lines[start[0]] = f"$${formula.latex}$$"
                else:
                    lines[start[0]] = f"{head}${formula.latex}${rest}"
                for n in range(start[0] + 1, end[0] + 1):
                    lines[n] = _GONE
                return True
    return False


def _anagrams(chars: list[tuple[int, int, str]], want: Counter[str], width: int) -> list[int]:
    """Where runs of ``width`` characters holding exactly ``want`` start."""
    if len(chars) < width:
        return []
    found = []
    have = Counter(ch for _, _, ch in chars[:width])
    for start in range(len(chars) - width + 1):
        if start:
            have[chars[start - 1][2]] -= 1
            have[chars[start + width - 1][2]] += 1
        if +have == want:
            found.append(start)
    return found


def _through_closing_tags(line: str, index: int) -> int:
    match = re.match(r"(?:</su[pb]>|\*\*|_(?!\w))+", line[index:])
    return index + match.end() if match else index


def _through_opening_marks(line: str, left: int, right: int) -> int:
    """Where a formula replacing ``line[left:right]`` starts: before the emphasis marks just
    before it whose closing marks it takes (pymupdf4llm's ``_γ_ 1`` for a math-italic γ), so
    that none is left open outside the delimiters."""
    for mark in ("**", "_", "*"):
        if line[:left].endswith(mark) and _marks(line[left:right], mark) % 2 == 1:
            return left - len(mark)
    return left


def _marks(text: str, mark: str) -> int:
    if mark == "_":
        return len(re.findall(r"(?<!\w)_|_(?!\w)", text))
    if mark == "*":
        return len(re.findall(r"(?<!\*)\*(?!\*)", text))
    return text.count(mark)
