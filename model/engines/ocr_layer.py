"""A PDF's own OCR layer, not trusted blindly.

Many scanned PDFs carry an invisible text layer over the page image (text render mode 3, or
fully transparent text), written by whatever OCR the scanner or a later tool ran: often a poor
one, and a handwriting recogniser's guesses on handwritten pages. Copied as it is, its
character errors become the page's text. Such a page is read both ways, from the layer and
by the engine's own OCR of the image, and the better reading is kept.

The measure is the number of the reading's words (three letters or more) that are words of
the page's language in wordfreq's lists (the list ``model.quality.plausibility`` uses; the
language chosen by the readings' script): a misread word is no word, and a reading that drops
lines loses their words, so the count rewards both accuracy and completeness, which a share
alone would not. The layer is kept unless the engine's own reading has at least
``OWN_MARGIN`` more such words (the layer is the document's own; a tie is not a reason to
replace it). Which reading was kept, and both counts, go in the page's report.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pymupdf

from model.plaintext import markdown_to_text
from model.steps import page_step

# A page is an OCR layer over a scan when this share of its text is invisible ...
MIN_INVISIBLE_SHARE = 0.8
# ... and one image covers this share of it.
MIN_IMAGE_COVERAGE = 0.5
# The engine's own reading replaces the layer when it has this many more dictionary words.
OWN_MARGIN = 1.05
_INVISIBLE_MODE = 3
_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def invisible_share(page: pymupdf.Page) -> float:
    """The share of the page's characters drawn invisible (render mode 3, or transparent)."""
    total = invisible = 0
    for span in page.get_texttrace():
        count = len(span.get("chars", ()))
        total += count
        if span.get("type") == _INVISIBLE_MODE or span.get("opacity", 1.0) == 0:
            invisible += count
    return invisible / total if total else 0.0


def _trusted(*args: object, **kwargs: object) -> bool:
    return False  # the check failed: the layer is read as it is, as before


@page_step("OCR layer check", fallback=_trusted)
def is_ocr_layer(page: pymupdf.Page, image_coverage: float) -> bool:
    """Whether the page is a picture of a page with someone's OCR laid invisibly over it."""
    return image_coverage >= MIN_IMAGE_COVERAGE and invisible_share(page) >= MIN_INVISIBLE_SHARE


def dictionary_words(markdown: str, language: str) -> int:
    """How many of the reading's words (three letters or more) are words of ``language``."""
    from model.quality.plausibility import known_share

    text = unicodedata.normalize("NFC", markdown_to_text(markdown))
    words = [word.lower() for word in _WORD.findall(text)]
    return round(known_share(words, language) * len(words)) if words else 0


def reading_language(*markdowns: str) -> str:
    """The language whose list explains the readings best (``plausibility``'s choice), or
    English where they have too few words to say."""
    from model.quality.plausibility import plausibility

    judged = [plausibility(markdown) for markdown in markdowns]
    best = max((j for j in judged if j is not None), default=None)
    return best[1] if best is not None else "en"


def choose_reading(layer_markdown: str, own_markdown: str) -> tuple[str, dict[str, Any]]:
    """Which reading to keep ("ocr-layer" or "own-ocr"), and the page report's entry."""
    language = reading_language(layer_markdown, own_markdown)
    layer_words = dictionary_words(layer_markdown, language)
    own_words = dictionary_words(own_markdown, language)
    kept = "own-ocr" if own_words > OWN_MARGIN * layer_words else "ocr-layer"
    return kept, {
        "kept": kept,
        "measure": f"words of the page's language ({language}) in wordfreq's list",
        "ocr_layer_words": layer_words,
        "own_ocr_words": own_words,
    }
