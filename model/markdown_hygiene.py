"""Markdown a person can read: the marks an extractor leaves that render as something the
page never showed.

- Strike-through from rules that are no strike-outs: MuPDF calls text crossed by a drawn
  line struck out, and pymupdf4llm writes ``~~…~~``; a ruled notebook page, or a form whose
  fields are drawn as lines through their labels' height, then comes out struck through from
  top to bottom. A real strike-out marks a few words; when most of a page's text is "struck",
  the lines are the page's rules and the marks go. One or two characters "struck" are a
  formula's symbols under its own bars.
- ``<sup>`` around ordinary words: a span set a little above the line (a small-caps run, a
  raised label) comes out as a superscript. Footnote marks and exponents stay (digits, signs,
  one or two letters); a superscript holding a word of four letters or more is set as text.
- Emphasis that does not close: a ``**`` or ``__`` left alone in a paragraph renders as bold
  running to the paragraph's end (or as two stars); an unpaired last marker goes.
- Spaces an extractor puts at a change of style where print has none: before a full stop,
  comma or closing bracket after an emphasised run (``**metrischer Raum** .``), and after an
  opening bracket before one (``( _X, d_ )``).
- Quotes: TeX's and typewriters' doubled single quotes (``‘‘…’’``, ``\\`\\`…''``) are one
  double quote each (``“…”``).
- TeX's logos: LaTeX sets its "A" raised and small, and the extractor writes
  ``L<sup>A</sup> TEX``, in bold headings ``L**<sup>**A**</sup>**TEX``; a reader sees
  "LaTeX". On a page with that logo, "TEX" is TeX's (its "E" is set lowered), "TeX", and
  "LATEX" the logo in a footnote's size, "LaTeX".

Pure string functions, outside code blocks and inline code.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from model.steps import page_step, unchanged

# When at least this share of a page's letters is inside ~~…~~, the marks are rules.
_RULED_SHARE = 0.5
_STRIKE = re.compile(r"~~(.+?)~~", re.DOTALL)
_STRUCK_SYMBOL = re.compile(r"~~(\S{1,2})~~")
_SUP = re.compile(r"<sup>([^\n]*?)</sup>")
# A word a superscript does not hold as a mark: four letters or more.
_WORD = re.compile(r"[^\W\d_]{4,}")
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE = re.compile(r"`[^`\n]+`")


@page_step("markdown hygiene", fallback=unchanged)
def readable_markdown(markdown: str) -> str:
    """All the repairs of this module, in order."""
    return outside_code(markdown, _repairs)


def _repairs(text: str) -> str:
    text = unstrike_rules(text)
    text = plain_superscript_words(text)
    text = normalise_quotes(text)
    text = tex_logos(text)
    text = tighten_emphasis(text)
    text = _SPACE_AFTER_MATH.sub(r"\1", text)
    text = _SPACE_AFTER_BRACKET_BEFORE_CODE.sub("", _SPACE_AFTER_CODE.sub(r"\1", text))
    return "\n\n".join(balance_emphasis(p) for p in text.split("\n\n"))


def outside_code(markdown: str, repair: Callable[[str], str]) -> str:
    """``repair`` applied to the Markdown less its fenced code blocks and inline code, which
    are written as the page has them."""
    parts: list[tuple[bool, str]] = []  # (is code, text)
    fenced = False
    for line in markdown.split("\n"):
        if _FENCE.match(line):
            parts.append((True, line))
            fenced = not fenced
            continue
        parts.append((fenced, line))
    text_lines = [line for code, line in parts if not code]
    if not text_lines:
        return markdown  # code alone: nothing to repair (and no empty line to add)
    # Inline code is kept aside under a placeholder no repair touches.
    kept: list[str] = []

    def hide(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\x00{len(kept) - 1}\x00"

    joined = _INLINE_CODE.sub(hide, "\n".join(text_lines))
    repaired = re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], repair(joined))
    repaired_lines = iter(repaired.split("\n"))
    out = [line if code else next(repaired_lines, "") for code, line in parts]
    out.extend(repaired_lines)  # a repair that added lines keeps them
    return "\n".join(out)


def unstrike_rules(markdown: str) -> str:
    """Without ``~~`` where most of the page's letters are struck: its rules, not strike-outs;
    and without it around one or two characters, which are a formula's symbols crossed by its
    own bars (a radical's overline through "√", a quotient's bar through "T")."""
    markdown = _STRUCK_SYMBOL.sub(r"\1", markdown)
    letters = sum(ch.isalnum() for ch in markdown)
    struck = sum(ch.isalnum() for m in _STRIKE.finditer(markdown) for ch in m.group(1))
    if not letters or struck < _RULED_SHARE * letters:
        return markdown
    return _STRIKE.sub(r"\1", markdown)


def plain_superscript_words(markdown: str) -> str:
    """``<sup>`` unwrapped where it holds an ordinary word rather than a mark or exponent."""

    def unwrap(match: re.Match[str]) -> str:
        inner = match.group(1)
        if not _WORD.search(inner):
            return match.group(0)
        return f" {inner.strip()} " if inner.strip() else ""

    text = _SUP.sub(unwrap, markdown)
    return re.sub(r"(?<=\S) {2,}(?=\S)", " ", text) if text != markdown else text


def normalise_quotes(markdown: str) -> str:
    """Doubled single quotes as one double quote."""
    text = markdown.replace("‘‘", "“").replace("’’", "”")
    # TeX's ``…'' (two grave accents, two apostrophes), where a reader sees a quotation.
    return re.sub(r"``(?=\S)(.+?)(?<=\S)''", r"“\1”", text)


# "L", the raised "A", "TEX", and the emphasis markers the extractor closes and reopens
# around the superscript (which cancel out once the logo is one word).
_LATEX_LOGO = re.compile(
    r"(?<![A-Za-z])L(?P<mark>\*\*|_)? ?<sup>(?:\*\*|_)?A(?:\*\*|_)?</sup>"
    r"(?(mark)(?P=mark)) ?TEX(?![A-Za-z])"
)
# Not inside a Latin word; beside Hangul or CJK (Korean particles follow without a space) it is.
# "LATEX" is the logo in footnote sizes, where its "A" is not raised enough to be a superscript.
_TEX = re.compile(r"(?<![A-Za-z])(LA)?TEX(?![A-Za-z])")


def tex_logos(markdown: str) -> str:
    """TeX's logos as their names: ``L<sup>A</sup> TEX`` is "LaTeX", and on a page that
    has it, "TEX" is "TeX" and "LATEX" "LaTeX"."""
    text = _LATEX_LOGO.sub("LaTeX", markdown)
    if text == markdown:
        return text
    return _TEX.sub(lambda m: "LaTeX" if m.group(1) else "TeX", text)


# A closing marker (after a non-space), spaces, then punctuation that sticks to the word before
# (the punctuation ends a word, or a footnote's mark follows it: "`longtable` .<sup>1</sup>").
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<=[^\s*_])(\*\*|__|\*|_) +(?=[.,;:!?)\]](?:\s|$|<sup>))")
# The same after an inline formula the rebuild placed where the extractor had a spaced run
# ("$a, b, c \in X$ ,").
_SPACE_AFTER_MATH = re.compile(r"(?<!\$)(\$[^$\n]+\$) +(?=[.,;:!?)\]](?:\s|$|<sup>))")
# And after inline code, which pymupdf4llm sets off with spaces whatever stands beside it
# ("`\qty()` ."); here the code is ``outside_code``'s placeholder.
_SPACE_AFTER_CODE = re.compile(r"(\x00\d+\x00) +(?=\)|[.,;:!?\]](?:\s|$|<sup>))")
_SPACE_AFTER_BRACKET_BEFORE_CODE = re.compile(r"(?<=[(\[]) +(?=\x00\d+\x00)")
# An opening bracket, spaces, then an opening marker (before a non-space).
_SPACE_AFTER_BRACKET = re.compile(r"(?<=[(\[]) +(?=(?:\*\*|__|\*|_)[^\s*_])")


def tighten_emphasis(markdown: str) -> str:
    """No space between an emphasised run and the punctuation or bracket that print sets
    against it, and no seam between two bold runs that touch."""
    text = _SPACE_BEFORE_PUNCTUATION.sub(r"\1", markdown)
    text = _SPACE_AFTER_BRACKET.sub("", text)
    # one bold run closed and the next opened at once ("TEX2****_ε_"): one run
    text = re.sub(r"(?<=[^\s*])\*\*\*\*(?=[^\s*])", "", text)
    # the closing bracket after a closing marker: "d_ )" → "d_)"
    return re.sub(r"(?<=[^\s*_])(\*\*|__|\*|_) +(?=\))", r"\1", text)


_EMPHASIS = re.compile(r"(?<![\\*])\*\*(?!\*)|(?<![\\_\w])__(?!_)|(?<!_)__(?![_\w])")


def balance_emphasis(paragraph: str) -> str:
    """A paragraph whose ``**`` (or ``__``) markers do not pair up loses its last one."""
    for marker in ("**", "__"):
        positions = [m.start() for m in _EMPHASIS.finditer(paragraph) if m.group(0) == marker]
        if len(positions) % 2:
            at = positions[-1]
            paragraph = paragraph[:at] + paragraph[at + 2 :]
    return paragraph
