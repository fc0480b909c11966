"""PyMuPDF's layout model, switched on for the local engine, with its page-image network's
working memory kept from one page to the next.

pymupdf-layout (the model pymupdf4llm lays a page out with) builds each of its ONNX Runtime
sessions with the CPU memory arena off (``pymupdf/layout/onnx/common_util.py``,
``make_session``: a long-lived process reading pages of many sizes would otherwise keep its
largest allocation for good). For the network that reads the page's image that concern does
not arise: its input is always one 300 × 300 grey image (the model's declared input shape;
``ImageFeatureExtractorV1.predict`` resizes every page to it), so its working memory is the
same on every page, and an arena holds exactly one page's worth after the first. Without it,
every page allocates and frees those buffers afresh. Measured on the real set's text-layer
pages (one process a side, alternating; ``docs/QUALITY.md``): bare ``pymupdf4llm.to_markdown``
about a quarter faster with the arena on that session alone, the whole engine about a tenth,
at about 150 MB more resident memory per process that reads PDFs, the same after two rounds
of the 46 pages as after one. The arena on the layout network too (whose input grows with the
page's boxes) gained a few per cent more and is left off.

``activate()`` is what the engine calls before pymupdf4llm: it switches the model on
(``pymupdf.layout.activate``) and, once per process, rebuilds that one session with the arena
on. Where a later pymupdf-layout is shaped otherwise, the session is left as it is (the same
layout, at the old speed) and a warning says so; ``image_session_keeps_memory`` lets a test
notice.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_done = False
_REPLACED: list[Any] = []  # sessions replaced here, kept alive (``_keep_image_memory``)


def activate() -> None:
    """Switch PyMuPDF's layout model on, its image network keeping its memory between pages."""
    global _done
    import pymupdf.layout

    # pymupdf4llm turns the layout model on at import when pymupdf.layout is importable;
    # activating it here as well makes that dependency explicit and fails loudly without it.
    pymupdf.layout.activate()
    if _done:
        return
    with _lock:
        if not _done:
            _keep_image_memory()
            _done = True


def image_network() -> Any | None:
    """The layout model's image network (``ImageFeatureExtractorV1``), or None where this
    pymupdf-layout does not hold one where this module looks: the model that
    ``pymupdf._get_layout`` closes over, its ``feature_extractor``."""
    import pymupdf

    for cell in getattr(pymupdf._get_layout, "__closure__", None) or ():
        extractor = getattr(getattr(cell.cell_contents, "_model", None), "feature_extractor", None)
        if extractor is not None:
            return extractor
    return None


def image_session_keeps_memory() -> bool:
    session = getattr(image_network(), "_session", None)
    return session is not None and bool(session.get_session_options().enable_cpu_mem_arena)


def _keep_image_memory() -> None:
    import onnxruntime as ort

    network = image_network()
    session = getattr(network, "_session", None)
    if network is None or not isinstance(session, ort.InferenceSession):
        logger.warning("pymupdf-layout's image network not found: its session is left as is")
        return
    spatial = session.get_inputs()[0].shape[2:]
    if not all(isinstance(side, int) for side in spatial):
        # An input that changes with the page would let the arena grow: not this session.
        logger.warning("pymupdf-layout's image network takes pages of any size: left as is")
        return
    options = session.get_session_options()
    options.enable_cpu_mem_arena = True
    network._session = ort.InferenceSession(
        session._model_path, sess_options=options, providers=session.get_providers()
    )
    # The session replaced is kept, never destroyed. A Celery worker's parent imports PyMuPDF,
    # and with it the layout model (its sessions and their thread pools); a prefork child that
    # destroyed such a session would wait in ONNX Runtime for pool threads that were never
    # forked, and never read a page. A child leaves through os._exit, so this is never freed.
    _REPLACED.append(session)
