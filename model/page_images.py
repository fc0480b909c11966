"""A page's images for people to look at (the job page's viewer), drawn in a subprocess.

Drawing a page can take without bound: a 2.5 KB PDF whose drawing draws itself ten times,
eight levels deep, keeps MuPDF busy for minutes in C code, where neither Python's signals nor
Celery's soft time limit reach it. So a page is drawn in a child process with a wall-clock
limit (``render_page_images``): past it the child is killed, whatever it is doing, and the
caller learns ``RenderTimeout``. The worker draws every page this way before its engine reads
it (``ocr_worker/page_images.py``), which also proves the page can be drawn in bounded time;
the web process never draws or decodes a page, it serves what the worker stored.
"""

from __future__ import annotations

import io
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import resource
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image

# Big enough to read the page beside its text on a large screen, small enough to send fast.
PANEL_LONG_SIDE = 1400
# The zoomed page view shows the page drawn for 200 % (twice 96 dpi), its long side capped.
FULL_DPI = 192
FULL_LONG_SIDE = 2400
# The child's address space: a page at FULL_LONG_SIDE is ~17 MB of pixels; MuPDF, PIL and
# the interpreter need far less than this, and a hostile page cannot take the host's memory.
CHILD_MEMORY_BYTES = 3 * 1024**3
# The child's exit status when the document itself says why the page cannot be drawn.
DOCUMENT_REFUSED = 3


class RenderTimeout(Exception):
    """The page was not drawn within the limit; the child was killed."""


class RenderFailed(Exception):
    """The child could not draw the page: the document's own error, or the child died
    (``crashed``: killed by a signal or out of memory)."""

    def __init__(self, message: str, *, crashed: bool):
        super().__init__(message)
        self.crashed = crashed


@dataclass(frozen=True)
class PageImages:
    panel: bytes  # JPEG, long side at most PANEL_LONG_SIDE
    full: bytes  # JPEG, FULL_DPI, long side at most FULL_LONG_SIDE


def render_page_images(
    data: bytes, mime_type: str, page_number: int, *, timeout: float
) -> PageImages:
    """Page ``page_number`` drawn in a child process that is killed after ``timeout`` s.

    The child is forked from a server process that has PyMuPDF and Pillow imported already
    (multiprocessing's ``forkserver``, started once per worker process): a fresh interpreter
    per page cost 1.5-1.9 s on the busy test host, the server's child 0.3-0.6 s more than
    drawing in-process (bench/page_images.py).
    The server is a clean process of its own, so forking from it is safe whatever threads the
    worker runs (a threads pool, vLLM)."""
    with tempfile.TemporaryDirectory(prefix="folio-render-") as folder:
        child = _context().Process(
            target=_draw_into, args=(data, mime_type, page_number, folder), daemon=True
        )
        child._config["authkey"] = _fresh_key()  # type: ignore[attr-defined]
        with _children_allowed():
            child.start()
        timed_out = False
        try:
            child.join(timeout)
        finally:
            if child.exitcode is None:  # past the limit, or the wait itself was interrupted
                timed_out = True
                child.kill()
                child.join()
        out = Path(folder)
        if timed_out:
            raise RenderTimeout(f"the page was not drawn within {timeout:g} s")
        if child.exitcode == DOCUMENT_REFUSED and (out / "refused.txt").exists():
            raise RenderFailed((out / "refused.txt").read_text(), crashed=False)
        if child.exitcode is not None and child.exitcode < 0:
            raise RenderFailed(f"the renderer was killed by signal {-child.exitcode}", crashed=True)
        if child.exitcode != 0:
            error = out / "error.txt"
            message = error.read_text() if error.exists() else f"exit status {child.exitcode}"
            raise RenderFailed(f"the renderer failed: {message}", crashed=True)
        return PageImages(
            panel=(out / "panel.jpg").read_bytes(), full=(out / "full.jpg").read_bytes()
        )


@contextmanager
def _children_allowed() -> Iterator[None]:
    """Let a Celery prefork child start our child. It is a daemonic process, and
    multiprocessing refuses a daemonic process children, lest they outlive it; ours cannot:
    each is waited for and killed past its limit, and the fork server exits with the process
    that started it. Only one task runs at a time in a prefork child, so nothing else sees
    the settings changed meanwhile (a threads pool's process is not daemonic: no change)."""
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
    daemon = config.pop("daemon", None)
    # The start sends this process's key along; a prefork child's is billiard's, which the
    # standard library's pickler refuses. A key of the standard library's, for the start.
    authkey = config.get("authkey")
    config["authkey"] = _fresh_key()
    try:
        yield
    finally:
        config["authkey"] = authkey
        if daemon is not None:
            config["daemon"] = daemon


def _fresh_key() -> bytes:
    """A process key of the standard library's own kind (see ``_children_allowed``)."""
    return multiprocessing.process.AuthenticationString(os.urandom(32))  # type: ignore[attr-defined,no-any-return]


@cache
def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    # Imported once in the server, so each child starts with them (model/render_child.py).
    context.set_forkserver_preload(["model.render_child"])
    return context


def _draw_into(data: bytes, mime_type: str, page_number: int, folder: str) -> None:
    """The child: draw the page into ``folder``; its exit status says how it went."""
    out = Path(folder)
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    from model.documents import DocumentError
    from model.pages import PageSelectionError

    try:
        images = draw_page_images(data, mime_type, page_number)
    except (DocumentError, PageSelectionError) as exc:
        (out / "refused.txt").write_text(str(exc))
        sys.exit(DOCUMENT_REFUSED)
    except MemoryError:
        (out / "error.txt").write_text("MemoryError: the page needs more memory to draw")
        sys.exit(1)
    (out / "panel.jpg").write_bytes(images.panel)
    (out / "full.jpg").write_bytes(images.full)


def draw_page_images(data: bytes, mime_type: str, page_number: int) -> PageImages:
    """The two images, drawn in this process (the child's work)."""
    from model.documents import PDF
    from model.rendering import open_page_image, pdf_page_image_at_dpi

    full = (
        pdf_page_image_at_dpi(data, page_number, dpi=FULL_DPI, long_side=FULL_LONG_SIDE)
        if mime_type == PDF
        else open_page_image(data, mime_type, page_number, long_side=FULL_LONG_SIDE)
    )
    panel = full.copy()
    if max(panel.size) > PANEL_LONG_SIDE:
        panel.thumbnail((PANEL_LONG_SIDE, PANEL_LONG_SIDE))
    return PageImages(panel=_jpeg(panel), full=_jpeg(full))


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=85, optimize=True)
    return buffer.getvalue()
