"""A web page's main content: the part the page itself marks as main, else the article
Readability finds, chosen the way Jina Reader chooses it.

Reader (jina-ai/reader, ``src/services/snapshot-formatter.ts``) runs Mozilla's Readability
over the page and keeps its article only "if Readability did its job": when the article is at
least 30 % as long as the whole page (Reader compares the two Markdown conversions). Otherwise
it converts the whole page. Here readability-lxml (a Python port of the same arc90 Readability
algorithm) finds the article, and the lengths compared are those of the two texts, so that the
choice (and with it the page count) is known before any conversion, in the web process too.

Two differences, measured (docs/QUALITY.md):

- Readability is asked only when the page has something to remove, a landmark of page
  furniture (``nav``, ``header``, ``footer``, ``aside`` or their ARIA roles). On docling's 32
  test pages, none of which has one, Readability dropped tables and code blocks from 9 pages
  (similarity to the reference 90 % against 98.5 % for the whole page).
- A page that marks its main content (one ``<main>`` or ``role="main"`` element, else one
  ``<article>``) is read as that element, less the navigation and sidebars nested in it.
  Readability's pick of the Wikipedia page in the corpus began at its second heading: the
  title, the lead and the infobox, which sit in the page's ``<main>`` beside the sections,
  were gone (75 % of the reference's words kept; the marked main content keeps 97 %).
  Where Readability still decides, the page's title heads the article if it lost it.
"""

from __future__ import annotations

import html as html_escape
import logging
import re
from dataclasses import dataclass

import lxml.html
from lxml.etree import ParserError
from readability import Document as ReadableDocument

logger = logging.getLogger(__name__)

# Reader's own threshold ("par2.length >= 0.3 * par1.length").
MIN_ARTICLE_SHARE = 0.3
# Reader degrades to plain text past 80,000 elements to protect its server; we refuse.
MAX_ELEMENTS = 80_000
# libxml2's HTML parser (lxml, and so Readability) stops building the tree at this depth and
# drops what is deeper; a page nested deeper is refused, never read with its text cut off.
MAX_DEPTH = 256


_FURNITURE = re.compile(
    r"<(?:nav|header|footer|aside)\b|\brole\s*=\s*[\"']?(?:navigation|banner|contentinfo|complementary)",
    re.I,
)
# What a page's main element may still hold that is not its content: its navigation (a
# table of contents, tabs, tools) and its sidebars. A header inside the main element stays:
# it holds the title.
_NESTED_FURNITURE = (
    ".//nav|.//aside|.//*[@role='navigation']|.//*[@role='complementary']|.//*[@role='search']"
)


class PageTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class MainContent:
    html: str
    text_length: int
    # "page": the whole page; "main": the element the page marks as its main content;
    # "article": Readability's pick
    how: str


def main_content(html: str) -> MainContent:
    whole_length = _text_length(html)
    if not _FURNITURE.search(html):
        return MainContent(html, whole_length, "page")
    marked = _marked_main(html)
    if marked is not None:
        marked_length = _text_length(marked)
        if marked_length >= MIN_ARTICLE_SHARE * whole_length:
            return MainContent(marked, marked_length, "main")
    try:
        readable = ReadableDocument(html)
        article = _with_title(readable.summary(html_partial=True), readable.short_title())
    except Exception:  # readability gives up on some markup; the whole page still converts
        logger.info("readability found no article; converting the whole page")
        return MainContent(html, whole_length, "page")
    article_length = _text_length(article)
    if article_length and article_length >= MIN_ARTICLE_SHARE * whole_length:
        return MainContent(article, article_length, "article")
    return MainContent(html, whole_length, "page")


def _marked_main(html: str) -> str | None:
    """The element the page marks as its main content, without the navigation and sidebars
    inside it; None where the page marks none, or marks several."""
    try:
        root = lxml.html.fromstring(html)
    except (ParserError, ValueError):
        return None
    found = root.xpath("//main|//*[@role='main']")
    if not found:
        found = root.xpath("//article")
    # Nested candidates (an <article> inside <main>, role="main" on the <main>) count once.
    outer = [el for el in found if not any(other in el.iterancestors() for other in found)]
    if len(outer) != 1:
        return None
    main = outer[0]
    for nested in main.xpath(_NESTED_FURNITURE):
        nested.drop_tree()
    return str(lxml.html.tostring(main, encoding="unicode"))


def _with_title(article: str, title: str) -> str:
    """Readability's article headed by the page's title, where the article lost it."""
    title = " ".join((title or "").split())
    if not title or re.search(r"<h1\b", article, re.I):
        return article
    return f"<h1>{html_escape.escape(title)}</h1>\n{article}"


def _text_length(html: str) -> int:
    if not html.strip():
        return 0
    parser = lxml.html.HTMLParser()
    try:
        root = lxml.html.fromstring(html, parser=parser)
    except (ParserError, ValueError):
        return len(html)
    if any(error.type_name == "ERR_RESOURCE_LIMIT" for error in parser.error_log):
        raise PageTooLarge(
            f"the web page nests its elements more than {MAX_DEPTH} deep; we take pages "
            f"nested at most {MAX_DEPTH} deep (deeper text would be lost)"
        )
    elements = sum(1 for _ in root.iter())
    if elements > MAX_ELEMENTS:
        raise PageTooLarge(
            f"the web page has {elements:,} elements; we take pages of at most {MAX_ELEMENTS:,}"
        )
    for hidden in root.xpath("//script|//style|//noscript|//template"):
        hidden.drop_tree()
    return len(" ".join(root.text_content().split()))
