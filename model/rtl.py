"""Arabic text layers in logical order: the lam-alef ligatures MuPDF turns round.

An Arabic font draws lam followed by alef (لا, لأ, لإ, لآ) as one glyph. MuPDF maps the glyph to
its two letters and then reverses the right-to-left run for display order to logical order, so
the pair comes out reversed: "الإنتاجية" extracts as "اإلنتاجية". The alef of a reversed pair
has no width of its own (it shares the ligature glyph's advance), which tells it apart from a
real alef-lam ("ال", the article), whose alef is a glyph of its own.
"""

from __future__ import annotations

import re
from typing import Any

_ALEFS = "اأإآ"
_LAM = "ل"
_ARABIC = re.compile("[\u0600-\u06ff]")
_WORD = re.compile("[\u0600-\u06ff\u0750-\u077f]+")


def has_arabic(text: str) -> bool:
    return bool(_ARABIC.search(text))


def ligature_fixes(rawdict: dict[str, Any]) -> dict[str, str]:
    """Words as extracted → the same words with their lam-alef pairs in logical order, from a
    page's ``get_text("rawdict")``; only words whose fix is unambiguous."""
    fixes: dict[str, str] = {}
    clashes: set[str] = set()
    for block in rawdict.get("blocks", []):
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                chars = span.get("chars", [])
                extracted = "".join(c["c"] for c in chars)
                fixed = list(extracted)
                changed = False
                for i in range(len(chars) - 1):
                    alef, lam = chars[i], chars[i + 1]
                    if alef["c"] in _ALEFS and lam["c"] == _LAM:
                        x0, _, x1, _ = alef["bbox"]
                        if abs(x1 - x0) < 0.01:  # no advance: half of a ligature glyph
                            fixed[i], fixed[i + 1] = _LAM, alef["c"]
                            changed = True
                if not changed:
                    for word in _WORD.findall(extracted):
                        if word in fixes:
                            clashes.add(word)
                    continue
                for before, after in zip(
                    _WORD.findall(extracted), _WORD.findall("".join(fixed)), strict=False
                ):
                    if before == after:
                        if before in fixes:
                            clashes.add(before)
                        continue
                    if fixes.get(before, after) != after:
                        clashes.add(before)
                    fixes[before] = after
    return {k: v for k, v in fixes.items() if k not in clashes}


def apply_fixes(markdown: str, fixes: dict[str, str]) -> str:
    if not fixes:
        return markdown
    return _WORD.sub(lambda m: fixes.get(m.group(0), m.group(0)), markdown)
