"""Real pages nobody had tuned on: a development part and a held-aside part.

The real-page set (``model.quality.realpages``) is what the local engine's repairs were
written against, so its figures flatter the engine. These tests are for pages of other
documents: pages of the shared corpus that carried no test, and documents from outside it,
shipped in packages whose licences allow it (below). They were written from the source pages
(their text layers and renderings), before the engine's output on them was read.

The split is by whole documents and was fixed before any result was looked at: documents
that already had tests in the real set (their other pages, which rules were tuned beside)
are development; the untouched ones were sorted within three groups (shared-corpus
born-digital, outside scans, outside LaTeX with mathematics) by the SHA-256 of their file
name, and the first, third, fifth … of each group are held aside. The held-aside part
(``data/new-pages-held.jsonl``) is never read to choose a rule or a threshold; it is scored
only at the end of a round of work, and reported apart.

A second wave (``dev2``, ``held2``) holds pages of thirteen outside documents nobody here had
looked at, their tests written from the source pages and committed before the engine read
any of them, and split the same way, fixed before any result: the documents form three new
groups (wave-2 born-digital: booktabs, mathtools, physics, R-intro, refcard-a4, gnuplot;
wave-2 non-Latin: lshort-bg, greektonoi, arabic-book, lshort-ko; wave-2 scans: 2400dpi,
multipage, kcs), each sorted by the SHA-256 of the file name, the first, third, fifth … held
aside (``data/new-pages-held2.jsonl``), the rest development (``data/new-pages-dev2.jsonl``).
``held2`` is kept as ``held`` is; ``--audit`` adds nothing to either new part.

    python -m model.quality.newpages fetch DIR          # the corpus and the outside documents
    python -m model.quality.newpages run DIR --part dev [--scans] [--json] [--fail]
    python -m model.quality.newpages run DIR --part held [--scans] [--json]
    python -m model.quality.newpages run DIR --part dev2 [--scans] [--json] [--fail]
    python -m model.quality.newpages run DIR --part dev --ocr-layer  # under a Tesseract layer
    python -m model.quality.newpages run DIR --part dev --scanned-documents
    python -m model.quality.newpages score DUMP --part dev [--scans]  # re-score a --dump

``--scanned-documents`` scans each page with up to two pages on either side into one
document (``realpages.scan_document``), as a scanned book or report is: what a page shares with
its neighbours (running heads and feet) is there to be found, as it is not on a page scanned
alone.

``--ocr-layer`` reads the same scans with an invisible text layer that Tesseract 5 wrote over
them (``tesseract … pdf``, as OCRmyPDF and many scanners' software lay one), ids prefixed
``layer-``: a scanned PDF carrying someone else's OCR.

Outside documents (fetched with pip and apt-get, the registries' own clients, never at a
test's run time; the lists, versions and fetching are ``outside_documents``):

- ``outside/ocrmypdf/``: OCRmyPDF 17.13.0's source distribution, ``tests/resources/``:
  ``c03-29.pdf`` (a scanned page of Huckleberry Finn, public domain), ``linn.pdf`` (a
  two-column brochure scan, GFDL-1.2+ or CC-BY-SA-3.0), ``epson.pdf`` (a printed and scanned
  Wikipedia article, CC-BY-SA-3.0), ``masks.pdf`` (the same from the German Wikipedia,
  CC-BY-SA-3.0), ``graph_ocred.pdf`` (a chart with an OCR text layer under it, GFDL-1.2+ or
  CC-BY-SA-3.0); second wave: ``2400dpi.pdf`` (a typewritten recipe, scanned, GFDL-1.2+ or
  CC-BY-SA-1.0 to 3.0), ``multipage.pdf`` (scanned book pages, page 5 a two-column page of
  A Tale of Two Cities; its page 1 is c03-29's scan and carries no test; public domain),
  ``kcs.pdf`` (a handwritten line, scanned, CC-BY-SA-4.0); licences as the package's
  ``REUSE.toml`` gives them.
- ``outside/texlive/``: Debian's ``texlive-latex-base-doc`` (2022.20230122-3):
  ``testmath.pdf`` (amsmath's sample paper), ``amsldoc.pdf`` (amsmath's user guide),
  ``thmtest.pdf`` (amscls's theorem test), LaTeX Project Public Licence 1.3c. Second wave,
  licences as the packages' ``Licenses.gz`` gives them: ``texlive-latex-recommended-doc``
  (2022.20230122-3): ``booktabs.pdf`` (tables) and ``mathtools.pdf`` (displays), LPPL-1.3c;
  ``texlive-science-doc`` (2022.20230122-4): ``physics.pdf`` (command tables, bra-kets),
  LPPL; ``texlive-lang-cyrillic``, ``-greek``, ``-arabic``, ``-korean`` (2022.20230122-1):
  ``lshort-bg.pdf`` (the Bulgarian Not So Short Introduction, public domain),
  ``greektonoi.pdf`` (in polytonic Greek, LGPL-3), ``arabic-book.pdf`` (an Arabic book
  template, LPPL-1.3), ``lshort-ko.pdf`` (the Korean one, GFDL; its text layer has no spaces
  between words, its tests have them as printed).
- ``outside/r/R-intro.pdf``: Debian's ``r-doc-pdf`` (4.2.2.20221110-2), An Introduction to R,
  under the R Core Team's permission notice (verbatim and modified copies under the same
  notice).
- ``outside/octave/refcard-a4.pdf``: Debian's ``octave-doc`` (7.3.0-2), Octave's three-column
  reference card, GPL-3+.
- ``outside/gnuplot/gnuplot.pdf``: Debian's ``gnuplot-doc`` (5.4.4+dfsg1-2), gnuplot's manual,
  under gnuplot's licence (free copying and distribution, modifications as patches).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import pymupdf

from model.engines.base import Engine, EngineOptions
from model.quality.checks import PageTest, load_tests
from model.quality.harness import PageRun, Report, score_runs, transcribe_pages
from model.quality.outside_documents import fetch_outside
from model.quality.realpages import (
    CORPUS,
    SCAN,
    build_scans,
    document_scan_tests,
    scan_name,
    scan_tests,
    scanned_pages,
)

DATA = Path(__file__).resolve().parent / "data"
PARTS = {
    "dev": DATA / "new-pages-dev.jsonl",
    "held": DATA / "new-pages-held.jsonl",
    "dev2": DATA / "new-pages-dev2.jsonl",
    "held2": DATA / "new-pages-held2.jsonl",
}
# Tests added by an audit of the development part (``--audit``), as the real set's were
# (``realpages.AUDIT_TESTS``): defects a reader sees on pages whose tests all passed, written
# from the source page. The held-aside part has no audit: nobody reads its pages.
DEV_AUDIT = DATA / "new-pages-dev-audit.jsonl"


def fetch(root: Path) -> None:
    """Lay out ``root`` as the tests' paths expect: the shared corpus's folders linked in,
    the outside documents taken from their packages (``outside_documents``)."""
    root.mkdir(parents=True, exist_ok=True)
    for folder in ("pdf-samples", "docling-testdata"):
        link = root / folder
        if not link.exists():
            link.symlink_to(CORPUS / folder, target_is_directory=True)
    fetch_outside(root)


def load_part(part: str, *, audit: bool = False) -> list[PageTest]:
    tests = load_tests(PARTS[part])
    if audit and part == "dev":
        tests += load_tests(DEV_AUDIT)
    return tests


def evaluate_part(
    engine: Engine,
    options: EngineOptions,
    root: Path,
    part: str,
    *,
    scans_dir: Path | None = None,
    layered: bool = False,
    documents: bool = False,
    audit: bool = False,
) -> Report:
    """The part's tests on its pages as they are, or (``scans_dir``) on scans of them made as
    the real set's are (``realpages.SCAN``), or (``layered``) on those scans under Tesseract's
    text layer; with ``documents`` each scan holds the pages around too
    (``realpages.scan_document``). ``audit`` adds the development part's audit (``DEV_AUDIT``)."""
    tests = load_part(part, audit=audit)
    pages = sorted({(t.pdf, t.page) for t in tests})
    if scans_dir is None:
        return score_runs(transcribe_pages(engine, options, root, pages), tests)
    if documents:
        build_scans(pages, scans_dir, root, documents=True)
        named = scanned_pages(pages, root, documents=True)
        runs = transcribe_pages(engine, options, scans_dir, named)
        return score_runs(runs, document_scan_tests(tests, root))
    build_scans(pages, scans_dir, root)
    if layered:
        build_layered(pages, scans_dir)
        named = ((layer_name(p, n), 1) for p, n in pages)
        return score_runs(transcribe_pages(engine, options, scans_dir, named), layer_tests(tests))
    runs = transcribe_pages(engine, options, scans_dir, ((scan_name(p, n), 1) for p, n in pages))
    return score_runs(runs, scan_tests(tests))


