"""The layout model as the local engine sets it up (``model.layout_model``): its image network
keeps its memory between pages, and lays real pages out exactly as pymupdf-layout's own
model does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pymupdf
import pytest

from model import layout_model
from model.documents import MUPDF_LOCK
from model.quality.realpages import CORPUS

SOURCES = CORPUS / "docling-testdata" / "pdf" / "sources"

pytestmark = pytest.mark.skipif(not SOURCES.is_dir(), reason="the shared corpus is not here")


def test_the_image_network_keeps_its_memory_once_activated() -> None:
    # A pymupdf-layout that holds the network elsewhere fails here: the speed-up is gone.
    layout_model.activate()
    assert layout_model.image_session_keeps_memory()
    session = layout_model.image_network()._session
    layout_model.activate()
    assert layout_model.image_network()._session is session  # rebuilt once a process


@pytest.mark.parametrize(
    ("name", "index"),
    [("redp5110_sampled.pdf", 1), ("normal_4pages.pdf", 0), ("2305.03393v1-pg9.pdf", 0)],
)
def test_the_same_boxes_as_pymupdf_layouts_own_model(name: str, index: int) -> None:
    from pymupdf.layout import DocumentLayoutAnalyzer

    layout_model.activate()
    as_installed = DocumentLayoutAnalyzer.get_model()
    own_session = as_installed._model.feature_extractor._session
    assert not own_session.get_session_options().enable_cpu_mem_arena
    with MUPDF_LOCK, pymupdf.open(SOURCES / name) as doc:
        page = doc[index]
        engines = [pymupdf._get_layout(page) for _ in range(2)]  # the second from the arena
        own = as_installed.predict(page)
    assert own, "the page has boxes"
    assert engines[0] == own
    assert engines[1] == own


# A Celery worker's parent imports PyMuPDF, which builds the layout model; the prefork child
# switches the engine's layout model on and lays a page out. Run in a process of its own, so
# that nothing of this test process (an activation already made) hides the case.
_CHILD_AFTER_FORK = """
import multiprocessing, sys
import pymupdf
from model import layout_model

def child(answers):
    layout_model.activate()
    with pymupdf.open(sys.argv[1]) as doc:
        answers.put((layout_model.image_session_keeps_memory(), len(pymupdf._get_layout(doc[0]))))

context = multiprocessing.get_context("fork")
answers = context.Queue()
process = context.Process(target=child, args=(answers,))
process.start()
process.join(90)
if process.is_alive():
    process.kill()
    sys.exit("the child never laid its page out")
print(process.exitcode, *answers.get(timeout=5))
"""


def test_a_forked_child_switches_the_model_on_and_lays_pages_out() -> None:
    # The child replaces a session its parent built; destroying that one would wait for ever
    # on thread-pool threads that were not forked.
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD_AFTER_FORK), str(SOURCES / "multi_page.pdf")],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    exitcode, keeps_memory, boxes = done.stdout.split()
    assert (exitcode, keeps_memory) == ("0", "True")
    assert int(boxes) > 0
