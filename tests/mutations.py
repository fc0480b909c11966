"""Damaged and odd PDF pages made from real ones, for the robustness sweep
(``tests/test_robustness_sweep.py``): each mutation takes one page of a corpus document and
answers a one-page PDF, or pages built from scratch (``glyph_pages``) whose text layer holds
zero-width, private-use and format characters, symbols and scripts in a font with a code map
of its own.

Everything is generated here, deterministically; nothing is checked in.
"""

from __future__ import annotations

from collections.abc import Callable

import pymupdf

from tests.glyph_pdfs import GlyphPage, maxwell_pdf

# PDF's largest page side (ISO 32000-1, annex C: 14,400 units) and a page of a few points.
HUGE_SIDE = 14400.0
TINY_SIDE = 4.0


def _one_page(data: bytes, number: int) -> pymupdf.Document:
    """A new document holding page ``number`` (0-based) of ``data``."""
    source = pymupdf.open(stream=data, filetype="pdf")
    out = pymupdf.open()
    out.insert_pdf(source, from_page=number, to_page=number)
    source.close()
    return out


def _saved(doc: pymupdf.Document) -> bytes:
    try:
        return bytes(doc.tobytes(garbage=1))
    finally:
        doc.close()


def truncated_contents(data: bytes, number: int) -> bytes:
    """The page with each of its content streams cut at half its length: operators end
    mid-way, a text object is never closed, an inline image loses its tail."""
    doc = _one_page(data, number)
    for xref in doc[0].get_contents():
        raw = doc.xref_stream(xref) or b""
        doc.update_stream(xref, raw[: len(raw) // 2])
    return _saved(doc)


def truncated_file(data: bytes, number: int) -> bytes:
    """The one-page PDF cut at two thirds of its bytes (no cross-reference table, streams
    ended early), as an interrupted download leaves it; MuPDF repairs what it can."""
    whole = _saved(_one_page(data, number))
    return whole[: len(whole) * 2 // 3]


def odd_fonts(data: bytes, number: int) -> bytes:
    """The page with lines over it in Symbol and ZapfDingbats, whose built-in encodings map
    ASCII codes to Greek letters and dingbats."""
    doc = _one_page(data, number)
    page = doc[0]
    width, height = page.rect.width, page.rect.height
    for n, font in enumerate(("symb", "zadb", "symb")):
        y = height * (0.2 + 0.3 * n)
        page.insert_text((width * 0.1, y), "abgd pqrs 1234 [ ] { } < >", fontname=font, fontsize=11)
    return _saved(doc)


def _scaled_onto(data: bytes, number: int, side: float) -> bytes:
    source = pymupdf.open(stream=data, filetype="pdf")
    out = pymupdf.open()
    page = out.new_page(width=side, height=side)
    page.show_pdf_page(page.rect, source, number)
    source.close()
    return _saved(out)


def huge_page(data: bytes, number: int) -> bytes:
    """The page drawn on a page of PDF's largest size, 200 × 200 inches."""
    return _scaled_onto(data, number, HUGE_SIDE)


def tiny_page(data: bytes, number: int) -> bytes:
    """The page drawn on a page a few points wide."""
    return _scaled_onto(data, number, TINY_SIDE)


MUTATIONS: dict[str, Callable[[bytes, int], bytes]] = {
    "truncated content streams": truncated_contents,
    "truncated file": truncated_file,
    "odd fonts": odd_fonts,
    "huge page": huge_page,
    "tiny page": tiny_page,
}

# Zero-width and format characters, and private-use code points (a producer's own glyphs).
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
PRIVATE_USE = "\ue000\ue001\uf8ff\uf0b7"


def glyph_pages() -> dict[str, bytes]:
    """Pages built from scratch whose text layer holds the characters that broke steps."""
    pages: dict[str, bytes] = {}
    for label, mark in (("zero-width space", "\u200b"), ("private-use glyph", "\ue000")):
        pages[f"formulas with a {label} after a fraction"] = maxwell_pdf(after_fraction=mark)

    inside = GlyphPage()
    inside.text(72, 90, 14, "Zero\u200bwidth\u200c and\u200d joiners\u2060 in\ufeff words")
    inside.text(72, 120, 11, "Private\ue000use \uf0b7 bullets \uf8ff and soft\u00adhyphens")
    x = inside.text(72, 170, 12, "x\u200b = ")
    inside.fraction(x, 170, 12, "\ue001", "\u200b")
    inside.text(72, 220, 11, "| a\u200b | \ue000 |")
    inside.text(72, 240, 11, "| --- | --- |")
    inside.text(72, 260, 11, "| \u2060 | b\ufeff |")
    pages["zero-width and private-use characters in words, a fraction, a table"] = inside.pdf()

    only = GlyphPage()
    for n, ch in enumerate(ZERO_WIDTH + PRIVATE_USE):
        only.text(72, 90 + 20 * n, 12, ch * 5)
    pages["lines of nothing but zero-width and private-use characters"] = only.pdf()

    scripts = GlyphPage()
    scripts.text(72, 90, 12, "\u05e9\u05dc\u05d5\u05dd \u0633\u0644\u0627\u0645 abc")
    scripts.text(72, 120, 12, "\u0627\u0644\u200f\u0639\u0631\u0628\u064a\u0629 \u202e123\u202c")
    scripts.text(72, 150, 12, "\u4e2d\u6587 \u0928\u092e\u0938\u094d\u0924\u0947 \u2211\u222b")
    pages["mixed scripts and bidirectional controls in one font"] = scripts.pdf()

    for label, side in (("huge", HUGE_SIDE), ("tiny", TINY_SIDE)):
        page = GlyphPage(width=side, height=side)
        page.text(side * 0.05, side * 0.5, max(1.0, side / 40), "Edge\u200b of the page")
        pages[f"a {label} page built with zero-width text"] = page.pdf()
    return pages
