"""The guards parse documents instead of matching patterns (issue 26): a DTD behind a
byte-order mark or in UTF-16 is seen, an EPUB 3 book's ``<!DOCTYPE html>`` is not a DTD to
refuse, outside links are found whatever their quoting and prefixes (a linked image converts
as a placeholder naming it, anything else linked is refused), and the size guards count what
the converters will walk (rows without ``r``, slides under another prefix, nesting depth)."""

from __future__ import annotations

import pytest

from model.documents import DocumentTooLarge, UnsafeDocument, inspect_document
from model.formats import guards, structure, units
from model.formats import types as formats
from tests import hostile_office, office

pytestmark = pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING)

OUTSIDE = "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("make", "part"),
    [
        (hostile_office.xxe_bom_docx, "word/document.xml"),
        (hostile_office.xxe_utf16_docx, "word/document.xml"),
        (hostile_office.lol_bom_odt, "content.xml"),
        (hostile_office.xxe_bom_epub, "c1.xhtml"),
    ],
    ids=["xxe_bom.docx", "xxe_utf16.docx", "lol_bom.odt", "xxe_bom.epub"],
)
def test_a_dtd_behind_a_byte_order_mark_or_in_utf16_is_refused(make, part):
    with pytest.raises(UnsafeDocument, match=part):
        inspect_document(make())


def test_an_epub3_book_with_the_html5_doctype_is_read():
    info = inspect_document(hostile_office.epub3_book())

    assert (info.mime_type, info.page_count) == (formats.EPUB.mime_type, 2)


@pytest.mark.parametrize(
    "variant",
    [name for name in hostile_office.LINKING if name.startswith(("ODT", "ODS", "ODP", "DOCX"))]
    + ["PPTX"],
)
def test_a_linked_image_under_any_quoting_or_prefix_is_found_and_the_document_taken(variant):
    make, fmt_name = hostile_office.LINKING[variant]
    data = make(OUTSIDE)
    fmt = next(fmt for fmt in formats.ALL if fmt.name == fmt_name)

    report = guards.check_container(data, fmt)

    assert [link.target.startswith(OUTSIDE) for link in report.linked] == [True]
    assert inspect_document(data).page_count >= 1


def test_a_linked_section_is_refused_whatever_its_quotes():
    with pytest.raises(UnsafeDocument, match="outside section-source"):
        inspect_document(hostile_office.odt_section_source(OUTSIDE))


@pytest.mark.parametrize(
    ("relative", "fmt", "link"),
    [
        ("docx/sources/docx_external_image.docx", formats.DOCX, "https://example.com/image.png"),
        (
            "pptx/sources/powerpoint_with_image.pptx",
            formats.PPTX,
            "file:////Users/ceb/Downloads/docling_logo.png",
        ),
    ],
)
def test_a_real_document_linking_an_image_converts_with_a_placeholder_naming_the_link(
    relative, fmt, link
):
    data = office.corpus(relative)

    markdown = "\n\n".join(structure.document_units(data, fmt))

    assert inspect_document(data).page_count == 1
    assert f"<!-- image (linked, not fetched): {link} -->" in markdown
    # The text around the picture is all there, as in docling's reference.
    reference_words = [
        line for line in office.reference(relative).splitlines() if line and "<!--" not in line
    ]
    assert all(line in markdown for line in reference_words)


def test_a_placeholder_cannot_close_its_comment():
    shown = guards.linked_image_placeholder("http://x/--><script>alert(1)</script>")

    assert shown.count("-->") == 1 and shown.endswith("-->")
    assert "<script>" not in shown


def test_a_sheet_whose_rows_carry_no_reference_is_counted_as_its_converter_reads_it():
    # 600 rows with no ``r``: openpyxl places each after the one before.
    data = hostile_office.xlsx_rows_without_references(600)

    assert units.unit_plan(data, formats.XLSX)[0] == 3  # 600 rows, 250 a page


def test_a_million_rows_without_references_are_refused_naming_the_limit():
    with pytest.raises(DocumentTooLarge, match=f"{guards.MAX_SHEET_CELLS:,}"):
        inspect_document(hostile_office.xlsx_rows_without_references(1_100_000))


def test_slides_listed_under_another_prefix_are_counted():
    data = hostile_office.pptx_slides_under_another_prefix(40)

    assert inspect_document(data).page_count == 40


@pytest.mark.parametrize("furniture", [False, True], ids=["plain", "with a nav"])
def test_a_web_page_nested_past_the_parsers_depth_is_refused_never_cut(furniture):
    with pytest.raises(DocumentTooLarge, match="256 deep"):
        inspect_document(hostile_office.html_nested(100_000, furniture=furniture))
    # A page nested well within it is read whole.
    assert inspect_document(hostile_office.html_nested(200)).page_count == 1


def test_an_ods_row_repeated_down_counts_each_repetition():
    data = office.corpus("odf/sources/odf_table_with_title_01.ods")
    content = office.part(data, "content.xml").replace(
        b"<table:table-row",
        b'<table:table-row table:number-rows-repeated="2000000"><table:table-cell '
        b'office:value-type="float" office:value="1"/></table:table-row><table:table-row',
        1,
    )

    with pytest.raises(DocumentTooLarge, match="filled cells"):
        inspect_document(office.rezip(data, replace={"content.xml": content}))
