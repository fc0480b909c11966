"""Word spaces between Korean words that a text layer sets as gaps, not as characters.

Korean separates its words with spaces; Chinese and Japanese do not. MuPDF makes a space
of a gap between two glyphs in Latin text, but not between CJK glyphs, Hangul included, so a
Korean PDF whose typesetter spaces words by moving the pen (the Korean ``lshort``, set by
XeTeX/ko.TeX: 0.03 pt between the syllables of a word, 3.2 pt between words, at 10 pt) comes
out of MuPDF, and so of pymupdf4llm, with a whole line as one word:
"큰문서를작업할때에여러부분으로". The glyphs say where the words are: a gap of at least
``MIN_GAP_EM`` of the type size next to a Hangul glyph, with no space character in it, is a
word space. Each word the page's line runs together is written back with its spaces wherever
it stands in the Markdown with no Hangul beside it (never inside a longer run).
"""

from __future__ import annotations

import re
from typing import Any

# A gap this share of the type size or wider is a word space (words' gaps on the Korean
# lshort are 0.32 of it, syllables' 0.003).
MIN_GAP_EM = 0.2
# The precomposed Hangul syllables (a character class's range), and with them the jamo and
# compatibility jamo.
SYLLABLES = "\uac00-\ud7a3"
_HANGUL = re.compile(rf"[{SYLLABLES}\u1100-\u11ff\u3130-\u318f]")


def is_hangul(character: str) -> bool:
    return bool(_HANGUL.match(character))


def has_hangul(text: str) -> bool:
    return bool(_HANGUL.search(text))


def spaced_words(rawdict: dict[str, Any]) -> dict[str, str]:
    """Each run of Hangul glyphs of a line (``page.get_text("rawdict")``) that holds a word
    gap, as MuPDF wrote it and as the gaps space it. The runs end at any other character and
    at a change of span, so that a run is found whole in the Markdown whatever markup
    pymupdf4llm puts beside it (emphasis, a code span, a logo's ``<sup>``)."""
    found: dict[str, str] = {}
    for block in rawdict.get("blocks", []):
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                chars = _sized(span)
                word, spaced = "", ""
                for index, (char, size) in enumerate(chars):
                    if not is_hangul(char["c"]):
                        _keep(found, word, spaced)
                        word, spaced = "", ""
                        continue
                    if word and _word_gap(chars[index - 1], (char, size)):
                        spaced += " "
                    word += char["c"]
                    spaced += char["c"]
                _keep(found, word, spaced)
    return found


def respace_hangul(markdown: str, rawdict: dict[str, Any]) -> str:
    """The Markdown with the Korean words its text layer ran together spaced as the glyphs
    show them (``spaced_words``), longest first, each only where no Hangul adjoins it (never
    inside a longer run)."""
    fixes = spaced_words(rawdict)
    for word in sorted(fixes, key=len, reverse=True):
        pattern = re.compile(rf"(?<!{_HANGUL.pattern}){re.escape(word)}(?!{_HANGUL.pattern})")
        markdown = pattern.sub(fixes[word], markdown)
    return markdown


def _sized(span: dict[str, Any]) -> list[tuple[dict[str, Any], float]]:
    size = float(span.get("size") or 0.0)
    return [(char, size) for char in span.get("chars", [])]


def _word_gap(before: tuple[dict[str, Any], float], after: tuple[dict[str, Any], float]) -> bool:
    (left, left_size), (right, right_size) = before, after
    gap = float(right["bbox"][0]) - float(left["bbox"][2])
    return gap >= MIN_GAP_EM * max(left_size, right_size, 1.0)


def _keep(found: dict[str, str], word: str, spaced: str) -> None:
    if spaced != word:
        found[word] = spaced
