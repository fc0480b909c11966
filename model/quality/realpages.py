"""The real-page set: pages nobody on this project wrote, their hand-written tests, scans of
the same pages, and a text-similarity figure against reviewed reference Markdown.

- Born-digital: the PDFs of the shared corpus (``docling-testdata/pdf/sources`` and
  ``pdf-samples``), tests in ``data/real-pages.jsonl``, paths relative to the corpus root.
- Scans: every tested page rendered to pixels and degraded as a tired office scanner would
  (skew, blur, noise, a hard JPEG), saved as an image-only PDF; the same tests, ids prefixed
  ``scan-``.
- Similarity: for each docling PDF with a reference (``groundtruth/<stem>.md``, reviewed by
  docling's authors), every page is transcribed, the pages joined, and both texts compared by
  normalised edit distance (1 − Levenshtein distance / the longer length), after markup is
  taken out of both, as OmniDocBench reports text.

    python -m model.quality.realpages [--scans] [--option headers=keep] [--fail] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import logging
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pymupdf
from PIL import Image, ImageFilter
from rapidfuzz.distance import Levenshtein

from model.engines.base import Engine, EngineOptions
from model.quality.checks import PageTest, load_tests
from model.quality.harness import PageRun, Report, score_runs, transcribe_pages

logger = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]


def _shared_corpus() -> Path:
    """``../shared/corpus`` beside the repository (every checkout and CI have it there); a
    git worktree kept in a folder of worktrees finds it one level further up."""
    for parent in REPO.parents:
        if (parent / "shared" / "corpus").is_dir():
            return parent / "shared" / "corpus"
    return REPO.parent / "shared" / "corpus"


CORPUS = _shared_corpus()
TESTS = Path(__file__).resolve().parent / "data" / "real-pages.jsonl"
# Tests added by an audit of the review flag (bench/review.py --audit): defects a reader sees
# on pages whose own tests all passed, written from the source page. Kept apart so that the
# harness's figures stay comparable with their earlier runs.
AUDIT_TESTS = TESTS.with_name("real-pages-audit.jsonl")
DOCLING_PDFS = "docling-testdata/pdf/sources"
DOCLING_REFERENCES = "docling-testdata/pdf/groundtruth"


# The scan every real page gets: 150 dpi grey, turned a little, softened, speckled, and
# compressed hard. Chosen so that RapidOCR still reads a clean page but makes mistakes a
# reader would see on a poor one; deterministic (the skew's sign and the noise follow the
# page's name).
@dataclass(frozen=True)
class Degradation:
    dpi: int = 150
    skew_degrees: float = 1.0
    blur_radius: float = 0.6
    noise_sigma: float = 18.0
    jpeg_quality: int = 40


SCAN = Degradation()
# Old print and poor photocopies: lower resolution, softer, dirtier, compressed harder. Most
# pages fail some test here; the review flag should catch them (bench/review.py).
WORN = Degradation(dpi=100, skew_degrees=1.5, blur_radius=1.1, noise_sigma=30.0, jpeg_quality=25)


def load_real_tests(path: Path = TESTS) -> list[PageTest]:
    return load_tests(path)


def referenced_documents(root: Path = CORPUS) -> dict[str, Path]:
    """The docling PDFs (relative to ``root``) that have a reference Markdown."""
    found: dict[str, Path] = {}
    for pdf in sorted((root / DOCLING_PDFS).glob("*.pdf")):
        reference = root / DOCLING_REFERENCES / f"{pdf.stem}.md"
        if reference.is_file():
            found[str(pdf.relative_to(root))] = reference
    return found


def page_count(path: Path) -> int:
    with pymupdf.open(path) as doc:
        return int(doc.page_count)


def pages_to_run(tests: Iterable[PageTest], root: Path = CORPUS) -> list[tuple[str, int]]:
    """The tested pages, and every page of a document that has a reference."""
    pages = {(test.pdf, test.page) for test in tests}
    for pdf in referenced_documents(root):
        pages.update((pdf, n) for n in range(1, page_count(root / pdf) + 1))
    return sorted(pages)


# --- scans -------------------------------------------------------------------------------------


def scan_name(pdf: str, page: int) -> str:
    return "scans/" + re.sub(r"[^A-Za-z0-9._-]+", "_", pdf.removesuffix(".pdf")) + f"-p{page}.pdf"


def degrade(image: Image.Image, seed: int, how: Degradation = SCAN) -> Image.Image:
    """Skew, blur, noise: the defects of a real scan, at a level OCR survives."""
    skew = how.skew_degrees if seed % 2 else -how.skew_degrees
    image = image.rotate(skew, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC)
    image = image.filter(ImageFilter.GaussianBlur(how.blur_radius))
    rng = np.random.default_rng(seed)
    noise = rng.normal(0.0, how.noise_sigma, size=(image.height, image.width))
    pixels = np.asarray(image, dtype=np.float32) + noise
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")


def scan_page(pdf_path: Path, page: int, how: Degradation = SCAN) -> bytes:
    """One page of a PDF as an image-only PDF, degraded by :func:`degrade`."""
    with pymupdf.open(pdf_path) as doc:
        source = doc[page - 1]
        pix = source.get_pixmap(dpi=how.dpi, colorspace=pymupdf.csGRAY, alpha=False)
        width = source.rect.width
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    seed = int.from_bytes(hashlib.sha256(f"{pdf_path.name}:{page}".encode()).digest()[:4], "big")
    image = degrade(image, seed, how)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=how.jpeg_quality)
    out = pymupdf.open()
    try:
        target = out.new_page(width=width, height=width * image.height / image.width)
        target.insert_image(target.rect, stream=buffer.getvalue())
        return bytes(out.tobytes(deflate=True))
    finally:
        out.close()


# A scanned document, as a scanned book or report is one: the page and up to this many pages
# on either side, each scanned as ``scan_page`` scans it. What a page shares with the pages
# around it (running heads and feet) is then there to be found, as it is in a real scan; a
# page scanned alone has no neighbours to share it with.
SCANNED_NEIGHBOURS = 2


def scanned_span(pdf_path: Path, page: int) -> range:
    """The pages (1-based) of ``pdf_path`` that page ``page``'s scanned document holds."""
    last = page_count(pdf_path)
    return range(max(1, page - SCANNED_NEIGHBOURS), min(last, page + SCANNED_NEIGHBOURS) + 1)


