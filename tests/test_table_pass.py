"""The engine's cheaper pymupdf4llm table pass finds the same tables, on real pages of the
shared corpus: a page the layout model finds a table on, a page with ruled drawings and no
layout table, and a page with neither (the one whose finder is skipped)."""

from __future__ import annotations

import pymupdf
import pymupdf.layout
import pytest
from pymupdf import table

from model.documents import MUPDF_LOCK
from model.engines import table_pass
from model.quality.realpages import CORPUS

pymupdf.layout.activate()
import pymupdf4llm  # noqa: E402
from pymupdf4llm.helpers import table_html  # noqa: E402

SOURCES = CORPUS / "docling-testdata" / "pdf" / "sources"
# (file, page index, whether the finder can be skipped there)
PAGES = [
    ("redp5110_sampled.pdf", 1, False),  # a table the layout model finds
    ("normal_4pages.pdf", 0, False),  # vector drawings, no layout-model table
    ("multi_page.pdf", 0, True),  # neither: nothing for the finder to find
]

pytestmark = pytest.mark.skipif(not SOURCES.is_dir(), reason="the shared corpus is not here")


@pytest.mark.parametrize(("name", "index", "skipped"), PAGES)
def test_the_same_tables_and_markdown(name: str, index: int, skipped: bool) -> None:
    path = str(SOURCES / name)
    with MUPDF_LOCK:
        with pymupdf.open(path) as doc:
            page = doc[index]
            page.get_layout(return_raw=True)
            assert table_pass.cannot_hold_table(page) is skipped
            before = [(tuple(t[0]), t[1]) for t in table_html.page_html_tables(page)]
            with table_pass.cheaper_tables():
                after = [(tuple(t[0]), t[1]) for t in table_html.page_html_tables(page)]
        assert after == before
        if name.startswith("redp"):
            assert before, "the page's table was found"
        plain = pymupdf4llm.to_markdown(path, pages=[index], use_ocr=False, table_output="html")
        with table_pass.cheaper_tables():
            cheaper = pymupdf4llm.to_markdown(
                path, pages=[index], use_ocr=False, table_output="html"
            )
    assert cheaper == plain


@pytest.mark.parametrize(("name", "index"), [(name, index) for name, index, _ in PAGES])
def test_character_records_identical_to_pymupdfs(name: str, index: int) -> None:
    with MUPDF_LOCK, pymupdf.open(str(SOURCES / name)) as doc:
        page = doc[index]
        records = []
        for make in (table.make_chars, table_pass.fast_make_chars):
            table._CHARS_VAR.set([])
            make(page)
            records.append(list(table.CHARS._list()))
    assert records[0], "the page has glyphs"
    # repr tells 0.0 from -0.0 and shows every bit of each float
    assert repr(records[1]) == repr(records[0])


def test_pymupdf_is_left_as_it_was() -> None:
    tables, chars = table_html.page_html_tables, table.make_chars
    with table_pass.cheaper_tables():
        assert table.make_chars is table_pass.fast_make_chars, "the checked make_chars"
        assert table_html.page_html_tables is not tables
    assert (table_html.page_html_tables, table.make_chars) == (tables, chars)
