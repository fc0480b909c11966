"""Page selection: which pages of a document a request wants, as 1-indexed page numbers."""

from __future__ import annotations

import re

# Long enough for any hand-written list, short enough that parsing can't be abused.
MAX_SPEC_LENGTH = 1000

ACCEPTED_FORMAT = 'page numbers and ranges separated by commas, like "3", "1-3,7" or "5-"'

_PART = re.compile(r"^(?P<start>[+-]?\d+)(?:(?P<dash>-)(?P<end>[+-]?\d+)?)?$")


class PageSelectionError(ValueError):
    """A page selection that cannot be satisfied; the message is meant for a person."""


def parse_page_selection(spec: str | None, page_count: int) -> list[int]:
    """The sorted, unique pages that ``spec`` names in a document of ``page_count`` pages.

    ``None`` or a blank spec means every page. "5-" runs to the last page.

    One rule for every API: a range that starts inside the document and runs past its end is
    clamped to the last page ("1-3" of a one-page document is page 1, as "1-" would be); a
    page, or a range, that starts past the end names nothing that exists and is refused.
    """
    if page_count < 1:
        raise PageSelectionError("the document has no pages")
    if spec is None or not spec.strip():
        return list(range(1, page_count + 1))
    if len(spec) > MAX_SPEC_LENGTH:
        raise PageSelectionError(
            f"the page selection is too long ({len(spec)} characters; at most "
            f"{MAX_SPEC_LENGTH}); use ranges such as 1-200"
        )
    pages: set[int] = set()
    for part in spec.split(","):
        start, end = _parse_part(part, page_count)
        pages.update(range(start, end + 1))
    return sorted(pages)


def _parse_part(part: str, page_count: int) -> tuple[int, int]:
    text = re.sub(r"\s+", "", part)
    match = _PART.match(text)
    if match is None:
        shown = part.strip() or "(empty)"
        raise PageSelectionError(f"cannot read {shown!r} as pages: use {ACCEPTED_FORMAT}")
    start = _page_number(match["start"])
    if start > page_count:
        noun = "page" if page_count == 1 else "pages"
        raise PageSelectionError(
            f"page {start} is past the end: the document has {page_count} {noun}"
        )
    if not match["dash"]:
        return start, start
    end = page_count if match["end"] is None else _page_number(match["end"])
    if end < start:
        raise PageSelectionError(
            f"the range {start}-{end} runs backwards: write the lower page first ({end}-{start})"
        )
    return start, min(end, page_count)


def _page_number(text: str) -> int:
    number = int(text)
    if number < 1:
        raise PageSelectionError(f"page numbers start at 1; {number} is not a page")
    return number
