"""The layout of one page: blocks in reading order with boxes in PDF points (origin top-left),
the page's size alongside, and the words of OCR'd pages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from model.documents import MUPDF_LOCK, PDF, open_image
from model.rendering import open_pdf_page

BLOCK_TYPES = (
    "title",
    "heading",
    "paragraph",
    "list_item",
    "table",
    "formula",
    "figure",
    "caption",
    "footnote",
    "page_header",
    "page_footer",
)
# Where a page's boxes came from.
SOURCES = ("text-layer", "ocr", "grounding", "page")
# An image without a resolution of its own is taken at 72 dpi: one point per pixel.
DEFAULT_IMAGE_DPI = 72.0

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Block:
    type: str
    markdown: str
    bbox: Box  # x0, y0, x1, y1 in points from the page's top-left corner
    level: int | None = None  # headings: 1 for "#", 2 for "##", ...
    confidence: float | None = None  # where the engine gives one (OCR: mean line score)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "markdown": self.markdown,
            "bbox": _rounded(self.bbox),
        }
        if self.level is not None:
            out["level"] = self.level
        if self.confidence is not None:
            out["confidence"] = round(self.confidence, 4)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Block:
        return cls(
            type=data["type"],
            markdown=data.get("markdown", ""),
            bbox=tuple(data["bbox"]),
            level=data.get("level"),
            confidence=data.get("confidence"),
        )


@dataclass(frozen=True)
class Word:
    text: str
    bbox: Box


@dataclass
class PageLayout:
    width: float  # points
    height: float
    blocks: list[Block]
    source: str
    # OCR'd pages only: each recognized word and its box, for the searchable PDF.
    words: list[Word] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "width": round(self.width, 2),
            "height": round(self.height, 2),
            "source": self.source,
            "blocks": [block.to_dict() for block in self.blocks],
        }
        if self.words:
            # Compact: a page holds hundreds of words.
            out["words"] = [[word.text, *_rounded(word.bbox)] for word in self.words]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PageLayout:
        return cls(
            width=float(data["width"]),
            height=float(data["height"]),
            source=data.get("source", "page"),
            blocks=[Block.from_dict(block) for block in data.get("blocks", [])],
            words=[Word(str(w[0]), (w[1], w[2], w[3], w[4])) for w in data.get("words", [])],
        )

    def resized(self, width: float, height: float) -> PageLayout:
        """The same layout on a page of ``width`` x ``height`` points, every box scaled with
        the page (a structured page's nominal page replaced by the page drawn for it)."""
        sx, sy = width / self.width, height / self.height

        def scaled(box: Box) -> Box:
            return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)

        blocks = [
            Block(b.type, b.markdown, scaled(b.bbox), b.level, b.confidence) for b in self.blocks
        ]
        words = [Word(w.text, scaled(w.bbox)) for w in self.words]
        return PageLayout(width, height, blocks, self.source, words)

    def with_markdown(self, rewrite: Callable[[str], str]) -> PageLayout:
        """The same layout with each block's Markdown passed through ``rewrite`` (the text
        normalisation the page's Markdown went through)."""
        blocks = [
            Block(b.type, rewrite(b.markdown), b.bbox, b.level, b.confidence) for b in self.blocks
        ]
        return PageLayout(self.width, self.height, blocks, self.source, self.words)


def whole_page_layout(markdown: str, size: tuple[float, float]) -> PageLayout:
    """One block covering the page: for engines that say nothing about where text is."""
    width, height = size
    blocks = [Block("paragraph", markdown.strip(), (0.0, 0.0, width, height))]
    return PageLayout(width, height, blocks if markdown.strip() else [], "page")


def page_size_points(data: bytes, mime_type: str, page_number: int) -> tuple[float, float]:
    """A page's size as shown, in points: a PDF page's (rotation applied), or an image frame's
    upright size at its resolution (72 dpi when it states none)."""
    if mime_type == PDF:
        with MUPDF_LOCK:
            doc = open_pdf_page(data, page_number)
            try:
                rect = doc[0].rect
                return float(rect.width), float(rect.height)
            finally:
                doc.close()
    with open_image(data) as image:
        image.seek(page_number - 1)
        width, height = image.size
        # EXIF orientations 5-8 turn the picture a quarter: it shows with its sides swapped.
        if image.getexif().get(0x0112, 1) in (5, 6, 7, 8):
            width, height = height, width
        dpi = image_dpi(image.info)
    return width * 72.0 / dpi, height * 72.0 / dpi


def image_dpi(info: Mapping[Any, Any]) -> float:
    dpi = info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    # Some files state 1 dpi or absurd values; only a plausible scan resolution is believed.
    return value if 50 <= value <= 2400 else DEFAULT_IMAGE_DPI


def _rounded(box: Iterable[float]) -> list[float]:
    return [round(float(v), 2) for v in box]
