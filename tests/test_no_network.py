"""No converter can reach the network (issue 26, High): LibreOffice starts only behind an
operating-system denial (``model.formats.sandbox``), proved here with a real listener on
127.0.0.1 that must hear nothing, and every document that points at it (quotes, prefixes,
background images, ODS, ODP, DOCX, PPTX, RTF, HTML, EPUB, SVG) goes through the real
converters, converting with a placeholder or refused saying why."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import pytest

from model.documents import DocumentError, inspect_document
from model.formats import ebooks, libreoffice, sandbox, structure
from model.formats import types as formats
from tests import hostile_office, hostile_servers, office

SOFFICE = shutil.which("soffice")
NO_LIBREOFFICE = "LibreOffice (soffice) is not installed here"


@pytest.fixture(autouse=True)
def fresh_sandbox():
    """Each test decides its sandbox anew (a process decides it once, at first use)."""
    sandbox._sandbox.cache_clear()
    yield
    sandbox._sandbox.cache_clear()


def reaching_converter(tmp_path: Path, url: str) -> Path:
    """A stand-in for LibreOffice that does what a document's link makes LibreOffice do: it
    asks the listener for the linked image, then writes the PDF it was asked for."""
    program = tmp_path / "soffice"
    program.write_text(
        f"#!{sys.executable}\n"
        "import socket, sys, pathlib, urllib.request\n"
        "try:\n"
        f"    urllib.request.urlopen({url!r} + '/linked.png', timeout=5)\n"
        "except Exception as exc:\n"
        "    print('denied:', exc, file=sys.stderr)\n"
        "out = pathlib.Path(sys.argv[sys.argv.index('--outdir') + 1])\n"
        "out.mkdir(parents=True, exist_ok=True)\n"
        "(out / 'document.pdf').write_bytes(b'%PDF-1.4 stand-in')\n"
    )
    program.chmod(0o755)
    return program


def available(mode: str) -> bool:
    try:
        sandbox._sandbox(mode)
    except sandbox.SandboxUnavailable:
        return False
    finally:
        sandbox._sandbox.cache_clear()
    return True


@pytest.mark.parametrize("mode", ["namespace", "seccomp", "auto"])
def test_each_sandbox_keeps_the_converter_from_the_listener(monkeypatch, tmp_path, mode):
    if not available(mode):
        pytest.skip(f"this host allows no {mode} sandbox")
    with hostile_servers.recording_server() as server:
        monkeypatch.setenv("FOLIO_LIBREOFFICE", str(reaching_converter(tmp_path, server.url)))
        monkeypatch.setenv("FOLIO_CONVERTER_SANDBOX", mode)

        assert libreoffice.to_pdf(b"any", formats.ODT) == b"%PDF-1.4 stand-in"

    assert server.requests == []


def test_without_the_sandbox_the_stand_in_does_reach_the_listener(monkeypatch, tmp_path, caplog):
    """What the test above would see if the sandbox did nothing: the listener hears it."""
    with hostile_servers.recording_server() as server, caplog.at_level(logging.WARNING):
        monkeypatch.setenv("FOLIO_LIBREOFFICE", str(reaching_converter(tmp_path, server.url)))
        monkeypatch.setenv("FOLIO_CONVERTER_SANDBOX", "off")

        libreoffice.to_pdf(b"any", formats.ODT)

    assert server.requests == ["GET /linked.png"]
    assert "FOLIO_CONVERTER_SANDBOX=off" in caplog.text


def test_where_no_sandbox_can_be_had_libreoffice_is_not_started(monkeypatch, tmp_path, caplog):
    # A host that denies both: namespaces (as Docker's default profile does) and seccomp.
    monkeypatch.setattr(sandbox, "_namespace_prefix", lambda: (("false",), ()))
    monkeypatch.setattr(sandbox, "_seccomp_prefix", lambda: (("false",), ()))
    started = tmp_path / "started"
    program = tmp_path / "soffice"
    program.write_text(f"#!/bin/sh\ntouch {started}\n")
    program.chmod(0o755)
    monkeypatch.setenv("FOLIO_LIBREOFFICE", str(program))

    with caplog.at_level(logging.ERROR), pytest.raises(libreoffice.LibreOfficeError) as refused:
        libreoffice.to_current_format(b"{\\rtf1 x}", formats.RTF)

    assert "cannot start LibreOffice without network access" in str(refused.value)
    assert "docs/SECURITY.md" in str(refused.value)
    assert "LibreOffice will not be started" in caplog.text
    assert not started.exists()


def test_an_unknown_sandbox_setting_is_a_configuration_error(monkeypatch):
    from model.config import ConfigError

    monkeypatch.setenv("FOLIO_CONVERTER_SANDBOX", "maybe")
    with pytest.raises(ConfigError, match="FOLIO_CONVERTER_SANDBOX"):
        sandbox.sandbox()


def test_docling_starts_no_libreoffice_of_its_own():
    """docling's Office backends would run LibreOffice themselves (outside this sandbox) to
    draw charts and metafiles, but only where pypdfium2 is installed; it is not."""
    from docling.backend.docx.drawingml.utils import get_docx_to_pdf_converter

    assert get_docx_to_pdf_converter() is None


def convert(data: bytes, fmt: formats.Format) -> str:
    """What the worker makes of the document: its Markdown (structured and legacy formats)
    or its laid-out pages' text (e-books), and LibreOffice's layout where it draws pages."""
    if fmt.kind == "ebook":
        import pymupdf

        with pymupdf.open(stream=ebooks.as_pdf(data, fmt), filetype="pdf") as doc:
            return "\n".join(page.get_text() for page in doc)
    markdown = "\n\n".join(structure.document_units(data, fmt))
    if fmt in libreoffice.PDF_FILTERS:
        libreoffice.to_pdf(data, fmt)
    return markdown


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason=NO_LIBREOFFICE)
@pytest.mark.skipif(not office.CORPUS.is_dir(), reason=office.CORPUS_MISSING)
@pytest.mark.parametrize("variant", hostile_office.LINKING)
def test_no_document_pointing_at_a_listener_makes_it_hear_anything(variant):
    make, fmt_name = hostile_office.LINKING[variant]
    fmt = next(fmt for fmt in formats.ALL if fmt.name == fmt_name)
    with hostile_servers.recording_server() as server:
        data = make(server.url)
        try:
            inspect_document(data)
        except DocumentError as refused:  # refused is a clear answer too, if it says why
            assert server.url in str(refused) or "outside" in str(refused)
            outcome = None
        else:
            outcome = convert(data, fmt)

    assert server.requests == []
    if outcome is not None and fmt.kind != "ebook" and fmt is not formats.HTML:
        assert "<!-- image (linked, not fetched)" in outcome, outcome
