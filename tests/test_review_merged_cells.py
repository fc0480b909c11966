"""Merged table cells written as empty cells (``model.quality.merged_cells``): flagged on a
page whose ruled grid merges them, quiet on the same table drawn with the empty cell as a cell
of its own, and on the merge written with its span. Pages are generated here or read from the
shared corpus. Pure Python: run with ``pytest -p no:django``."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from model.engines.base import PageInput, PageResult
from model.quality import facts, signals

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
GOOGLE_DOC = CORPUS / "pdf-samples" / "011-google-doc-document" / "google-doc-document.pdf"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no shared corpus at {CORPUS}")


def report(data: bytes, markdown: str) -> dict:
    result = PageResult(markdown=markdown, method="text-layer")
    return signals.quality_report(PageInput(data, "application/pdf", 1), result)


def signal(quality: dict, name: str) -> dict | None:
    return quality["signals"].get(name)


def ruled_table(*, merged: bool) -> bytes:
    """A ruled three-by-three table whose middle row's last two cells are one merged cell
    ("Both 40 mm", no rule between them) or two cells, the last one empty."""
    doc = pymupdf.open()
    page = doc.new_page()
    xs, ys = [72, 192, 312, 432], [100, 130, 160, 190]
    for y in ys:
        page.draw_line((xs[0], y), (xs[-1], y))
    for i, x in enumerate(xs):
        for r in range(3):
            if not (merged and r == 1 and i == 2):
                page.draw_line((x, ys[r]), (x, ys[r + 1]))
    rows = [
        ["Region", "North", "South"],
        ["Rainfall", "Both 40 mm" if merged else "40 mm", ""],
        ["Snow", "12 cm", "3 cm"],
    ]
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            if text:
                page.insert_text((xs[c] + 6, ys[r] + 20), text, fontsize=11)
    # Prose, so that the page has a text layer worth the name.
    page.insert_text((72, 240), PROSE)
    return doc.tobytes()


PROSE = "Rainfall and snow measured at the two stations in March."


def pipe(second_row: str) -> str:
    table = ["|Region|North|South|", "|---|---|---|", second_row, "|Snow|12 cm|3 cm|"]
    return "\n".join(table) + "\n\n" + PROSE


def test_a_merged_cell_written_as_an_empty_cell_is_flagged():
    quality = report(ruled_table(merged=True), pipe("|Rainfall|Both 40 mm||"))
    found = signal(quality, "merged_cells")
    assert found is not None and not found["ok"], quality
    assert found["value"] == 1.0 and quality["needs_review"]


def test_an_empty_cell_that_the_page_draws_as_its_own_is_not():
    quality = report(ruled_table(merged=False), pipe("|Rainfall|40 mm||"))
    found = signal(quality, "merged_cells")
    assert found is not None and found["ok"], quality
    assert not quality["needs_review"]


def test_the_merged_cell_written_with_its_span_or_repeated_leaves_the_table_finder_alone():
    html = (
        "<table><tr><th>Region</th><th>North</th><th>South</th></tr>"
        '<tr><td>Rainfall</td><td colspan="2">Both 40 mm</td></tr>'
        "<tr><td>Snow</td><td>12 cm</td><td>3 cm</td></tr></table>\n\n" + PROSE
    )
    for markdown in (html, pipe("|Rainfall|Both 40 mm|Both 40 mm|")):
        quality = report(ruled_table(merged=True), markdown)
        assert signal(quality, "merged_cells") is None, markdown  # no gap, nothing to judge
        assert not quality["needs_review"]


@needs_corpus
def test_the_google_docs_table_whose_merged_cells_came_out_empty_is_flagged():
    # What pymupdf4llm writes for the py-pdf sample: "Europe" spans four columns on the page.
    markdown = (
        "||Indonesia 🇮🇩|Germany 🇩🇪|Austria 🇦🇹|France|Vatican 🇻🇦|\n"
        "|---|---|---|---|---|---|\n"
        "|Continent|Asia|||Europe||\n"
        "|Capital|Jakarta|Berlin|Vienna|Paris|Vatican City|\n"
        "|Currency|Rupia||EUR (€)||-|\n"
        "|Population|273.879.7501|83,190,5562|8,935,1123|67,413,000|453|\n"
    )
    quality = report(GOOGLE_DOC.read_bytes(), markdown)
    found = signal(quality, "merged_cells")
    assert found is not None and not found["ok"] and found["value"] == 3.0, quality


def test_a_table_finder_that_fails_leaves_the_page_its_other_signals(monkeypatch):
    def broken(_page):
        raise ValueError("a drawing the table finder cannot take")

    monkeypatch.setattr(facts, "page_grids", broken)
    quality = report(ruled_table(merged=True), pipe("|Rainfall|Both 40 mm||"))
    assert signal(quality, "merged_cells") is None  # not judged
    assert signal(quality, "text_layer") is not None  # the page was still measured
