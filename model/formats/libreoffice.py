"""LibreOffice in the worker: legacy binary Office formats (DOC, XLS, PPT) and RTF converted to
their current format, which docling's backends then read like any other; and any Office or
OpenDocument file laid out as PDF, for its page images (``model.formats.renditions``).

LibreOffice runs only in the worker, as a subprocess in a process group of its own, with:

- a wall-clock limit (``FOLIO_LIBREOFFICE_TIMEOUT``, default 60 s): past it the whole group is
  killed and the page fails saying so;
- a private profile directory, thrown away afterwards (concurrent conversions never share a
  profile, and nothing a document changes in it outlives the conversion);
- no network at all: it is started only inside the sandbox of ``model.formats.sandbox`` (a
  network namespace of its own, a seccomp filter, or both), and where none can be had it is
  not started and the conversion fails saying why;
- macros disabled (``DisableMacrosExecution``, security level "very high"), link updates
  off (Writer's ``Update/Link`` = 0, NEVER in sw/inc/linkenum.hxx; Calc's = 1, LM_NEVER in
  sc/inc/global.hxx of LibreOffice's source), and links of documents outside its trusted
  locations blocked (``BlockUntrustedRefererLinks``; it trusts none), so a document neither
  runs code nor asks for what it links to: the sandbox is what makes sure of the second.

Where LibreOffice is not installed (``FOLIO_LIBREOFFICE`` names the program, else ``soffice``
is looked up on the PATH), these formats are refused at upload saying what to install.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from model.config import env_int, env_str
from model.formats import sandbox, types

INSTALL_HINT = (
    "LibreOffice, which this server does not have (on Debian: apt-get install "
    "libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui)"
)
# What each legacy format becomes, for docling to read.
CURRENT = {
    types.DOC: types.DOCX,
    types.RTF: types.DOCX,
    types.XLS: types.XLSX,
    types.PPT: types.PPTX,
}
_FILTERS = {types.DOCX: "docx:MS Word 2007 XML", types.XLSX: "xlsx:Calc MS Excel 2007 XML",
            types.PPTX: "pptx:Impress MS PowerPoint 2007 XML"}  # fmt: skip

_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop
 oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop
 oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop
 oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/Content/Update"><prop
 oor:name="Link" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop
 oor:name="Link" oor:op="fuse"><value>1</value></prop></item>
</oor:items>
"""


class LibreOfficeError(RuntimeError):
    """The conversion failed or ran out of time; the message is for a person."""


def program() -> str | None:
    return env_str("FOLIO_LIBREOFFICE") or shutil.which("soffice") or shutil.which("libreoffice")


def timeout_seconds() -> int:
    return env_int("FOLIO_LIBREOFFICE_TIMEOUT", 60, minimum=1)


def to_current_format(data: bytes, fmt: types.Format) -> bytes:
    """The document saved in its current format (DOCX, XLSX or PPTX) by LibreOffice."""
    target = CURRENT[fmt]
    return _convert(data, fmt, _FILTERS[target], target.extension)


# PDF export per application. Impress also draws hidden slides and Calc draws each sheet as
# one page of its own size (SinglePageSheets), so that slide N and sheet N are PDF page N, as
# they are page N of the job (filter options as JSON: LibreOffice 7.4 and later).
_WRITER_PDF = "pdf:writer_pdf_Export"
_IMPRESS_PDF = 'pdf:impress_pdf_Export:{"ExportHiddenSlides":{"type":"boolean","value":"true"}}'
_CALC_PDF = 'pdf:calc_pdf_Export:{"SinglePageSheets":{"type":"boolean","value":"true"}}'
PDF_FILTERS = {
    **dict.fromkeys((types.DOCX, types.DOCM, types.ODT, types.RTF, types.DOC), _WRITER_PDF),
    **dict.fromkeys((types.PPTX, types.PPTM, types.ODP, types.PPT), _IMPRESS_PDF),
    **dict.fromkeys((types.XLSX, types.XLSM, types.ODS, types.XLS), _CALC_PDF),
}


def to_pdf(data: bytes, fmt: types.Format) -> bytes:
    """The document laid out as PDF by LibreOffice (one of PDF_FILTERS' formats)."""
    return _convert(data, fmt, PDF_FILTERS[fmt], ".pdf")


def _convert(data: bytes, fmt: types.Format, output_filter: str, extension: str) -> bytes:
    soffice = program()
    if soffice is None:
        raise LibreOfficeError(f"reading {fmt.name} files needs {INSTALL_HINT}")
    try:
        jail = sandbox.sandbox()
    except sandbox.SandboxUnavailable as exc:
        raise LibreOfficeError(f"the {fmt.name} file was not read: {exc}") from exc
    limit = timeout_seconds()
    with tempfile.TemporaryDirectory(prefix="folio-libreoffice-") as work:
        root = Path(work)
        profile = root / "profile"
        (profile / "user").mkdir(parents=True)
        (profile / "user" / "registrymodifications.xcu").write_text(_PROFILE)
        source = root / f"document{fmt.extension}"
        source.write_bytes(data)
        command = [
            soffice,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--invisible",
            "--nologo",
            "--nodefault",
            "--nolockcheck",
            "--norestore",
            "--convert-to",
            output_filter,
            "--outdir",
            str(root / "out"),
            str(source),
        ]
        _run(jail.command(command), limit=limit, env=jail.env(_environment(root)), name=fmt.name)
        output = root / "out" / f"document{extension}"
        if not output.is_file():
            raise LibreOfficeError(f"LibreOffice could not read the {fmt.name} file")
        return output.read_bytes()


def _environment(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


def _run(command: list[str], *, limit: int, env: dict[str, str], name: str) -> None:
    # A process group of its own: soffice starts soffice.bin, and a timeout kills both.
    try:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )
    except OSError as exc:  # FOLIO_LIBREOFFICE names a program that is not there
        raise LibreOfficeError(f"LibreOffice could not be started ({exc})") from exc
    try:
        _, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise LibreOfficeError(
            f"LibreOffice took longer than {limit} s to read the {name} file, the limit"
        ) from None
    finally:
        with contextlib.suppress(ProcessLookupError):  # what it left in its group goes too
            os.killpg(process.pid, signal.SIGKILL)
    if process.returncode != 0:
        detail = stderr.decode("utf-8", "replace").strip()[-300:]
        raise LibreOfficeError(f"LibreOffice could not read the {name} file ({detail})")
