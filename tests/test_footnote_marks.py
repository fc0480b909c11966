"""A footnote's raised mark set off from its first word (``model.footnote_marks``), on pages
drawn here as TeX sets footnotes: a 6 pt number raised above 9 pt text, no space between."""

from __future__ import annotations

import pymupdf

from model.engines.pdf_text import TEXT_DICT_FLAGS
from model.footnote_marks import raised_marks, set_off_footnote_marks


def _page_dict(mark_size: float, raise_by: float) -> dict:
    doc = pymupdf.open()
    page = doc.new_page(width=400, height=300)
    page.insert_text((72, 100), "Body text of the page, and its mark.", fontsize=9)
    page.insert_text((72, 250 - raise_by), "1", fontsize=mark_size)
    page.insert_text((72 + 0.5 * mark_size, 250), "Diese Metrik wird auch genannt.", fontsize=9)
    found = page.get_text("dict", flags=TEXT_DICT_FLAGS)
    doc.close()
    return found


def test_a_raised_smaller_number_at_a_lines_start_is_a_footnote_mark():
    assert raised_marks(_page_dict(6, 3)) == [("1", "Diese Metrik")]
    markdown = "Body text.\n\n> 1Diese Metrik wird auch genannt."
    out = set_off_footnote_marks(markdown, _page_dict(6, 3))
    assert out == "Body text.\n\n> <sup>1</sup> Diese Metrik wird auch genannt."


def test_emphasis_opening_the_footnote_stays_with_its_text():
    out = set_off_footnote_marks("> 1_Diese_ Metrik", _page_dict(6, 3))
    assert out == "> <sup>1</sup> _Diese_ Metrik"


def test_a_number_of_the_texts_own_size_or_on_its_baseline_is_left_alone():
    markdown = "> 1Diese Metrik wird auch genannt."
    assert raised_marks(_page_dict(9, 0)) == []
    assert raised_marks(_page_dict(6, 0)) == []
    assert set_off_footnote_marks(markdown, _page_dict(9, 0)) == markdown


def test_only_the_line_that_begins_with_the_mark_and_its_text_changes():
    markdown = "Metrik 1Diese is prose.\n\n> 12 Diese\n\n> 1Diese Metrik"
    out = set_off_footnote_marks(markdown, _page_dict(6, 3))
    assert out == "Metrik 1Diese is prose.\n\n> 12 Diese\n\n> <sup>1</sup> Diese Metrik"
