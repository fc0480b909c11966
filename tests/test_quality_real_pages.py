"""The real-page set of the quality harness: its tests, its scans, its similarity figure, and
the artifact check every baseline test makes. Pure: ``pytest -p no:django``."""

from __future__ import annotations

import json
from collections import Counter

import pymupdf
import pytest

from model.quality.checks import BaselineTest, artifacts, load_tests
from model.quality.realpages import (
    AUDIT_TESTS,
    CORPUS,
    load_real_tests,
    page_count,
    pages_to_run,
    plain_text,
    referenced_documents,
    scan_name,
    scan_page,
    scan_tests,
    similarity,
)

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not beside the repository ({CORPUS})"
)


@needs_corpus
def test_every_real_page_test_names_a_page_that_exists_and_every_page_has_a_baseline():
    tests = load_real_tests()
    assert len(tests) >= 80
    for test in tests:
        assert (CORPUS / test.pdf).is_file(), test.pdf
        assert 1 <= test.page <= page_count(CORPUS / test.pdf), test.id
    pages = Counter((t.pdf, t.page) for t in tests)
    baselines = {(t.pdf, t.page) for t in tests if t.type == "baseline"}
    assert set(pages) == baselines
    # docling's PDFs and the py-pdf samples are both there
    assert any(t.pdf.startswith("docling-testdata/") for t in tests)
    assert any(t.pdf.startswith("pdf-samples/") for t in tests)


@needs_corpus
def test_the_audit_tests_name_tested_pages_and_say_why():
    real = load_real_tests()
    audit = load_tests(AUDIT_TESTS)
    assert audit and not {t.id for t in audit} & {t.id for t in real}
    tested = {(t.pdf, t.page) for t in real}
    for test in audit:
        assert (test.pdf, test.page) in tested, test.id  # a page of the set, with a baseline
    for line in AUDIT_TESTS.read_text(encoding="utf-8").splitlines():
        assert json.loads(line).get("why"), line  # each says what a reader would see


@needs_corpus
def test_documents_with_a_reference_are_transcribed_whole():
    references = referenced_documents()
    assert "docling-testdata/pdf/sources/redp5110_sampled.pdf" in references
    # three docling PDFs have no reference beside them; they are tested but not compared
    assert not any("skipped" in pdf for pdf in references)
    pages = pages_to_run(load_real_tests())
    for pdf in references:
        assert {(pdf, n) for n in range(1, page_count(CORPUS / pdf) + 1)} <= set(pages)


@needs_corpus
def test_a_scan_is_one_image_only_page_of_the_same_shape():
    pdf = "docling-testdata/pdf/sources/amt_handbook_sample.pdf"
    data = scan_page(CORPUS / pdf, 1)
    with pymupdf.open(stream=data, filetype="pdf") as scan, pymupdf.open(CORPUS / pdf) as source:
        again = pymupdf.open(stream=scan_page(CORPUS / pdf, 1), filetype="pdf")
        image = scan.extract_image(scan[0].get_images()[0][0])["image"]
        assert image == again.extract_image(again[0].get_images()[0][0])["image"]  # the same
        assert scan.page_count == 1
        assert scan[0].get_text().strip() == ""
        assert len(scan[0].get_images()) == 1
        # turned by a degree, so a little larger, but the same page
        ratio = scan[0].rect.height / scan[0].rect.width
        assert ratio == pytest.approx(source[0].rect.height / source[0].rect.width, rel=0.05)


def test_scan_tests_point_at_the_scan_with_the_same_checks():
    tests = [BaselineTest(pdf="pdf-samples/015-arabic/habibi.pdf", page=3, id="x", type="baseline")]
    (scanned,) = scan_tests(tests)
    assert scanned.pdf == scan_name(tests[0].pdf, 3) == "scans/pdf-samples_015-arabic_habibi-p3.pdf"
    assert (scanned.page, scanned.id, scanned.type) == (1, "scan-x", "baseline")


def test_a_scanned_document_holds_the_page_and_two_on_either_side(tmp_path):
    from model.quality.realpages import document_scan_tests, scan_document, scanned_pages

    source = pymupdf.open()
    for number in range(1, 7):
        source.new_page().insert_text((72, 72), f"Page {number}")
    (tmp_path / "book.pdf").write_bytes(source.tobytes())
    tests = [
        BaselineTest(pdf="book.pdf", page=page, id=f"p{page}", type="baseline")
        for page in (1, 4, 6)
    ]

    with pymupdf.open(stream=scan_document(tmp_path / "book.pdf", 4), filetype="pdf") as scan:
        assert scan.page_count == 5 and all(not page.get_text().strip() for page in scan)
    moved = document_scan_tests(tests, tmp_path)
    assert [(t.pdf, t.page) for t in moved] == [
        ("scanned-documents/book-p1.pdf", 1),  # pages 1-3
        ("scanned-documents/book-p4.pdf", 3),  # pages 2-6
        ("scanned-documents/book-p6.pdf", 3),  # pages 4-6
    ]
    places = list(scanned_pages([("book.pdf", 4)], tmp_path, documents=True))
    assert places == [("scanned-documents/book-p4.pdf", 3)]


def test_artifacts_are_found_where_a_reader_would_see_them():
    assert artifacts("Plain text.\n\n| a | b<br>c |\n|---|---|") == []
    assert artifacts("<table><tr><td>a<br>b</td></tr></table>") == []
    assert artifacts("<!-- Start of picture text -->\nNut<br>Bolt<br>") == [
        "HTML comment",
        "<br> outside a table",
    ]
    assert artifacts("<mark>Lorem ipsum</mark>") == ["<mark>"]
    assert artifacts("habibi\ufffd\ufffd") == ["U+FFFD"]
    assert artifacts("Indonesia \U000f03d9") == ["private-use characters"]
    page = BaselineTest(pdf="a.pdf", page=1, id="b", type="baseline")
    assert page.run("<mark>Lorem</mark>") == (False, "artifacts in the output: <mark>")
    assert page.run("Lorem ipsum") == (True, "")
    lenient = BaselineTest(pdf="a.pdf", page=1, id="c", type="baseline", check_artifacts=False)
    assert lenient.run("<mark>Lorem</mark>")[0]


def test_similarity_compares_words_not_markup():
    reference = (
        "## Contents\n\n| Notices . . . . . . | vii |\n| - | - |\n\n<!-- image -->\n\n"
        "Some **bold** text."
    )
    output = "# Contents\n\n- Notices — vii\n\nSome bold text."
    assert plain_text(output) == plain_text(reference) == "Contents Notices vii Some bold text."
    assert similarity(output, reference) == 1.0
    assert similarity("Some bold", reference) < 0.5
    assert similarity("", reference) == 0.0
