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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from model.bounded_child import ChildFailed, ChildTimeout, bounded_run

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

# The page was not drawn within the limit (the child was killed), or could not be drawn.
RenderTimeout = ChildTimeout
RenderFailed = ChildFailed


@dataclass(frozen=True)
class PageImages:
    panel: bytes  # JPEG, long side at most PANEL_LONG_SIDE
    full: bytes  # JPEG, FULL_DPI, long side at most FULL_LONG_SIDE


def render_page_images(
    data: bytes, mime_type: str, page_number: int, *, timeout: float
) -> PageImages:
    """Page ``page_number`` drawn in a child process that is killed after ``timeout`` s
    (``model.bounded_child``)."""
    with bounded_run(
        _draw_into, (data, mime_type, page_number), timeout=timeout, memory_bytes=CHILD_MEMORY_BYTES
    ) as out:
        return PageImages(
            panel=(out / "panel.jpg").read_bytes(), full=(out / "full.jpg").read_bytes()
        )


def _draw_into(folder: str, data: bytes, mime_type: str, page_number: int) -> None:
    """The child's work: draw the page into ``folder``."""
    images = draw_page_images(data, mime_type, page_number)
    out = Path(folder)
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
