"""A web page's main content (``model.formats.webpage``): the element the page marks as main,
less its navigation; Readability's article, headed by the page's title, where the page marks
none; and, over every HTML page of the shared corpus, what the service makes of the pick
holds at least 90 % of the words of docling's reference Markdown."""

from __future__ import annotations

import pytest

from model.formats import structure, types, webpage
from model.quality.realpages import words_kept
from tests import office

needs_corpus = pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING)

HTML = office.CORPUS / "html"
REFERENCED = (
    sorted(p.name for p in (HTML / "sources").glob("*.html") if office.CORPUS.is_dir())
    if (HTML / "sources").is_dir()
    else []
)

PARAGRAPH = (
    "<p>The ferry from the north pier runs again from Monday, every hour from seven in the "
    "morning, and the harbour master expects the summer timetable to hold until October.</p>"
)


def read(html: str) -> str:
    return "\n\n".join(
        structure.document_units(
            html.encode(), types.HTML, structure.ConversionOptions(table_format="markdown")
        )
    )


@needs_corpus
def test_the_wikipedia_page_keeps_its_title_and_lead_and_drops_its_navigation():
    page = (HTML / "sources" / "wiki_duck.html").read_text(encoding="utf-8")

    content = webpage.main_content(page)
    markdown = read(page)

    assert content.how == "main"
    assert markdown.startswith("# Duck"), markdown[:200]
    assert "**Duck** is the common name for numerous species of" in markdown
    assert markdown.index("**Duck** is the common name") < markdown.index("## Etymology")
    # The site's menu (outside <main>) and the article's own table of contents (a <nav>
    # inside it) are page furniture.
    assert "Main menu" not in markdown and "Toggle the table of contents" not in markdown


def test_the_navigation_inside_a_pages_main_element_is_left_out():
    page = (
        "<html><body><nav>Home | Sports</nav><main><h1>Harbour news</h1>"
        "<nav>Contents: 1 Ferry 2 Weather</nav>" + PARAGRAPH + "<aside>Subscribe now</aside>"
        "</main><footer>Copyright</footer></body></html>"
    )

    content = webpage.main_content(page)

    assert content.how == "main"
    assert "Harbour news" in content.html and "north pier" in content.html
    for furniture in ("Sports", "Contents", "Subscribe", "Copyright"):
        assert furniture not in content.html


def test_a_page_that_marks_no_main_content_keeps_its_title_above_readabilitys_article():
    # Two articles: the page marks no single main element, Readability picks the long one.
    page = (
        "<html><head><title>Harbour news</title></head><body><nav>Home | Sports</nav>"
        "<div><h2>The ferry</h2>" + PARAGRAPH * 4 + "</div>"
        "<article>Short</article><article>Other</article><footer>Copyright</footer></body></html>"
    )

    content = webpage.main_content(page)

    assert content.how == "article"
    assert content.html.startswith("<h1>Harbour news</h1>")
    assert "north pier" in content.html


@needs_corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", REFERENCED)
def test_every_shared_web_page_keeps_nine_tenths_of_its_references_words(name):
    # docling wrote the references from the whole page; the pick may leave out page furniture
    # (the Wikipedia page's site menu and footer), never the article.
    reference = (HTML / "groundtruth" / f"{name}.md").read_text(encoding="utf-8")
    markdown = read((HTML / "sources" / name).read_text(encoding="utf-8"))

    assert words_kept(markdown, reference) >= 0.9