def document_scan_name(pdf: str, page: int) -> str:
    return scan_name(pdf, page).replace("scans/", "scanned-documents/", 1)


def scan_document(pdf_path: Path, page: int, how: Degradation = SCAN) -> bytes:
    """Page ``page`` of a PDF and the pages around it (``scanned_span``) as one image-only PDF,
    each page degraded as ``scan_page`` degrades it."""
    out = pymupdf.open()
    try:
        for number in scanned_span(pdf_path, page):
            with pymupdf.open(stream=scan_page(pdf_path, number, how), filetype="pdf") as one:
                out.insert_pdf(one)
        return bytes(out.tobytes(deflate=True))
    finally:
        out.close()


def build_scans(
    pages: Iterable[tuple[str, int]],
    out_dir: Path,
    root: Path = CORPUS,
    how: Degradation = SCAN,
    *,
    documents: bool = False,
) -> None:
    """Each page's scan in ``out_dir`` (``scan_name``), or with ``documents`` its scanned
    document (``document_scan_name``)."""
    for pdf, page in pages:
        target = out_dir / (document_scan_name if documents else scan_name)(pdf, page)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        scan = scan_document if documents else scan_page
        target.write_bytes(scan(root / pdf, page, how))


def scan_tests(tests: Iterable[PageTest]) -> list[PageTest]:
    return [
        replace(test, pdf=scan_name(test.pdf, test.page), page=1, id=f"scan-{test.id}")
        for test in tests
    ]


def document_scan_tests(tests: Iterable[PageTest], root: Path = CORPUS) -> list[PageTest]:
    """The tests of each page on its page of its scanned document (``scan_document``)."""
    return [
        replace(
            test,
            pdf=document_scan_name(test.pdf, test.page),
            page=test.page - scanned_span(root / test.pdf, test.page).start + 1,
            id=f"scan-{test.id}",
        )
        for test in tests
    ]


def scanned_pages(
    pages: Iterable[tuple[str, int]], root: Path, *, documents: bool
) -> Iterator[tuple[str, int]]:
    """Where each page is read in its scan: (scan's name, page in it)."""
    for pdf, page in pages:
        if documents:
            yield document_scan_name(pdf, page), page - scanned_span(root / pdf, page).start + 1
        else:
            yield scan_name(pdf, page), 1


# --- similarity --------------------------------------------------------------------------------

