"""A hostile corpus, generated: documents built to break a parser, exhaust memory or smuggle
markup, each returned as bytes. ``tests/test_hostile_input.py`` sends every one of them
through the API.

They are made on the fly (fast: the 10,000-page PDF shares one page object, the bombs are
headers over a little zlib) so that no large or dangerous file is ever checked in.
"""

from __future__ import annotations

import struct
import zlib
from functools import cache

import pymupdf

from tests import documents

INJECTED_MARKUP = (
    '<script>alert("folio")</script>',
    '<img src=x onerror="alert(1)">',
    "[click me](javascript:alert(1))",
)


def zero_bytes() -> bytes:
    return b""


def truncated_pdf() -> bytes:
    """A real PDF cut at a third: MuPDF repairs what it can (the page tree survives), so the
    pages that lost their content fail one by one, each saying why."""
    whole = documents.born_digital_pdf()
    return whole[: len(whole) // 3]


corrupt_pdf = documents.corrupt_pdf
encrypted_pdf = documents.encrypted_pdf


def header_only_pdf() -> bytes:
    """The first 200 bytes of a real PDF: a header and nothing a reader could repair."""
    return documents.born_digital_pdf()[:200]


@cache
def many_pages_pdf(pages: int = 10_000) -> bytes:
    """``pages`` pages in about a megabyte, written directly (PyMuPDF's ``new_page`` takes
    seconds per thousand): every page a small object sharing one content stream."""
    content = b"BT /F1 12 Tf 20 40 Td (again) Tj ET"
    first_page = 5
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Count %d /Kids [%s] >>"
        % (pages, b" ".join(b"%d 0 R" % (first_page + n) for n in range(pages))),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    objects += [page] * pages
    return _pdf_file(objects)


def _pdf_file(objects: list[bytes]) -> bytes:
    """A PDF file of ``objects`` (numbered from 1, the catalog first) with its cross-reference
    table, written byte by byte so that no PDF library tidies the hostile structure away."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_of(width: int, height: int, idat: bytes) -> bytes:
    """A PNG with the given size (8-bit greyscale) and compressed pixel data as given."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def huge_page_png(side: int = 20_000) -> bytes:
    """A ``side`` × ``side`` page (400 megapixels at 20,000): a header and one blank row, the
    way a scanner misconfigured to 2,400 dpi writes it before it runs out of disk."""
    return png_of(side, side, zlib.compress(b"\x00" * (side + 1)))


@cache
def decompression_bomb_png(side: int = 12_000) -> bytes:
    """About 150 KB that inflate to ``side`` × ``side`` bytes (144 MB at 12,000, and 144
    megapixels): blank greyscale rows (a zero filter byte and zero pixels), which zlib packs
    about a thousand to one."""
    total = side * (side + 1)
    block = b"\x00" * (1 << 20)
    packer = zlib.compressobj(9)
    parts = [packer.compress(block) for _ in range(total // len(block))]
    parts.append(packer.compress(b"\x00" * (total % len(block))))
    parts.append(packer.flush())
    return png_of(side, side, b"".join(parts))


def polyglot_png_html() -> bytes:
    """A valid PNG that is also an HTML page: a browser sniffing it would run the script."""
    return documents.png_page() + b"<html><body><script>alert('polyglot')</script></body></html>"


def html_named_pdf() -> tuple[str, bytes]:
    """HTML that calls itself a PDF."""
    return "report.pdf", b"<!doctype html><html><body><script>alert(1)</script></body></html>"


def png_named_exe() -> tuple[str, bytes]:
    """A real page image whose name lies about its type."""
    return "installer.exe", documents.png_page()


HOSTILE_FILENAMES = (
    "../../../../etc/passwd.png",
    "..\\..\\windows\\system32\\evil.png",
    "/absolute/path.png",
    "nul\x00byte.png",
    "line\r\nbreak\x1b[31mred\x07.png",
    "<script>alert(1)</script>.png",
    "a" * 900 + ".png",
)
# Names the multipart parser refuses before any view runs: a clear 400 either way.
UNREADABLE_FILENAMES = ("a" * 5000 + ".png", "")


def markup_pdf() -> bytes:
    """A born-digital page whose text is markup and a javascript: link."""
    doc = pymupdf.open()
    page = doc.new_page()
    for line, text in enumerate(("Injected text follows.", *INJECTED_MARKUP)):
        page.insert_text((72, 90 + 30 * line), text, fontsize=12)
    return doc.tobytes()


def fan_out_pdf(depth: int = 8, fan_out: int = 10) -> bytes:
    """One page whose drawing draws itself ``fan_out`` times, ``depth`` levels deep: a chain
    of form XObjects, each painting the next ``fan_out`` times, the last a tiny rectangle.
    About 2.5 KB at the defaults, and 10^8 rectangles for a renderer (or a text extractor)
    to walk: the file is small, the work is not, and no size or page limit sees it."""
    first_form = 4
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Count 1 /Kids [3 0 R] >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /XObject << /F %d 0 R >> >> >>" % (first_form + depth, first_form),
    ]
    for level in range(depth):
        if level == depth - 1:
            content = b"0 0 1 1 re f"
            resources = b"<< >>"
        else:
            content = b" ".join([b"/F Do"] * fan_out)
            resources = b"<< /XObject << /F %d 0 R >> >>" % (first_form + level + 1)
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources %s "
            b"/Length %d >>\nstream\n%s\nendstream" % (resources, len(content), content)
        )
    page_content = b"q /F Do Q"
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(page_content), page_content))
    return _pdf_file(objects)


@cache
def many_frames_tiff(frames: int = 2000, side: int = 1000) -> bytes:
    """A TIFF of ``frames`` blank ``side`` × ``side`` pages in about 200 KB, written directly:
    every frame's directory points at one shared Deflate strip. Its headers are cheap to read,
    but decoding every frame is 2 GB of pixels (the reviewer's 13 MB, 2,000-frame scan took
    the web process 65 s to accept)."""
    strip = zlib.compress(b"\xff" * side * side, 9)
    strip += b"\x00" * (len(strip) % 2)  # directories start on a word boundary
    first_ifd = 8 + len(strip)
    entries = 8
    ifd_size = 2 + entries * 12 + 4
    out = bytearray(b"II*\x00" + struct.pack("<I", first_ifd) + strip)
    for index in range(frames):
        following = first_ifd + (index + 1) * ifd_size if index + 1 < frames else 0
        tags = (
            (256, 4, side),  # ImageWidth
            (257, 4, side),  # ImageLength
            (258, 3, 8),  # BitsPerSample
            (259, 3, 8),  # Compression: Deflate
            (262, 3, 1),  # PhotometricInterpretation: black is zero
            (273, 4, 8),  # StripOffsets: the shared strip
            (278, 4, side),  # RowsPerStrip
            (279, 4, len(strip)),  # StripByteCounts
        )
        out += struct.pack("<H", entries)
        for tag, kind, value in tags:
            out += struct.pack("<HHII", tag, kind, 1, value)
        out += struct.pack("<I", following)
    return bytes(out)
