"""Page-level unit tests in olmOCR-Bench's JSONL format, and their scorer.

One JSON object per line: ``{"pdf": "name.pdf", "page": 1, "id": "...", "type": ..., ...}``
with the types and fields of olmOCR-Bench (``olmocr/bench/tests.py``):

- ``present`` / ``absent``: ``text``, ``max_diffs``, ``case_sensitive``, ``first_n``, ``last_n``;
  fuzzy: passes when rapidfuzz's ``partial_ratio`` ≥ 1 − max_diffs / len(text).
- ``order``: ``before``, ``after``, ``max_diffs``: both found, ``before`` starting first.
- ``table``: ``cell`` and any of ``up``, ``down``, ``left``, ``right``, ``top_heading``,
  ``left_heading``, in any pipe or HTML table (merged cells expanded); similarity ≥
  max(0.5, 1 − max_diffs / len).
- ``math``: ``math`` (LaTeX), found among the ``$…$``, ``$$…$$``, ``\\(…\\)``, ``\\[…\\]``
  spans of the output.
- ``baseline``: some letters or digits, no runaway repetition, (optionally) no characters of
  scripts the page does not use; with ``max_length`` it is a blank-page test instead.

Where this differs from olmOCR-Bench, on purpose: ``math`` compares LaTeX after a canonical
normalisation (spacing commands, ``\\left``/``\\right``, redundant braces, ``\\dfrac`` …) instead
of rendering both with KaTeX in a browser, which needs Playwright and Chromium; ``order`` uses
rapidfuzz's best alignment instead of fuzzysearch's every match. The normalisation of text
(whitespace, emphasis markers, quotes and dashes, NFC) is olmOCR-Bench's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from rapidfuzz import fuzz

from model.repetition import periodic_tail
from model.tables import Table, all_tables, html_tables

TEST_TYPES = ("present", "absent", "order", "table", "math", "baseline")


class CheckDefinitionError(ValueError):
    """A JSONL line that is not a valid test."""


_REPLACEMENTS = str.maketrans(
    {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "＿": "_",
        "–": "-",
        "—": "-",
        "‑": "-",
        "‒": "-",
        "−": "-",
        "\u00b5": "\u03bc",
    }
)


def normalize_text(text: str) -> str:
    """olmOCR-Bench's normalisation: what a reader would not call a difference."""
    text = re.sub(r"<br\s*/?>", " ", text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\*\*(.*?)\*\*", r"\1", text)
    text = re.sub(r"__(.*?)__", r"\1", text)
    text = re.sub(r"</?[bi]>", "", text)
    text = re.sub(r"\*(.*?)\*", r"\1", text)
    text = re.sub(r"_(.*?)_", r"\1", text)
    return unicodedata.normalize("NFC", text).translate(_REPLACEMENTS)


def _threshold(reference: str, max_diffs: int, floor: float = 0.0) -> float:
    return max(floor, 1.0 - max_diffs / max(len(reference), 1))


@dataclass
class PageTest:
    pdf: str
    page: int
    id: str
    type: str
    max_diffs: int = 0
    # Free-form provenance (which generator or document feature the test covers).
    category: str = ""

    kinds: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        if not self.pdf or not self.id:
            raise CheckDefinitionError("a test needs a pdf and an id")
        if self.type not in self.kinds:
            raise CheckDefinitionError(f"{self.id}: type {self.type!r} is not one of {self.kinds}")
        if not isinstance(self.max_diffs, int) or self.max_diffs < 0:
            raise CheckDefinitionError(f"{self.id}: max_diffs must be a whole number ≥ 0")

    def run(self, markdown: str) -> tuple[bool, str]:
        raise NotImplementedError

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class TextPresenceTest(PageTest):
    text: str = ""
    case_sensitive: bool = True
    first_n: int | None = None
    last_n: int | None = None

    kinds: ClassVar[tuple[str, ...]] = ("present", "absent")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not normalize_text(self.text).strip():
            raise CheckDefinitionError(f"{self.id}: empty text")

    def run(self, markdown: str) -> tuple[bool, str]:
        reference = normalize_text(self.text)
        content = normalize_text(markdown)
        if not self.case_sensitive:
            reference, content = reference.lower(), content.lower()
        if self.first_n and self.last_n:
            content = content[: self.first_n] + content[-self.last_n :]
        elif self.first_n:
            content = content[: self.first_n]
        elif self.last_n:
            content = content[-self.last_n :]
        threshold = _threshold(reference, self.max_diffs)
        ratio = fuzz.partial_ratio(reference, content) / 100.0
        found = ratio >= threshold
        if self.type == "present":
            return found, "" if found else f"{reference[:40]!r} not found (best {ratio:.2f})"
        return not found, "" if not found else f"{reference[:40]!r} is present (best {ratio:.2f})"


@dataclass
class OrderTest(PageTest):
    before: str = ""
    after: str = ""

    kinds: ClassVar[tuple[str, ...]] = ("order",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.before.strip() or not self.after.strip():
            raise CheckDefinitionError(f"{self.id}: order needs before and after")
        if self.max_diffs > min(len(self.before), len(self.after)) // 2:
            raise CheckDefinitionError(f"{self.id}: max_diffs is over half the text")

    def run(self, markdown: str) -> tuple[bool, str]:
        content = normalize_text(markdown)
        before = _locate(normalize_text(self.before), content, self.max_diffs)
        after = _locate(normalize_text(self.after), content, self.max_diffs)
        if before is None:
            return False, f"before {self.before[:40]!r} not found"
        if after is None:
            return False, f"after {self.after[:40]!r} not found"
        if before < after:
            return True, ""
        return False, f"{self.after[:40]!r} comes before {self.before[:40]!r}"


def _locate(needle: str, haystack: str, max_diffs: int) -> int | None:
    """Where ``needle`` starts in ``haystack``, allowing ``max_diffs`` edits; None if absent."""
    if max_diffs == 0:
        index = haystack.find(needle)
        return index if index >= 0 else None
    alignment = fuzz.partial_ratio_alignment(needle, haystack)
    if alignment is None or alignment.score / 100.0 < _threshold(needle, max_diffs):
        return None
    return alignment.dest_start


@dataclass
class TableTest(PageTest):
    cell: str = ""
    up: str = ""
    down: str = ""
    left: str = ""
    right: str = ""
    top_heading: str = ""
    left_heading: str = ""
    ignore_markdown_tables: bool = False

    kinds: ClassVar[tuple[str, ...]] = ("table",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.cell.strip():
            raise CheckDefinitionError(f"{self.id}: table needs a cell")

    def _similar(self, reference: str, candidate: str) -> bool:
        reference = normalize_text(reference).strip()
        threshold = _threshold(reference, self.max_diffs, floor=0.5)
        return fuzz.ratio(reference, normalize_text(candidate).strip()) / 100.0 >= threshold

    def run(self, markdown: str) -> tuple[bool, str]:
        tables = html_tables(markdown) if self.ignore_markdown_tables else all_tables(markdown)
        if not tables:
            return False, "no tables found"
        found_cell = False
        for table in tables:
            for r, row in enumerate(table.rows):
                for c, text in enumerate(row):
                    if not self._similar(self.cell, text):
                        continue
                    found_cell = True
                    if self._relations_hold(table, r, c):
                        return True, ""
        if not found_cell:
            return False, f"no cell like {self.cell[:40]!r}"
        return False, f"cell {self.cell[:40]!r} found, but not with its neighbours"

    def _relations_hold(self, table: Table, r: int, c: int) -> bool:
        neighbours = {
            self.up: (r - 1, c),
            self.down: (r + 1, c),
            self.left: (r, c - 1),
            self.right: (r, c + 1),
        }
        for expected, (rr, cc) in neighbours.items():
            if expected and not self._similar(expected, table.cell(rr, cc)):
                return False
        if self.top_heading:
            # Any heading row above the cell in its column (or the first row, for tables
            # written without marked headings).
            heads = [table.cell(h, c) for h in range(max(table.header_rows, 1)) if h < r]
            if not any(self._similar(self.top_heading, h) for h in heads):
                return False
        if not self.left_heading:
            return True
        return c > 0 and self._similar(self.left_heading, table.cell(r, 0))


_MATH_SPANS = (
    re.compile(r"\$\$(.+?)\$\$", re.DOTALL),
    re.compile(r"\\\[(.+?)\\\]", re.DOTALL),
    re.compile(r"\\\((.+?)\\\)", re.DOTALL),
    re.compile(r"(?<![\\$])\$(?!\$)(.+?)(?<!\\)\$", re.DOTALL),
)
_LATEX_NOISE = re.compile(
    r"\\(?:left|right|[bB]igg?[lr]?|displaystyle|textstyle|mathrm(?=\{)|limits)(?![a-zA-Z])"
    r"|\\[,;:!> ]|\\q?quad(?![a-zA-Z])|~"
)
_LATEX_SYNONYMS = (
    (re.compile(r"\\[dt]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\le(?![a-zA-Z])"), r"\\leq"),
    (re.compile(r"\\ge(?![a-zA-Z])"), r"\\geq"),
    (re.compile(r"\\ne(?![a-zA-Z])"), r"\\neq"),
    (re.compile(r"\\to(?![a-zA-Z])"), r"\\rightarrow"),
    (re.compile(r"\\operatorname\{(\w+)\}"), r"\\\1"),
    (re.compile(r"\\ast(?![a-zA-Z])"), "*"),
)
_DISPLAY_ENVIRONMENT = re.compile(
    r"\\(?:begin|end)\{(?:equation|align|displaymath|split|gathered|aligned)\*?\}"
)
_SINGLE_BRACED = re.compile(r"(?<=[_^])\{(\\?[A-Za-z0-9])\}")


def canonical_latex(latex: str) -> str:
    """LaTeX with what does not change the rendered formula taken out."""
    text = latex.strip().strip("$").strip()
    # The display's environments (an equation around a split, say) do not change the formula.
    text = _DISPLAY_ENVIRONMENT.sub("", text)
    # Line breaks first: "\\ &" would otherwise lose a thin space "\ " and leave "\&".
    text = text.replace("\\\\", "")
    text = _LATEX_NOISE.sub("", text)
    for pattern, replacement in _LATEX_SYNONYMS:
        text = pattern.sub(replacement, text)
    text = _SINGLE_BRACED.sub(r"\1", text)
    text = text.replace("&", "")
    return re.sub(r"\s+", "", text)


def math_spans(markdown: str) -> list[str]:
    spans: list[str] = []
    rest = markdown
    for pattern in _MATH_SPANS:
        spans.extend(match.strip() for match in pattern.findall(rest))
        rest = pattern.sub(" ", rest)
    return spans


@dataclass
class MathTest(PageTest):
    math: str = ""

    kinds: ClassVar[tuple[str, ...]] = ("math",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.math.strip():
            raise CheckDefinitionError(f"{self.id}: empty math")

    def run(self, markdown: str) -> tuple[bool, str]:
        reference = canonical_latex(self.math)
        spans = math_spans(markdown)
        if any(canonical_latex(span) == reference for span in spans):
            return True, ""
        if not spans:
            return False, "no math in the output"
        best = max(spans, key=lambda s: fuzz.ratio(canonical_latex(s), reference))
        return False, f"closest formula {best[:60]!r} differs from {self.math[:60]!r}"


# Scripts olmOCR-Bench calls disallowed on its (Latin-script) pages: CJK and emoji.
_DISALLOWED = re.compile(
    "[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff"
    "\U0001f600-\U0001f64f\U0001f300-\U0001f5ff\U0001f680-\U0001f6ff\U0001f1e0-\U0001f1ff]"
)


@dataclass
class BaselineTest(PageTest):
    max_length: int | None = None
    max_length_skips_image_alt_tags: bool = False
    max_repeats: int = 30
    check_disallowed_characters: bool = True
    # Folio's own addition: markup a reader would see as debris (see ``artifacts``).
    check_artifacts: bool = True

    kinds: ClassVar[tuple[str, ...]] = ("baseline",)

    def run(self, markdown: str) -> tuple[bool, str]:
        content = markdown
        if self.max_length is not None:
            if self.max_length_skips_image_alt_tags:
                content = re.sub(r"!\[.*?\]\(.*?\)", "", content)
            length = sum(1 for ch in content if ch.isalnum())
            if length > self.max_length:
                return False, f"{length} characters on a page expected to be blank"
            return True, ""
        if not any(ch.isalnum() for ch in content):
            return False, "no letters or digits"
        repeats = repeated_ngrams(content)
        if repeats > self.max_repeats:
            return False, f"the output ends in {repeats} repeats of one n-gram"
        if self.check_disallowed_characters:
            found = _DISALLOWED.findall(content)
            if found:
                return False, f"characters of an unexpected script: {''.join(found[:10])!r}"
        if self.check_artifacts:
            debris = artifacts(content)
            if debris:
                return False, f"artifacts in the output: {', '.join(debris)}"
        return True, ""


_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARK = re.compile(r"</?mark>", re.IGNORECASE)
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
# Private-use code points: glyphs whose font maps them nowhere a reader's font can draw.
_PRIVATE_USE = re.compile("[\ue000-\uf8ff\U000f0000-\U0010fffd]")


def artifacts(markdown: str) -> list[str]:
    """What on a page is extraction debris rather than text: HTML comments, ``<mark>``,
    ``<br>`` outside a table row, U+FFFD and private-use characters. ``<br>`` inside a pipe-
    or HTML-table cell is how Markdown writes a line break in a cell, so it is allowed there."""
    found = []
    if _HTML_COMMENT.search(markdown):
        found.append("HTML comment")
    if _MARK.search(markdown):
        found.append("<mark>")
    outside_tables = re.sub(r"<table.*?</table>", "", markdown, flags=re.DOTALL | re.IGNORECASE)
    if any(
        _BR.search(line) and not line.lstrip().startswith("|")
        for line in outside_tables.splitlines()
    ):
        found.append("<br> outside a table")
    if "\ufffd" in markdown:
        found.append("U+FFFD")
    if _PRIVATE_USE.search(markdown):
        found.append("private-use characters")
    return found


def repeated_ngrams(text: str, max_n: int = 5) -> int:
    """How many times the text's tail repeats one unit of 1..max_n words (1 when it does not):
    olmOCR-Bench's ``RepeatDetector``, on words, through ``model.repetition``."""
    words = text.split()
    tail = periodic_tail(words, max_period=max_n)
    return int(tail.copies) if tail is not None else 1


_CLASSES: dict[str, type[PageTest]] = {
    "present": TextPresenceTest,
    "absent": TextPresenceTest,
    "order": OrderTest,
    "table": TableTest,
    "math": MathTest,
    "baseline": BaselineTest,
}


def load_test(data: dict[str, Any]) -> PageTest:
    kind = data.get("type")
    if kind not in _CLASSES:
        raise CheckDefinitionError(f"unknown test type {kind!r} in {data.get('id')!r}")
    cls = _CLASSES[kind]
    known = {f.name for f in fields(cls)}
    # olmOCR-Bench files carry bookkeeping (checked, url) that the scorer does not use.
    kwargs = {name: value for name, value in data.items() if name in known}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise CheckDefinitionError(f"{data.get('id')!r}: {exc}") from exc


def load_tests(path: Path | str) -> list[PageTest]:
    tests: list[PageTest] = []
    seen: set[str] = set()
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            test = load_test(json.loads(line))
        except (json.JSONDecodeError, CheckDefinitionError) as exc:
            raise CheckDefinitionError(f"{path}:{number}: {exc}") from exc
        if test.id in seen:
            raise CheckDefinitionError(f"{path}:{number}: duplicate id {test.id!r}")
        seen.add(test.id)
        tests.append(test)
    return tests


def dump_tests(tests: Iterable[PageTest], path: Path | str) -> None:
    lines = [json.dumps(test.as_dict(), ensure_ascii=False) for test in tests]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Outcome:
    test: PageTest
    passed: bool
    explanation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def score(test: PageTest, markdown: str) -> Outcome:
    passed, explanation = test.run(markdown)
    return Outcome(test=test, passed=passed, explanation=explanation)
