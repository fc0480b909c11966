"""Text normalisation of transcribed Markdown, as a request option.

Archival users want the characters the page holds (a ligature glyph, a soft hyphen, a word
broken at the margin); search, diffing and language models want the words. Each step is
opt-in and named, so that the option value is also a stable part of the result cache key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from model.steps import page_step, unchanged

STEPS = ("ligatures", "hyphenation", "whitespace")
ALL = "all"
NONE = "none"

# Latin presentation-form ligatures (U+FB00-FB06) that fonts and text layers emit for fi, fl …
_LIGATURES = str.maketrans(
    {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st", "Ꜳ": "AA"}
)
_SOFT_HYPHEN = "\u00ad"
# "exam-" at a line's end and "ple" starting the next: one word broken at the margin.
# Both sides must be letters and the continuation lower case ("Jean-\nPaul" stays).
_BROKEN_WORD = re.compile(r"(?<=[^\W\d_])[-\u00ad\u2010]\n[ \t]*(?=[^\W\d_A-Z])", re.UNICODE)
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")
_SPACES = re.compile(r"(?<=\S)[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]{2,}|[\u00a0\u202f]")


class NormalizeError(ValueError):
    """An option value naming no known normalisation step."""


def parse_steps(value: str | Iterable[str] | bool | None) -> str:
    """A request's ``normalize`` value as the canonical option string: the chosen steps,
    sorted and comma-joined ("" for none). Accepts "all", "none", "true"/"false", a
    comma-separated list, or a list of names."""
    if value is None or value is False:
        return ""
    if value is True:
        return ",".join(sorted(STEPS))
    parts = value.split(",") if isinstance(value, str) else list(value)
    names = {part.strip().lower() for part in parts if part.strip()}
    if names & {ALL, "true", "1", "yes", "on"}:
        return ",".join(sorted(STEPS))
    if names <= {NONE, "false", "0", "no", "off"}:
        return ""
    unknown = names - set(STEPS)
    if unknown:
        raise NormalizeError(
            f"unknown normalisation {', '.join(sorted(unknown))!s}; "
            f"choose from {', '.join(STEPS)}, {ALL} or {NONE}"
        )
    return ",".join(sorted(names))


@page_step("text normalisation", fallback=unchanged)
def normalize_markdown(markdown: str, steps: str) -> str:
    """Apply the named steps (a ``parse_steps`` string) outside code fences and tables."""
    chosen = {s for s in steps.split(",") if s}
    if not chosen or not markdown:
        return markdown
    blocks = re.split(r"(^```.*?^```[^\n]*$)", markdown, flags=re.MULTILINE | re.DOTALL)
    out = []
    for index, block in enumerate(blocks):
        out.append(block if index % 2 else _normalize_block(block, chosen))
    return "".join(out)


def _normalize_block(text: str, steps: set[str]) -> str:
    if "ligatures" in steps:
        text = text.translate(_LIGATURES)
    if "hyphenation" in steps:
        text = _join_broken_words(text)
        text = text.replace(_SOFT_HYPHEN, "")
    if "whitespace" in steps:
        text = _ZERO_WIDTH.sub("", text)
        lines = []
        for line in text.split("\n"):
            # Table rows keep their padding: pipes align by it in a plain-text view.
            lines.append(line if line.lstrip().startswith("|") else _SPACES.sub(" ", line))
        text = "\n".join(line.rstrip() for line in lines)
        text = re.sub(r"\n{3,}", "\n\n", text)
    return text


def _join_broken_words(text: str) -> str:
    # Only inside a paragraph: a line that is a table row, a heading or a list item is its
    # own unit, and a hyphen ending it is the writer's.
    def join(match: re.Match[str]) -> str:
        start = text.rfind("\n", 0, match.start()) + 1
        line = text[start : match.start()].lstrip()
        if line.startswith(("|", "#", "<")):
            return str(match.group(0))
        return ""

    return _BROKEN_WORD.sub(join, text)
