"""Born-digital PDF pages whose text layer holds exactly the characters a test asks for:
zero-width and private-use glyphs, symbols, a font that maps its codes oddly.

PyMuPDF's ``insert_text`` writes through a standard encoding that has no zero-width space,
no ∇ and no ∂ (they come out as "·"). Here a page's text is drawn in Helvetica with a
``ToUnicode`` map of our own: each character a test needs gets a one-byte code, and the map
tells every extractor which character the code stands for, as a producer's subset font
does. A character gets a width (half an em unless given), so that MuPDF keeps it: a glyph of
no width for a zero-width space is dropped on extraction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pymupdf

PAGE_HEIGHT = 842.0
_HELVETICA = pymupdf.Font("helv")


@dataclass
class GlyphPage:
    """Text runs and rules to draw on one page; ``pdf()`` writes it."""

    width: float = 595.0
    height: float = PAGE_HEIGHT
    runs: list[tuple[float, float, float, str]] = field(default_factory=list)
    rules: list[tuple[float, float, float]] = field(default_factory=list)
    # a width in thousandths of an em for characters outside ASCII (half an em by default)
    widths: dict[str, int] = field(default_factory=dict)

    def text(self, x: float, y: float, size: float, text: str) -> float:
        """Draw ``text`` with its baseline at ``y`` (from the top); the x where it ends."""
        self.runs.append((x, y, size, text))
        return x + self.advance(text, size)

    def rule(self, x0: float, y: float, x1: float) -> None:
        self.rules.append((x0, y, x1))

    def fraction(self, x: float, y: float, size: float, top: str, bottom: str) -> float:
        """A fraction set with a rule on the row whose baseline is ``y``; the x after it."""
        width = max(self.advance(top, size), self.advance(bottom, size)) + 2
        self.text(x + (width - self.advance(top, size)) / 2, y - 7, size, top)
        self.text(x + (width - self.advance(bottom, size)) / 2, y + 9, size, bottom)
        self.rule(x, y - 4, x + width)
        return x + width

    def advance(self, text: str, size: float) -> float:
        return sum(self._width(ch) for ch in text) * size / 1000

    def _width(self, ch: str) -> int:
        if ch.isascii() and ch.isprintable():
            return round(_HELVETICA.glyph_advance(ord(ch)) * 1000)
        return self.widths.get(ch, 500)

    def pdf(self) -> bytes:
        special = sorted({ch for *_, text in self.runs for ch in text if not _ascii(ch)})
        if len(special) > 31:
            raise ValueError("at most 31 characters outside printable ASCII on one page")
        codes = {ch: n + 1 for n, ch in enumerate(special)}
        doc = pymupdf.open()
        page = doc.new_page(width=self.width, height=self.height)
        font = _font(doc, codes, self._width)
        resources = int(doc.xref_get_key(page.xref, "Resources")[1].split()[0])
        doc.update_object(resources, f"<< /Font << /FT {font} 0 R >> >>")
        ops = []
        for x, y, size, text in self.runs:
            encoded = "".join(f"{codes.get(ch, ord(ch)):02X}" for ch in text)
            ops.append(f"BT /FT {size} Tf {x:.2f} {self.height - y:.2f} Td <{encoded}> Tj ET")
        for x0, y, x1 in self.rules:
            ops.append(f"0.6 w {x0:.2f} {self.height - y:.2f} m {x1:.2f} {self.height - y:.2f} l S")
        contents = doc.get_new_xref()
        doc.update_object(contents, "<<>>")
        doc.update_stream(contents, "\n".join(ops).encode())
        doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
        try:
            return bytes(doc.tobytes(garbage=1))
        finally:
            doc.close()


def _ascii(ch: str) -> bool:
    return ch.isascii() and ch.isprintable()


def _font(doc: pymupdf.Document, codes: dict[str, int], width) -> int:
    pairs = [f"<{code:02X}> <{ord(ch):04X}>" for ch, code in codes.items()]
    pairs += [f"<{c:02X}> <{c:04X}>" for c in range(32, 127)]
    cmap = (
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Folio-Test def /CMapType 2 def\n"
        "1 begincodespacerange <00> <FF> endcodespacerange\n"
        f"{len(pairs)} beginbfchar\n" + "\n".join(pairs) + "\nendbfchar\nendcmap\n"
        "CMapName currentdict /CMap defineresource pop end end\n"
    )
    cmap_xref = doc.get_new_xref()
    doc.update_object(cmap_xref, "<<>>")
    doc.update_stream(cmap_xref, cmap.encode())
    by_code = {code: ch for ch, code in codes.items()}
    widths = [width(by_code.get(c, chr(c))) for c in range(1, 127)]
    font = doc.get_new_xref()
    doc.update_object(
        font,
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /FirstChar 1 /LastChar 126 "
        f"/Widths [{' '.join(map(str, widths))}] /ToUnicode {cmap_xref} 0 R >>",
    )
    return font


def maxwell_pdf(*, after_fraction: str = "\u200b") -> bytes:
    """Maxwell's equations in differential form, each fraction set with a rule; after
    ∂B/∂t, ``after_fraction`` set small and raised, as a zero-width space was on the page
    whose formula rebuilding raised ``IndexError`` (issue 27)."""
    page = GlyphPage()
    page.text(72, 90, 14, "Maxwell's equations")
    page.text(72, 120, 11, "In differential form, with charges and currents:")
    x = page.text(72, 170, 12, "\u2207 \u22c5 E = ")
    page.fraction(x, 170, 12, "\u03c1", "\u03b50")
    page.text(72, 220, 12, "\u2207 \u22c5 B = 0")
    x = page.text(72, 270, 12, "\u2207 \u00d7 E = \u2212") + 2
    x = page.fraction(x, 270, 12, "\u2202B", "\u2202t")
    if after_fraction:
        page.text(x + 5, 267.5, 8, after_fraction)
    x = page.text(72, 320, 12, "\u2207 \u00d7 B = \u03bc0J + \u03bc0\u03b50") + 2
    page.fraction(x, 320, 12, "\u2202E", "\u2202t")
    page.text(72, 380, 11, "These four equations say how charges and currents make fields.")
    return page.pdf()
