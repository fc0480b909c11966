"""The layout model as the local engine sets it up (``model.layout_model``): its image network
keeps its memory between pages, and lays real pages out exactly as pymupdf-layout's own
model does."""

from __future__ import annotations

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
