"""DOC, XLS, PPT and RTF: saved in their current format by LibreOffice in the worker (a
subprocess with a wall-clock limit and a private profile), then read like DOCX, XLSX and PPTX;
refused at upload, saying what to install, where LibreOffice is missing."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import psutil
import pytest

from model.documents import UnsupportedDocument, inspect_document
from model.engines.base import EngineError, EngineOptions, PageInput
from model.formats import libreoffice, types, units
from model.pipeline import STRUCTURE_METHOD, transcribe_page
from tests import office

SOFFICE = shutil.which("soffice")
# LibreOffice takes seconds to start: the tests that run it are in the slow tier.
NO_LIBREOFFICE = "LibreOffice is not installed (.ci/run installs it)"
pytestmark = pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING)

RTF = rb"{\rtf1\ansi{\fonttbl\f0 Times New Roman;}\f0\pard Minutes of the {\b harbour} board.\par}"


@pytest.fixture(scope="module")
def legacy(tmp_path_factory) -> dict[str, bytes]:
    """docling's test files saved as DOC, XLS and PPT by LibreOffice (the legacy files are
    made here: the shared corpus has none)."""
    if SOFFICE is None:
        pytest.skip(NO_LIBREOFFICE)
    work = tmp_path_factory.mktemp("legacy")
    made = {}
    for key, (name, data), target in (
        ("doc", ("word_tables.docx", office.corpus("docx/sources/word_tables.docx")), "doc"),
        ("xls", ("xlsx_01.xlsx", office.corpus("xlsx/sources/xlsx_01.xlsx")), "xls"),
        ("ppt", ("sample.pptx", office.corpus("pptx/sources/powerpoint_sample.pptx")), "ppt"),
        ("long doc", ("long.docx", office.long_docx()), "doc"),
        ("long xls", ("long.xlsx", office.long_sheet_xlsx(600)), "xls"),
        ("long rtf", ("long.docx", office.long_docx()), "rtf"),
        (
            "rtf with a picture",
            ("sample.docx", office.corpus("docx/sources/word_sample.docx")),
            "rtf",
        ),
    ):
        path = work / name
        path.write_bytes(data)
        subprocess.run(
            [SOFFICE, f"-env:UserInstallation={(work / 'profile').as_uri()}", "--headless",
             "--convert-to", target, "--outdir", str(work), str(path)],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
        made[key] = path.with_suffix(f".{target}").read_bytes()
    return made


def read(data: bytes, number: int) -> str:
    mime_type = inspect_document(data).mime_type
    page = PageInput(data=data, mime_type=mime_type, page_number=number)
    result = transcribe_page(None, page, EngineOptions())
    assert result.method == STRUCTURE_METHOD
    return result.markdown


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
def test_a_doc_is_read_like_the_docx_it_was_saved_from(legacy):
    info = inspect_document(legacy["doc"])

    assert (info.mime_type, info.kind) == (types.DOC.mime_type, "legacy")
    markdown = "\n\n".join(read(legacy["doc"], n) for n in range(1, info.page_count + 1))
    assert "Test with tables" in markdown and "Header 0.0" in markdown and "Cell 1.0" in markdown


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
def test_each_sheet_of_an_xls_and_each_slide_of_a_ppt_is_a_page(legacy):
    assert inspect_document(legacy["xls"]).page_count == 4
    assert "col-1" in read(legacy["xls"], 2)

    assert inspect_document(legacy["ppt"]).page_count == 3
    assert "Second slide title" in read(legacy["ppt"], 2)


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
@pytest.mark.parametrize(
    "name", ["doc", "xls", "ppt", "long doc", "long xls", "long rtf", "rtf with a picture"]
)
def test_the_upload_counts_exactly_the_pages_of_the_file_libreoffice_saves(legacy, name):
    """Counted in the web process from the binary file's own records (no conversion), the
    pages are those the worker cuts the converted DOCX, XLSX or PPTX into."""
    data = legacy[name]
    fmt = types.format_of(inspect_document(data).mime_type)

    converted = libreoffice.to_current_format(data, fmt)

    expected = sum(units.unit_plan(converted, libreoffice.CURRENT[fmt]))
    assert inspect_document(data).page_count == expected
    assert expected > 1 or name in ("doc", "rtf with a picture")


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
def test_a_long_sheet_of_an_xls_is_cut_into_row_ranges_like_an_xlsx(legacy):
    data = legacy["long xls"]

    assert inspect_document(data).page_count == 4
    ranges = [read(data, number) for number in (1, 2, 3)]
    for part in ranges:
        assert part.splitlines()[0].replace(" ", "") == "|Row|Vessel|Tonnes|"
    rows = [line for part in ranges for line in part.splitlines() if line[2:3].isdigit()]
    assert rows == [f"| {n} | vessel {n} | {3 * n} |" for n in range(1, 601)]
    assert "harbour master" in read(data, 4)


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
def test_an_rtf_is_read():
    assert "Minutes of the **harbour** board." in read(RTF, 1)


def test_libreoffice_past_its_time_limit_is_killed_and_the_page_fails_saying_so(
    monkeypatch, tmp_path
):
    # A LibreOffice that never finishes: a real one may convert this small file within the
    # limit on a quick moment, and the test would then prove nothing.
    never = tmp_path / "soffice"
    never.write_text("#!/bin/sh\nwhile :; do sleep 0.1; done\n")
    never.chmod(0o755)
    monkeypatch.setenv("FOLIO_LIBREOFFICE", str(never))
    monkeypatch.setenv("FOLIO_LIBREOFFICE_TIMEOUT", "1")
    # Conversions that workers (or other test runs on this host) have going are not ours.
    before = {process.pid for process in _conversions()}

    with pytest.raises(EngineError, match="longer than 1 s"):
        read(RTF + b" ", 1)

    assert [process for process in _conversions() if process.pid not in before] == []


def _conversions() -> list[psutil.Process]:
    """The LibreOffice processes of Folio's conversions, found by their profile folder."""
    return [
        process
        for process in psutil.process_iter(["cmdline"])
        if any("folio-libreoffice-" in part for part in process.info["cmdline"] or [])
    ]


def test_without_libreoffice_a_legacy_file_is_refused_saying_what_to_install(monkeypatch):
    monkeypatch.setenv("PATH", tempfile.gettempdir())
    monkeypatch.delenv("FOLIO_LIBREOFFICE", raising=False)

    with pytest.raises(UnsupportedDocument, match="apt-get install libreoffice") as refused:
        inspect_document(RTF)
    assert "save the file as DOCX" in str(refused.value)
