"""The development and held-aside parts of the new real pages: valid tests, split by whole
documents, none of them a document the real-page set was tuned on."""

from __future__ import annotations

import hashlib

from model.quality.checks import canonical_latex
from model.quality.newpages import OCRMYPDF_FILES, TEXLIVE_FILES, load_part
from model.quality.realpages import load_real_tests

# The three groups of untouched documents the split alternates through (newpages' docstring).
GROUPS = (
    (
        "docling-testdata/pdf/sources/skipped_2pages.pdf",
        "docling-testdata/odf/sources/text_document_01.odt.pdf",
        "docling-testdata/odf/sources/text_document_02.odt.pdf",
        "docling-testdata/odf/sources/text_document_03.odt.pdf",
        "docling-testdata/odf/sources/odf_presentation_01.odp.pdf",
        "docling-testdata/odf/sources/odf_table_with_title_01.ods.pdf",
        "pdf-samples/014-outlines/mistitled_outlines_example.pdf",
        "pdf-samples/012-libreoffice-form/libreoffice-form.pdf",
        "pdf-samples/025-attachment/with-attachment.pdf",
        "pdf-samples/024-annotations/annotated_pdf.pdf",
    ),
    tuple(item.path for item in OCRMYPDF_FILES),
    tuple(item.path for item in TEXLIVE_FILES),
)


def _documents(part: str) -> set[str]:
    return {test.pdf for test in load_part(part)}


def test_the_parts_share_no_document_and_none_is_in_the_tuned_set():
    held, dev = _documents("held"), _documents("dev")
    assert held and dev and not held & dev
    tuned = {test.pdf for test in load_real_tests()}
    assert not held & tuned


def test_the_held_aside_documents_are_the_ones_the_rule_picks():
    picked = set()
    for group in GROUPS:
        ordered = sorted(
            group, key=lambda p: hashlib.sha256(p.rsplit("/", 1)[-1].encode()).digest()
        )
        picked.update(ordered[::2])
    assert _documents("held") == picked
    untouched = {path for group in GROUPS for path in group}
    assert untouched - picked <= _documents("dev")


def test_every_held_aside_page_has_a_baseline_and_another_test():
    by_page: dict[tuple[str, int], set[str]] = {}
    for test in load_part("held"):
        by_page.setdefault((test.pdf, test.page), set()).add(test.type)
    assert by_page
    assert all("baseline" in kinds and len(kinds) > 1 for kinds in by_page.values())


def test_the_audit_adds_tests_to_development_pages_only_and_never_to_the_held_aside_part():
    dev = load_part("dev")
    audited = load_part("dev", audit=True)[len(dev) :]
    assert audited, "the development part has an audit"
    assert {(t.pdf, t.page) for t in audited} <= {(t.pdf, t.page) for t in dev}
    assert not {t.id for t in audited} & {t.id for t in dev}
    assert [t.id for t in load_part("held", audit=True)] == [t.id for t in load_part("held")]


def test_a_formula_typeset_in_a_split_inside_an_equation_is_the_same_formula():
    # The audit's amsmath test is the document's own LaTeX; an output that keeps the display's
    # environments and sizing commands, or writes \ast for *, typesets the same formula.
    reference = canonical_latex(r"H_c = \frac{1}{2n} \Bigl[(n-l)^2 - a * b\Bigr]")
    output = r"\begin{equation}\begin{split}H_c&=\frac{1}{2n}\\ &\Bigl[(n-l)^2-a\ast b\Bigr]"
    assert canonical_latex(output + r"\end{split}\end{equation}") == reference
    assert canonical_latex(r"H_c = \frac{1}{2n} [(n-l)^3 - a * b]") != reference