def layer_name(pdf: str, page: int) -> str:
    return scan_name(pdf, page).replace("scans/", "layered/", 1)


def build_layered(pages: list[tuple[str, int]], scans_dir: Path) -> None:
    """Each page's scan as Tesseract's PDF: the scan's picture, Tesseract's reading of it laid
    over it invisibly."""
    for pdf, page in pages:
        target = scans_dir / layer_name(pdf, page)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            image = Path(tmp) / "page.jpg"
            with pymupdf.open(scans_dir / scan_name(pdf, page)) as scan:
                xref = scan[0].get_images()[0][0]
                image.write_bytes(scan.extract_image(xref)["image"])
            dpi = str(SCAN.dpi)
            base = Path(tmp) / "layered"
            subprocess.run(
                ["tesseract", str(image), str(base), "--dpi", dpi, "-l", "eng", "pdf"],
                check=True, capture_output=True,
            )  # fmt: skip
            shutil.copyfile(base.with_suffix(".pdf"), target)


def layer_tests(tests: list[PageTest]) -> list[PageTest]:
    return [
        replace(test, pdf=layer_name(test.pdf, test.page), page=1, id=f"layer-{test.id}")
        for test in tests
    ]


def dump_name(pdf: str, page: int) -> str:
    return pdf.removesuffix(".pdf").replace("/", "_") + f"-p{page}.md"


