"""Markdown and plain text in: decoded and normalised, then passed through as they are."""

from __future__ import annotations

import re
import unicodedata

from model.formats.sniff import decode_text

_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.M)
_BLANK_RUNS = re.compile(r"\n{3,}")


class NotText(ValueError):
    pass


def normalized_text(data: bytes) -> str:
    """UTF-8 (or UTF-16 with a byte-order mark) text with Unix line ends, NFC, no control
    characters, no trailing spaces and at most one blank line in a row."""
    text = decode_text(data)
    if text is None:
        raise NotText("the file is not UTF-8 text")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = unicodedata.normalize("NFC", _CONTROLS.sub("", text))
    text = _TRAILING_SPACE.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip("\n")
