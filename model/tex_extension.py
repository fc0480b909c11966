"""TeX's math extension font (Computer Modern's CMEX, Latin Modern's LMEX): its delimiters
have no Unicode, and MuPDF, asked for character codes where a glyph has none
(``TEXT_CID_FOR_UNKNOWN_UNICODE``, as the engine reads a page's glyphs), gives their codes,
which are the font's fixed layout (the TeXbook's Appendix F, cmex10): the ``\\big``, ``\\Big``,
``\\bigg`` and ``\\Bigg`` sizes of ( ) [ ] { }, then the pieces that build larger ones (tops,
bottoms, extensions) and the bars' extensions. pymupdf4llm, which does not ask for codes,
writes U+FFFD for them, and the repairs drop it: they are not in the Markdown."""

from __future__ import annotations

import functools
import re

# Whole delimiters, one glyph each, by size. Code 0x20, \Bigg(, is left out: it reads as a
# space, and MuPDF writes a space of the span's font where it sees a gap between glyphs.
_WHOLE = {
    **dict.fromkeys((0x00, 0x10, 0x12), "("),
    **dict.fromkeys((0x01, 0x11, 0x13, 0x21), ")"),
    **dict.fromkeys((0x02, 0x14, 0x22, 0x68), "["),
    **dict.fromkeys((0x03, 0x15, 0x23, 0x69), "]"),
    **dict.fromkeys((0x08, 0x1A, 0x28, 0x6E), "{"),
    **dict.fromkeys((0x09, 0x1B, 0x29, 0x6F), "}"),
}
# Pieces: tops, bottoms and extensions; "" for the extension both braces share.
_PIECES = {
    **dict.fromkeys((0x30, 0x40, 0x42), "("),
    **dict.fromkeys((0x31, 0x41, 0x43), ")"),
    **dict.fromkeys((0x32, 0x34, 0x36), "["),
    **dict.fromkeys((0x33, 0x35, 0x37), "]"),
    **dict.fromkeys((0x38, 0x3A, 0x3C), "{"),
    **dict.fromkeys((0x39, 0x3B, 0x3D), "}"),
    0x3E: "",
    0x0C: "|",
    0x0D: "‖",
}
DELIMITER_CODES = {**_WHOLE, **_PIECES}
PIECE_CODES = frozenset(_PIECES)
_FONT = re.compile(r"^(?:CM|LM)EX\d|MathExtension", re.IGNORECASE)
_OPENING = "([{"
# Each kind of delimiter as LaTeX writes it after \bigl, \left and the like.
DELIMITER_LATEX = {"(": "(", ")": ")", "[": "[", "]": "]", "{": r"\{", "}": r"\}"}
DELIMITER_LATEX.update({"|": "|", "‖": r"\|"})
# Those, and a pair of tall delimiters put around a fraction (``\\left(``), in a formula.
SIZED_DELIMITER = re.compile(r"\\(?:big[lr]|left|right)(?:\\[{}|]|[()\[\]|])")


@functools.lru_cache(maxsize=256)  # asked for every glyph; a page has a handful of fonts
def is_extension_font(name: str) -> bool:
    return bool(_FONT.search(name.split("+", 1)[-1]))


def whole_delimiter_latex(ch: str) -> str | None:
    """The LaTeX of a whole delimiter's character code, None for any other character."""
    # A whole delimiter is sized (its size is lost with its extent, \big is near), so that the
    # Markdown's plain text, which has none of them, can be matched without it.
    kind = _WHOLE.get(ord(ch)) if len(ch) == 1 else None
    if not kind:
        return None
    return (r"\bigl" if kind in _OPENING else r"\bigr") + DELIMITER_LATEX[kind]