_MARKUP = (
    re.compile(r"<!--.*?-->", re.DOTALL),  # docling's image placeholders, pymupdf4llm's notes
    re.compile(r"!\[[^\]]*\]\([^)]*\)"),  # images
    re.compile(r"</?[a-zA-Z][^>]*>"),  # HTML tags (tables, <br>, <sup>, <mark>)
    re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$", re.MULTILINE),  # |---|
    re.compile(r"^#{1,6}\s+", re.MULTILINE),  # heading marks
    re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+", re.MULTILINE),  # list marks
    re.compile(r"```\w*"),  # code fences
    # dot leaders (a table of contents' layout, not its text) and their page-number dash
    re.compile(r"(?:\s*\.){4,}|…{2,}|\s—\s(?=\S+$)", re.MULTILINE),
)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|`)")


def plain_text(markdown: str) -> str:
    """The words of a Markdown page and their order, without its markup."""
    text = unicodedata.normalize("NFKC", markdown)
    for pattern in _MARKUP:
        text = pattern.sub(" ", text)
    text = _EMPHASIS.sub("", text).replace("|", " ")
    return re.sub(r"\s+", " ", text).strip()


def similarity(output: str, reference: str) -> float:
    """1 − normalised edit distance of the two texts' words (1.0: identical)."""
    return 1.0 - Levenshtein.normalized_distance(plain_text(output), plain_text(reference))


_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\([^)]*\)")


def words_kept(output: str, reference: str) -> float:
    """The share of the reference's words (counted with repeats, markup and link targets
    out, case folded) that the output holds: what a content pick lost, whatever the order."""

    def counts(markdown: str) -> Counter[str]:
        return Counter(plain_text(_LINK.sub(r"\1", markdown)).casefold().split())

    wanted, found = counts(reference), counts(output)
    total = sum(wanted.values())
    return sum(min(n, found[w]) for w, n in wanted.items()) / total if total else 1.0


@dataclass
class RealReport:
    report: Report
    similarity: dict[str, float]

    def mean_similarity(self) -> float:
        values = list(self.similarity.values())
        return sum(values) / len(values) if values else 0.0

    def pages_per_second(self) -> float:
        seconds = sum(run.seconds for run in self.report.pages.values())
        return len(self.report.pages) / seconds if seconds else 0.0


def document_similarity(
    runs: dict[tuple[str, int], PageRun], root: Path, *, scanned: bool
) -> dict[str, float]:
    scores: dict[str, float] = {}
    for pdf, reference in referenced_documents(root).items():
        texts = []
        for n in range(1, page_count(root / pdf) + 1):
            run = runs.get((scan_name(pdf, n), 1) if scanned else (pdf, n))
            texts.append(run.markdown if run else "")
        scores[pdf.rsplit("/", 1)[-1]] = similarity(
            "\n\n".join(texts), reference.read_text(encoding="utf-8")
        )
    return scores


def evaluate_real(
    engine: Engine,
    options: EngineOptions,
    *,
    root: Path = CORPUS,
    tests: list[PageTest] | None = None,
    scans_dir: Path | None = None,
    degradation: Degradation = SCAN,
    tested_only: bool = False,
) -> RealReport:
    """The real-page set (or, with ``scans_dir``, its scans degraded as ``degradation`` says,
    built there if missing). ``tested_only`` reads only the pages with tests (the similarity
    then compares the referenced documents' untested pages as empty: use it where only the
    tests count, as the review bench does)."""
    tests = load_real_tests() if tests is None else tests
    pages = sorted({(t.pdf, t.page) for t in tests}) if tested_only else pages_to_run(tests, root)
    if scans_dir is None:
        runs = transcribe_pages(engine, options, root, pages)
        return RealReport(score_runs(runs, tests), document_similarity(runs, root, scanned=False))
    build_scans(pages, scans_dir, root, degradation)
    runs = transcribe_pages(engine, options, scans_dir, ((scan_name(p, n), 1) for p, n in pages))
    return RealReport(
        score_runs(runs, scan_tests(tests)), document_similarity(runs, root, scanned=True)
    )


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from model.engines.registry import load_engine
    from model.quality.run import parse_options, print_report, report_dict

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="local")
    parser.add_argument("--scans", action="store_true", help="score the degraded scans")
    parser.add_argument("--scans-dir", type=Path, help="keep the scans here (default: temp)")
    parser.add_argument("--option", action="append", default=[], help="key=value engine option")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--fail", action="store_true", help="list the failing tests")
    parser.add_argument("--dump", type=Path, help="write each page's Markdown into this folder")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    options = parse_options(args.option)
    engine = load_engine(args.engine)
    engine.load()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        scans_dir = (args.scans_dir or Path(tmp)) if args.scans else None
        result = evaluate_real(engine, options, scans_dir=scans_dir)
    if args.dump:
        args.dump.mkdir(parents=True, exist_ok=True)
        for (pdf, page), run in sorted(result.report.pages.items()):
            name = re.sub(r"[^A-Za-z0-9._-]+", "_", pdf.removesuffix(".pdf")) + f"-p{page}.md"
            (args.dump / name).write_text(run.markdown, encoding="utf-8")
    if args.json:
        data = report_dict(result.report)
        data["similarity"] = result.similarity
        data["mean_similarity"] = result.mean_similarity()
        data["pages_per_second"] = result.pages_per_second()
        json.dump(data, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    print(f"engine {args.engine} options {options} {'scans' if args.scans else 'born-digital'}")
    print_report(result.report, failures=args.fail)
    for name, value in result.similarity.items():
        print(f"similarity {name:<36} {100 * value:.1f} %")
    print(f"mean similarity {100 * result.mean_similarity():.1f} %")
    print(
        f"{result.pages_per_second():.2f} pages/s (engine and signals), "
        f"{time.perf_counter() - started:.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
