"""A page's image for people to look at (the job page's viewer), drawn in a subprocess.

Drawing a page can take without bound: a 2.5 KB PDF whose drawing draws itself ten times,
eight levels deep, keeps MuPDF busy for minutes in C code, where neither Python's signals nor
Celery's soft time limit reach it. So a page is drawn in a child process with a wall-clock
limit (``render_page_image``): past it the child is killed, whatever it is doing, and the
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

# One image a page, WebP at quality 80, for both the viewer's fitted view and its zoom (the
# browser scales it): the page drawn for 200 % (twice 96 dpi), its long side capped. The two
# JPEGs stored before (1400 px for the panel, this size for the zoom) took three times its
# bytes on the shared corpus's pages: 342 KiB a page against 115 (bench/page_image_bytes.py).
IMAGE_DPI = 192
IMAGE_LONG_SIDE = 2400
WEBP_QUALITY = 80
MEDIA_TYPE = "image/webp"
SUFFIX = ".webp"
# The child's address space: a page at IMAGE_LONG_SIDE is ~17 MB of pixels; MuPDF, PIL and
# the interpreter need far less than this, and a hostile page cannot take the host's memory.
CHILD_MEMORY_BYTES = 3 * 1024**3

# The page was not drawn within the limit (the child was killed), or could not be drawn.
RenderTimeout = ChildTimeout
RenderFailed = ChildFailed


@dataclass(frozen=True)
class PageImage:
    webp: bytes  # IMAGE_DPI, long side at most IMAGE_LONG_SIDE, WEBP_QUALITY


def render_page_image(
    data: bytes, mime_type: str, page_number: int, *, timeout: float
) -> PageImage:
    """Page ``page_number`` drawn in a child process that is killed after ``timeout`` s
    (``model.bounded_child``)."""
    with bounded_run(
        _draw_into, (data, mime_type, page_number), timeout=timeout, memory_bytes=CHILD_MEMORY_BYTES
    ) as out:
        return PageImage(webp=(out / f"page{SUFFIX}").read_bytes())


def _draw_into(folder: str, data: bytes, mime_type: str, page_number: int) -> None:
    """The child's work: draw the page into ``folder``."""
    (Path(folder) / f"page{SUFFIX}").write_bytes(draw_page_image(data, mime_type, page_number).webp)


def draw_page_image(data: bytes, mime_type: str, page_number: int) -> PageImage:
    """The image, drawn in this process (the child's work)."""
    from model.documents import PDF
    from model.rendering import open_page_image, pdf_page_image_at_dpi

    image = (
        pdf_page_image_at_dpi(data, page_number, dpi=IMAGE_DPI, long_side=IMAGE_LONG_SIDE)
        if mime_type == PDF
        else open_page_image(data, mime_type, page_number, long_side=IMAGE_LONG_SIDE)
    )
    return PageImage(webp=webp(image))


def webp(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="WEBP", quality=WEBP_QUALITY)
    return buffer.getvalue()
