"""Every page returns its best reading: a sweep of real and damaged pages through the local
engine, as the worker reads them (``model.pipeline.transcribe_page``).

Every page of every PDF in the shared corpus is read, then generated mutations of them
(``tests/mutations.py``: content streams cut at half, the file cut at two thirds, Symbol and
ZapfDingbats lines, the page on PDF's largest and on a few-point page) and pages built with
zero-width, private-use and bidirectional characters. A page fails the sweep when MuPDF can
draw it and the pipeline raises on it; a page MuPDF cannot open or draw is counted apart
(the service refuses or fails such a page with MuPDF's reason).

The mutations are applied to a sample of the corpus pages (``MUTATED_PER_KIND``, chosen with
a fixed seed) so that the sweep takes minutes on two cores, not an hour; the report printed
at the end says how many pages of each kind were read, the failures, and the slowest page
(its time is reported, never asserted).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import pymupdf
import pytest

from model import pipeline
from model.engines.base import EngineOptions, PageInput
from model.engines.local import LocalEngine
from model.quality.realpages import CORPUS
from model.rendering import open_pdf_page
from tests.mutations import MUTATIONS, glyph_pages

PDF = "application/pdf"
# How many sampled corpus pages each mutation is applied to: a page drawn on PDF's largest
# size costs the engine tens of seconds, so those two kinds take fewer.
MUTATED_PER_KIND = {"huge page": 2, "tiny page": 3}
MUTATED_DEFAULT = 6
SEED = 27
# MuPDF is asked to draw each page no larger than this many pixels a side: enough to know
# it can, cheap on a 200-inch page.
PROBE_PIXELS = 200


@dataclass
class Sweep:
    read: dict[str, int] = field(default_factory=dict)  # pages read, by kind
    unrenderable: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")

    def report(self) -> str:
        kinds = ", ".join(f"{kind} {count}" for kind, count in self.read.items())
        return (
            f"robustness sweep: {sum(self.read.values())} pages read ({kinds}); "
            f"{len(self.failures)} failed; {len(self.unrenderable)} MuPDF cannot draw "
            f"(not read); {len(self.failed_steps)} read with a failed step; "
            f"slowest {self.slowest[0]:.1f} s ({self.slowest[1]})"
        )


def _renders(data: bytes, number: int) -> str | None:
    """``None`` where MuPDF opens the document and draws page ``number`` (1-based); else why
    not."""
    try:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            if doc.needs_pass:
                return "encrypted"
            if number > doc.page_count:
                return f"{doc.page_count} pages"
            page = doc[number - 1]
            scale = min(1.0, PROBE_PIXELS / max(page.rect.width, page.rect.height, 1.0))
            page.get_pixmap(matrix=pymupdf.Matrix(scale, scale))
    except Exception as exc:  # MuPDF's reason, whatever its type
        return f"{type(exc).__name__}: {exc}"
    return None


def _pages(data: bytes) -> int:
    try:
        with pymupdf.open(stream=data, filetype="pdf") as doc:
            return 0 if doc.needs_pass else doc.page_count
    except Exception:
        return 0


def _read(engine: LocalEngine, sweep: Sweep, kind: str, label: str, data: bytes, number: int):
    where = f"{label} p{number}"
    why_not = _renders(data, number)
    if why_not is not None:
        sweep.unrenderable.append(f"{where}: {why_not}")
        return
    started = time.monotonic()
    try:
        result = pipeline.transcribe_page(engine, PageInput(data, PDF, number), EngineOptions())
    except Exception as exc:
        sweep.failures.append(f"{where}: {type(exc).__name__}: {exc}")
        return
    finally:
        sweep.read[kind] = sweep.read.get(kind, 0) + 1
    spent = time.monotonic() - started
    if spent > sweep.slowest[0]:
        sweep.slowest = (spent, where)
    failed = result.extra.get("quality", {}).get("failed_steps") or []
    if failed:
        sweep.failed_steps.append(f"{where}: {failed}")


def test_a_page_of_a_file_cut_short_is_taken_out_of_the_tree_mupdf_repaired():
    """MuPDF repairs a PDF cut at two thirds and draws its page, but cannot rearrange the
    repaired page tree ("not a dict"): the page is copied out instead (it failed the page)."""
    source = CORPUS / "pdf-samples/026-latex-multicolumn/multicolumn.pdf"
    if not source.is_file():
        pytest.skip(f"no corpus at {CORPUS}")
    data = MUTATIONS["truncated file"](source.read_bytes(), 0)
    assert _renders(data, 1) is None

    doc = open_pdf_page(data, 1)

    assert doc.page_count == 1
    assert doc[0].get_pixmap(matrix=pymupdf.Matrix(0.2, 0.2)).width > 0


@pytest.mark.slow  # OCR and layout of a few hundred pages
def test_every_page_mupdf_can_draw_is_read_corpus_mutations_and_odd_glyphs():
    pdfs = sorted(CORPUS.rglob("*.pdf"))
    if not pdfs:
        pytest.skip(f"no corpus at {CORPUS}")
    engine = LocalEngine()
    sweep = Sweep()

    corpus_pages: list[tuple[str, bytes, int]] = []
    for path in pdfs:
        data = path.read_bytes()
        label = str(path.relative_to(CORPUS))
        count = _pages(data)
        if count == 0:
            sweep.unrenderable.append(f"{label}: {_renders(data, 1)}")
        for number in range(1, count + 1):
            corpus_pages.append((label, data, number))
            _read(engine, sweep, "corpus", label, data, number)

    sample = random.Random(SEED)
    for kind, mutate in MUTATIONS.items():
        count = MUTATED_PER_KIND.get(kind, MUTATED_DEFAULT)
        for label, data, number in sample.sample(corpus_pages, count):
            _read(engine, sweep, kind, f"{label} ({kind})", mutate(data, number - 1), 1)

    for label, data in glyph_pages().items():
        _read(engine, sweep, "built glyph pages", label, data, 1)

    print("\n" + sweep.report())
    for line in sweep.unrenderable + sweep.failed_steps:
        print("  " + line[:300])
    assert sweep.read.get("corpus", 0) >= 200, sweep.report()  # the corpus was there
    assert not sweep.failures, "\n".join(sweep.failures)
