"""A page's images for people to look at (the job page's viewer), drawn in a subprocess.

Drawing a page can take without bound: a 2.5 KB PDF whose drawing draws itself ten times,
eight levels deep, keeps MuPDF busy for minutes in C code, where neither Python's signals nor
Celery's soft time limit reach it. So a page is drawn in a child process with a wall-clock
limit (``render_page_images``): past it the child is killed, whatever it is doing, and the
caller learns ``RenderTimeout``. The worker draws every page this way before its engine reads
it (``ocr_worker/page_images.py``), which also proves the page can be drawn in bounded time;
the web process never draws or decodes a page, it serves what the worker stored.

Run as ``python -m model.page_images MIME NUMBER OUTDIR`` with the document on stdin, it is
that child: it writes ``panel.jpg`` and ``full.jpg`` into OUTDIR.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
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
    """Page ``page_number`` drawn in a child process that is killed after ``timeout`` s."""
    with tempfile.TemporaryDirectory(prefix="folio-render-") as folder:
        command = [sys.executable, "-m", "model.page_images", mime_type, str(page_number), folder]
        try:
            done = subprocess.run(
                command, input=data, capture_output=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            # subprocess.run has killed (SIGKILL) and reaped the child already.
            raise RenderTimeout(f"the page was not drawn within {timeout:g} s") from exc
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            message = reason[-1] if reason else f"the renderer exited with {done.returncode}"
            if done.returncode < 0:
                message = f"the renderer was killed by signal {-done.returncode}"
            raise RenderFailed(message, crashed=done.returncode != DOCUMENT_REFUSED)
        out = Path(folder)
        return PageImages(
            panel=(out / "panel.jpg").read_bytes(), full=(out / "full.jpg").read_bytes()
        )


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


def _child(argv: list[str]) -> int:
    mime_type, number, folder = argv[0], int(argv[1]), Path(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))
    data = sys.stdin.buffer.read()
    from model.documents import DocumentError
    from model.pages import PageSelectionError

    try:
        images = draw_page_images(data, mime_type, number)
    except (DocumentError, PageSelectionError) as exc:
        print(str(exc), file=sys.stderr)
        return DOCUMENT_REFUSED
    (folder / "panel.jpg").write_bytes(images.panel)
    (folder / "full.jpg").write_bytes(images.full)
    return 0


if __name__ == "__main__":
    # PyMuPDF imports its optional layout analyser when it is installed (over a second, and
    # drawing never uses it): refusing the import keeps the child's start short.
    sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(_child(sys.argv[1:]))
