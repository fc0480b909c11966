"""Is the output made of words? A check a program can make without the truth.

A handwritten page read as print, a worn nineteenth-century page, a formula spelled out as
letters: each comes out as strings that are no words of any language, even where every
character is a plausible one. The check counts the share of the output's words (three letters
and more) that wordfreq knows in the page's language. wordfreq ships its word lists inside
its wheel (nothing is downloaded); a language's list loads once per process, on first use
(about 0.7 s for English, 2-4 s for the larger lists), and a lookup then costs microseconds.

The language is chosen by script; Latin-script pages try English first and other languages
only when English explains too little, so an English page never pays for another list.
Scripts without a word list here (CJK, which wordfreq segments with optional extras) are not
judged.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

# Fewer words than this and the share says nothing.
MIN_WORDS = 15
# Under this share of known words the text is not a language. Clean pages of English, German,
# French and Arabic prose score 0.85-1.0; lorem ipsum scores 0.7-0.8 against English; OCR of
# handwriting and of degraded old print scores 0.2-0.5.
MIN_KNOWN_SHARE = 0.6
MIN_WORD_LENGTH = 3

# The word lists to try, per script, most likely first.
LATIN = ("en", "de", "fr", "es", "it", "pt", "nl", "pl", "sv", "cs")
LANGUAGES_BY_SCRIPT = {
    "LATIN": LATIN,
    "ARABIC": ("ar", "fa", "ur"),
    "HEBREW": ("he",),
    "CYRILLIC": ("ru", "uk", "bg"),
    "GREEK": ("el",),
}

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def script_of(char: str) -> str:
    """The script named first in a letter's Unicode name ("LATIN", "ARABIC", ...)."""
    try:
        return unicodedata.name(char).split(" ", 1)[0]
    except ValueError:
        return ""


def dominant_script(words: list[str]) -> str:
    scripts = Counter(script_of(word[0]) for word in words)
    return scripts.most_common(1)[0][0] if scripts else ""


@lru_cache(maxsize=200_000)  # bounded: a worker lives for thousands of pages
def _known(language: str, word: str) -> bool:
    import wordfreq  # heavy import (regex, msgpack): only where the signal runs

    return wordfreq.zipf_frequency(word, language) > 0


def known_share(words: list[str], language: str) -> float:
    return sum(_known(language, word) for word in words) / len(words)


# The plausibility and apostrophe signals both judge the same page's words: it is measured
# once.
@lru_cache(maxsize=8)
def plausibility(text: str) -> tuple[float, str] | None:
    """The best share of known words of a page's plain text (NFC) over the script's
    languages, and that language; None where the page has too few words, or a script this
    check has no list for."""
    words = [w.lower() for w in _WORD.findall(text) if len(w) >= MIN_WORD_LENGTH]
    if len(words) < MIN_WORDS:
        return None
    languages = LANGUAGES_BY_SCRIPT.get(dominant_script(words))
    if not languages:
        return None
    best = (0.0, languages[0])
    for language in languages:
        share = known_share(words, language)
        best = max(best, (share, language))
        if share >= MIN_KNOWN_SHARE:
            break
    return best


# --- apostrophes lost ---------------------------------------------------------------------------

# English contractions end in one of these after the apostrophe.
_CONTRACTION_ENDS = ("s", "t", "re", "ve", "ll", "d", "m")
# A word is a contraction that lost its apostrophe when the contraction is this much more
# frequent (wordfreq's Zipf scale, a factor of ten a step): "heres" 3.2 against "here's" 4.9,
# "cant" 4.4 against "can't" 5.8; words in their own right are not ("well" 6.0 against "we'll"
# 4.9, "ill" 4.7 against "i'll" 5.4, "lets" 4.5 against "let's" 5.2).
CONTRACTION_MARGIN = 1.0


def lost_apostrophes(text: str) -> list[str] | None:
    """The words of an English page's plain text that are contractions without their
    apostrophe ("Heres", "Theyre", "cant"): a font without an apostrophe glyph, or OCR that
    dropped it. None where the page is not judged as English (too few words, another script
    or language)."""
    measured = plausibility(text)
    if measured is None or measured[1] != "en":
        return None
    found = []
    for word in _WORD.findall(text):
        if len(word) >= MIN_WORD_LENGTH and _contraction_of(word.lower()):
            found.append(word)
    return found


@lru_cache(maxsize=50_000)
def _contraction_of(word: str) -> str | None:
    import wordfreq

    own = wordfreq.zipf_frequency(word, "en")
    for end in _CONTRACTION_ENDS:
        if len(word) > len(end) and word.endswith(end):
            contraction = f"{word[: -len(end)]}'{end}"
            if wordfreq.zipf_frequency(contraction, "en") >= own + CONTRACTION_MARGIN:
                return contraction
    return None
