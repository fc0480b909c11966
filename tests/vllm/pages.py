"""The rendered pages the vLLM tier sends: an A4 PDF page (2×3 tiles) and a small receipt
image (no tiles), so both of vLLM's Gundam paths are exercised."""

from __future__ import annotations

from io import BytesIO

import pymupdf
from PIL import Image, ImageDraw


def a4_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((72, 100), "Folio on vLLM", fontsize=24)
    page.insert_text((72, 140), "A rendered page for the CPU build of DeepSeek-OCR.", fontsize=11)
    try:
        return doc.tobytes()
    finally:
        doc.close()


def small_png() -> bytes:
    image = Image.new("RGB", (600, 400), "white")
    ImageDraw.Draw(image).text((40, 40), "A receipt small enough for no tiles", fill="black")
    buffer = BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
