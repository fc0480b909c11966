"""The development and held-aside parts of the new real pages, both waves: valid tests, split
by whole documents, none of them a document the real-page set was tuned on."""

from __future__ import annotations

import hashlib
import itertools

from model.quality.checks import canonical_latex
from model.quality.newpages import PARTS, load_part
from model.quality.outside_documents import OCRMYPDF_FILES, TEXLIVE_FILES, WAVE2_GROUPS
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


def _held_by_the_rule(groups: tuple[tuple[str, ...], ...]) -> set[str]:
    picked = set()
    for group in groups:
        ordered = sorted(
            group, key=lambda p: hashlib.sha256(p.rsplit("/", 1)[-1].encode()).digest()
        )
        picked.update(ordered[::2])
    return picked


def test_the_parts_share_no_document_and_none_is_in_the_tuned_set():
    held, dev = _documents("held"), _documents("dev")
    assert held and dev and not held & dev
    tuned = {test.pdf for test in load_real_tests()}
    assert not held & tuned


def test_the_held_aside_documents_are_the_ones_the_rule_picks():
    picked = _held_by_the_rule(GROUPS)
    assert _documents("held") == picked
    untouched = {path for group in GROUPS for path in group}
    assert untouched - picked <= _documents("dev")


def test_the_second_wave_shares_no_document_with_any_part_or_the_tuned_set():
    parts = {part: _documents(part) for part in PARTS}
    assert set(parts) == {"dev", "held", "dev2", "held2"}
    for one, other in itertools.combinations(parts, 2):
        assert not parts[one] & parts[other], (one, other)
    tuned = {test.pdf for test in load_real_tests()}
    assert not (parts["dev2"] | parts["held2"]) & tuned
    # The second wave's documents are all new: none is one of the first wave's groups.
    first_wave = {path for group in GROUPS for path in group}
    assert not {path for group in WAVE2_GROUPS for path in group} & first_wave


def test_the_second_wave_held_aside_documents_are_the_ones_the_rule_picks():
    picked = _held_by_the_rule(WAVE2_GROUPS)
    assert _documents("held2") == picked
    wave2 = {path for group in WAVE2_GROUPS for path in group}
    assert _documents("dev2") == wave2 - picked
    assert all(len(group) > 1 for group in WAVE2_GROUPS)


def test_every_held_aside_page_has_a_baseline_and_another_test():
    for part in ("held", "held2", "dev2"):
        by_page: dict[tuple[str, int], set[str]] = {}
        for test in load_part(part):
            by_page.setdefault((test.pdf, test.page), set()).add(test.type)
        assert by_page
        assert all("baseline" in kinds and len(kinds) > 1 for kinds in by_page.values()), part
        baselines = [t for t in load_part(part) if t.type == "baseline"]
        assert len(baselines) == len(by_page), f"{part}: one baseline a page"


def test_every_test_loads_with_an_id_of_its_own():
    ids = [test.id for part in PARTS for test in load_part(part)]
    assert len(ids) == len(set(ids))
    assert all(
        test.id.startswith("new2-") for part in ("dev2", "held2") for test in load_part(part)
    )
    assert all(test.page >= 1 for part in ("dev2", "held2") for test in load_part(part))


def test_the_audit_adds_tests_to_development_pages_only_and_never_to_the_held_aside_part():
    dev = load_part("dev")
    audited = load_part("dev", audit=True)[len(dev) :]
    assert audited, "the development part has an audit"
    assert {(t.pdf, t.page) for t in audited} <= {(t.pdf, t.page) for t in dev}
    assert not {t.id for t in audited} & {t.id for t in dev}
    for part in ("held", "dev2", "held2"):
        assert [t.id for t in load_part(part, audit=True)] == [t.id for t in load_part(part)]


def test_a_formula_typeset_in_a_split_inside_an_equation_is_the_same_formula():
    # The audit's amsmath test is the document's own LaTeX; an output that keeps the display's
    # environments and sizing commands, or writes \ast for *, typesets the same formula.
    reference = canonical_latex(r"H_c = \frac{1}{2n} \Bigl[(n-l)^2 - a * b\Bigr]")
    output = r"\begin{equation}\begin{split}H_c&=\frac{1}{2n}\\ &\Bigl[(n-l)^2-a\ast b\Bigr]"
    assert canonical_latex(output + r"\end{split}\end{equation}") == reference
    assert canonical_latex(r"H_c = \frac{1}{2n} [(n-l)^3 - a * b]") != reference