def score_dump(
    dump: Path, part: str, *, scans: bool = False, layered: bool = False, audit: bool = False
) -> Report:
    """The part's tests scored on the Markdown a ``--dump`` kept (a page missing there reads as
    empty): a reading judged again by changed tests, without reading a page."""
    tests = load_part(part, audit=audit)
    tests = layer_tests(tests) if layered else scan_tests(tests) if scans else tests
    runs = {}
    for pdf, page in {(t.pdf, t.page) for t in tests}:
        path = dump / dump_name(pdf, page)
        markdown = path.read_text(encoding="utf-8") if path.is_file() else ""
        runs[(pdf, page)] = PageRun(pdf, page, markdown, 0.0)
    return score_runs(runs, tests)


def main(argv: list[str] | None = None) -> int:
    from model.engines.registry import load_engine
    from model.quality.run import parse_options, print_report, report_dict

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    get = sub.add_parser("fetch", help="lay out DIR: the corpus linked, the outside documents")
    get.add_argument("root", type=Path)
    run = sub.add_parser("run", help="score a part on DIR (laid out by fetch)")
    run.add_argument("root", type=Path)
    run.add_argument("--part", choices=sorted(PARTS), required=True)
    run.add_argument("--engine", default="local")
    run.add_argument("--scans", action="store_true", help="score scans of the pages")
    run.add_argument("--ocr-layer", action="store_true", help="the scans under Tesseract's layer")
    run.add_argument(
        "--scanned-documents",
        action="store_true",
        help="each page scanned with the pages around it, as one document",
    )
    run.add_argument("--scans-dir", type=Path, help="keep the scans here (default: temp)")
    run.add_argument("--option", action="append", default=[], help="key=value engine option")
    run.add_argument("--json", action="store_true")
    run.add_argument("--fail", action="store_true", help="list the failing tests")
    run.add_argument("--dump", type=Path, help="write each page's Markdown into this folder")
    run.add_argument("--audit", action="store_true", help="add the development part's audit")
    again = sub.add_parser("score", help="score the Markdown a run's --dump kept")
    again.add_argument("dump", type=Path)
    again.add_argument("--part", choices=sorted(PARTS), required=True)
    again.add_argument("--scans", action="store_true", help="the dump is of the scans")
    again.add_argument("--ocr-layer", action="store_true", help="the dump is of the layered scans")
    again.add_argument("--json", action="store_true")
    again.add_argument("--fail", action="store_true", help="list the failing tests")
    again.add_argument("--audit", action="store_true", help="add the development part's audit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.command == "fetch":
        fetch(args.root)
        return 0
    if args.command == "score":
        report = score_dump(
            args.dump, args.part, scans=args.scans, layered=args.ocr_layer, audit=args.audit
        )
        if args.json:
            json.dump(report_dict(report), sys.stdout, indent=2, ensure_ascii=False)
            print()
        else:
            print_report(report, failures=args.fail)
        return 0
    options = parse_options(args.option)
    engine = load_engine(args.engine)
    engine.load()
    with tempfile.TemporaryDirectory() as tmp:
        scanned = args.scans or args.ocr_layer or args.scanned_documents
        scans_dir = (args.scans_dir or Path(tmp)) if scanned else None
        report = evaluate_part(
            engine,
            options,
            args.root,
            args.part,
            scans_dir=scans_dir,
            layered=args.ocr_layer,
            documents=args.scanned_documents,
            audit=args.audit,
        )
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for (pdf, page), page_run in sorted(report.pages.items()):
            (args.dump / dump_name(pdf, page)).write_text(page_run.markdown, encoding="utf-8")
    if args.json:
        json.dump(report_dict(report), sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    reading = "scanned documents" if args.scanned_documents else "scans" if scanned else ""
    print(f"engine {args.engine} options {options} part {args.part}", reading)
    print_report(report, failures=args.fail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
