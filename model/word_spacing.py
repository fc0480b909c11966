"""Word spaces as the text layer has them, where pymupdf4llm's Markdown has others.

pymupdf4llm writes a line span by span, and at a span boundary it now and then puts a space
the page does not have (a letter-spaced or kerned word in an office document's PDF comes out
"Re g ular t ex t"; an angle sign before an italic name, "∠ _PQR_"), or drops one it has
(a word run into the next at a change of font). MuPDF's own line text, read from the same
glyphs, spaces them where the page shows a gap; it is the reference here:

- words split: a run of Markdown words whose pieces are not words of the page but whose
  joining is (``Re g ular`` → ``Regular`` where the page has "Regular" and no "Re", "g" or
  "ular") is joined;
- words run together: a Markdown word that is not a word of the page but is two of them that
  stand side by side in one of its lines (``lockingshoulder`` where a line has "locking
  shoulder") gets the space back.

Only words are compared, so markup (emphasis, ``<sup>``, links, table pipes) stays where it
is; so do code and formulas (the prose beside a formula is respaced). Pure string functions."""

from __future__ import annotations

import re

# Markup that is not part of a word: emphasis markers and HTML tags.
_MARKUP = re.compile(r"\*\*|__|\*|_|<[^>]+>")
# A Markdown token: a run of non-space characters.
_TOKEN = re.compile(r"\S+")
# Punctuation around a word that print sets against it ("Scheitelwinkel." is "Scheitelwinkel").
_EDGE = "\"'“”‘’()[]{}.,;:!?|`"
# Signs set against the letters that name a figure: an angle, a triangle.
_FIGURE_SIGNS = ("∠", "△", "∡", "∢")
# Characters of markup at a token's edge.
_MARKS = "*_>"
# At most this many pieces are joined into one word.
_MAX_PIECES = 6
# A joined or split word is at least this long: short ones are too easily a coincidence.
_MIN_WORD = 3


def _core(token: str) -> str:
    return _MARKUP.sub("", token).strip(_EDGE)


def page_words(page_lines: list[str]) -> set[str]:
    return {core for line in page_lines for word in line.split() if (core := _core(word))}


def _page_pairs(page_lines: list[str]) -> set[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    for line in page_lines:
        cores = [_core(word) for word in line.split()]
        pairs.update(zip(cores, cores[1:], strict=False))
    return pairs


def respace_words(markdown: str, page_lines: list[str]) -> str:
    """The Markdown with its words spaced as the page's text lines space them."""
    words = page_words(page_lines)
    if not words:
        return markdown
    pairs = _page_pairs(page_lines)
    out, fenced = [], False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        # Code is respaced elsewhere (``respace_code``); formulas are left as the rebuild
        # wrote them, the prose around them respaced.
        if fenced or line.lstrip().startswith(("```", "~~~")) or "`" in line:
            out.append(line)
            continue
        out.append(
            "".join(
                part if _FORMULA.fullmatch(part) else _respaced(part, words, pairs)
                for part in _FORMULA.split(line)
            )
        )
    return "\n".join(out)


# A formula the rebuild placed (kept whole by the split above: the group captures it).
_FORMULA = re.compile(r"(\$\$.+?\$\$|(?<!\$)\$[^$]+\$)")


def _respaced(text: str, words: set[str], pairs: set[tuple[str, str]]) -> str:
    return _split_run_together(_join_split_words(text, words), words, pairs) if text else text


def _join_split_words(line: str, words: set[str]) -> str:
    tokens = list(_TOKEN.finditer(line))
    cores = [_core(token.group(0)) for token in tokens]
    joins: list[tuple[int, int]] = []  # (first, last) token indices joined into one word
    i = 0
    while i < len(tokens):
        for last in range(min(len(tokens), i + _MAX_PIECES) - 1, i, -1):
            pieces = cores[i : last + 1]
            joined = "".join(pieces)
            if (
                len(joined) >= _MIN_WORD
                and joined in words
                and _wordlike(pieces)
                and any(piece not in words for piece in pieces)
                and _clean_inside(tokens[i : last + 1])
            ):
                joins.append((i, last))
                i = last
                break
        i += 1
    if not joins:
        return line
    text = line
    for first, last in reversed(joins):
        start, end = tokens[first].start(), tokens[last].end()
        text = text[:start] + re.sub(r"\s+", "", text[start:end]) + text[end:]
    return text


def _wordlike(pieces: list[str]) -> bool:
    """Pieces of a word: letters and digits (a hyphen or apostrophe inside), the first one
    perhaps a geometric sign that names a figure by its letters ("∠" of "∠PQR"). Mathematics
    is left alone: MuPDF's spacing of a formula ("r ∈R+") is no better than pymupdf4llm's,
    and the formula rebuild reads the Markdown's."""
    first, *rest = pieces
    if not all(pieces):
        return False
    return (first in _FIGURE_SIGNS or _letters(first)) and all(_letters(p) for p in rest)


def _letters(piece: str) -> bool:
    return all(ch.isalnum() or ch in "-'’" for ch in piece) and any(ch.isalpha() for ch in piece)


def _clean_inside(tokens: list[re.Match[str]]) -> bool:
    """No punctuation where the pieces meet: a comma or bracket there ("a, b") is a real
    separation; nor markup against a letter, which joined would no longer be markup
    ("_x_ zum" as "_x_zum" is not emphasis any more)."""
    bare = [_bare(token.group(0)) for token in tokens]
    inner = bare[1:-1]
    if not (
        bare[0].rstrip(_EDGE) == bare[0]
        and bare[-1].lstrip(_EDGE) == bare[-1]
        and all(piece.strip(_EDGE) == piece for piece in inner)
    ):
        return False
    raw = [token.group(0) for token in tokens]
    for left, right in zip(raw, raw[1:], strict=False):
        if (left[-1] in _MARKS and right[0].isalnum()) or (
            right[0] in _MARKS and left[-1].isalnum()
        ):
            return False
    return True


def _bare(token: str) -> str:
    return _MARKUP.sub("", token)


def _split_run_together(line: str, words: set[str], pairs: set[tuple[str, str]]) -> str:
    def split(match: re.Match[str]) -> str:
        token = match.group(0)
        if _bare(token) != token or token in words:
            return token  # markup inside, or already a word of the page
        core = token.strip(_EDGE)
        if core in words or len(core) < 2 * _MIN_WORD or not core.isalpha():
            return token
        offset = token.index(core) if core else 0
        for cut in range(_MIN_WORD, len(core) - _MIN_WORD + 1):
            left, right = core[:cut], core[cut:]
            if (left, right) in pairs:
                at = offset + cut
                return token[:at] + " " + token[at:]
        return token

    return _TOKEN.sub(split, line)
