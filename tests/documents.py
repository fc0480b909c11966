"""Deterministic test documents, made with PyMuPDF and Pillow only, returned as bytes.

Every test suite uses these (the engine tests, the API tests, the worker tests), so the
expected strings live here as constants next to the generator that writes them.

Scans are made the way a scanner would make them: the text is laid out on a PDF page with
PyMuPDF's built-in fonts, rasterized, given a little noise and wrapped again (a PDF with no
text layer) or saved as an image. Text is large and short so that OCR is fast and reliable.
"""

from __future__ import annotations

import io
import random
import zipfile
from functools import cache

import pymupdf
from PIL import Image

# --- the born-digital PDF -------------------------------------------------------------------

BORN_DIGITAL_TITLE = "Quarterly Harbour Report"
BORN_DIGITAL_HEADINGS = (
    BORN_DIGITAL_TITLE,
    "Cargo volumes by terminal",
    "Outlook for the winter season",
)
BORN_DIGITAL_PAGE_MARKERS = ("Page marker alpha", "Page marker beta", "Page marker gamma")
BORN_DIGITAL_TABLE_HEADER = ("Terminal", "Ships", "Tonnes")
BORN_DIGITAL_TABLE_ROWS = (
    ("North Quay", "41", "18250"),
    ("Eastern Basin", "27", "9730"),
    ("Timber Wharf", "13", "4410"),
    ("Oil Jetty", "8", "22690"),
)
BORN_DIGITAL_FOOTNOTE = "Tonnage figures exclude transshipment cargo handled offshore."
BORN_DIGITAL_BODY = (
    "The harbour handled more ships this quarter than in any quarter since records began.",
    "Dredging of the eastern channel finished in March and the new cranes are in service.",
    "Winter storms usually close the outer berths for about nine days each year.",
)

_CSS = """
body { font-family: sans-serif; font-size: 11pt; }
h1 { font-size: 22pt; }
h2 { font-size: 16pt; }
table { border-collapse: collapse; }
td, th { border: 1px solid black; padding: 4px; }
.fn { font-size: 8pt; }
"""


def _table_html() -> str:
    head = "".join(f"<th>{cell}</th>" for cell in BORN_DIGITAL_TABLE_HEADER)
    rows = "".join(
        "<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>"
        for row in BORN_DIGITAL_TABLE_ROWS
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _born_digital_pages() -> list[str]:
    title, cargo, outlook = BORN_DIGITAL_HEADINGS
    alpha, beta, gamma = BORN_DIGITAL_PAGE_MARKERS
    first, second, third = BORN_DIGITAL_BODY
    return [
        f"<h1>{title}</h1><p>{first}</p><p>{second}</p><p>{alpha}.</p>",
        f"<h2>{cargo}</h2><p>Ships and tonnes per terminal<sup>1</sup>.</p>{_table_html()}"
        f"<p>{beta}.</p>",
        f"<h2>{outlook}</h2><p>{third}</p><p>{gamma}.</p>",
    ]


@cache
def born_digital_pdf() -> bytes:
    """Three A4 pages with a real text layer: headings, paragraphs, a ruled table and a
    footnote at the foot of page 2; each page carries its own marker."""
    doc = pymupdf.open()
    for number, html in enumerate(_born_digital_pages(), start=1):
        page = doc.new_page(width=595, height=842)
        page.insert_htmlbox(pymupdf.Rect(72, 72, 523, 700), html, css=_CSS)
        if number == 2:
            page.draw_line((72, 760), (220, 760), width=0.5)
            page.insert_text((72, 775), "1", fontname="helv", fontsize=6)
            page.insert_text((78, 778), BORN_DIGITAL_FOOTNOTE, fontname="helv", fontsize=8)
        page.insert_text((290, 815), str(number), fontname="helv", fontsize=9)
    return _save(doc)


def titled_pdf(title: str) -> bytes:
    """One page whose metadata names ``title``, and whose first heading says something else."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_htmlbox(
        pymupdf.Rect(72, 72, 523, 700),
        "<h1>Section One</h1><p>The first paragraph of a document with a title.</p>",
        css=_CSS,
    )
    doc.set_metadata({"title": title})
    return _save(doc)


def one_page_pdf() -> bytes:
    """Page 1 of the born-digital report alone."""
    doc = pymupdf.open(stream=born_digital_pdf(), filetype="pdf")
    doc.select([0])
    return _save(doc)


# --- scans and page images ----------------------------------------------------------

SCAN_LINES = (
    "Invoice number 4721",
    "Delivered to Marlow Street",
    "Total amount due 380 euro",
    "Payment within thirty days",
)
SCAN_WORDS = ("Invoice", "4721", "Marlow", "Street", "amount", "380", "Payment", "thirty")
# The second frame of the multi-page TIFF says something else, to prove which page was read.
TIFF_PAGE_2_LINES = ("Second sheet of the bundle", "Signed by Clara Hoffmann")
TIFF_PAGE_2_WORDS = ("Second", "sheet", "bundle", "Clara", "Hoffmann")

# A4 at 120 dpi is about 990 x 1400 px: big enough to read, small enough for fast OCR.
_SCAN_DPI = 120


def _text_page(lines: tuple[str, ...]) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    y = 120.0
    for line in lines:
        page.insert_text((60, y), line, fontname="helv", fontsize=26)
        y += 44  # 1.7 x the font size: one paragraph of lines, as a typed letter sets them
    return doc


def _rasterize(lines: tuple[str, ...], *, seed: int) -> Image.Image:
    doc = _text_page(lines)
    pix = doc[0].get_pixmap(dpi=_SCAN_DPI, colorspace=pymupdf.csGRAY)
    image = Image.frombytes("L", (pix.width, pix.height), pix.samples)
    return _add_noise(image, seed=seed).convert("RGB")


def _add_noise(image: Image.Image, *, seed: int) -> Image.Image:
    """Sprinkle dark and light specks, as a flatbed scanner would; seeded, so deterministic."""
    rng = random.Random(seed)
    pixels = image.load()
    width, height = image.size
    for _ in range(width * height // 400):
        x, y = rng.randrange(width), rng.randrange(height)
        pixels[x, y] = rng.choice((40, 90, 200))
    return image


def _image_bytes(image: Image.Image, fmt: str, **params: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **params)
    return buffer.getvalue()


def _wrap_in_pdf(image: Image.Image) -> bytes:
    """A PDF page that is one picture and no text layer, sized like A4."""
    doc = pymupdf.open()
    width = 595.0
    height = width * image.height / image.width
    page = doc.new_page(width=width, height=height)
    page.insert_image(page.rect, stream=_image_bytes(image, "PNG"))
    return _save(doc)


@cache
def scan_image() -> Image.Image:
    return _rasterize(SCAN_LINES, seed=7)


@cache
def scanned_pdf() -> bytes:
    return _wrap_in_pdf(scan_image())


@cache
def rotated_scan_pdf() -> bytes:
    """The scan turned 90° clockwise (a page fed sideways), with no text layer."""
    return _wrap_in_pdf(scan_image().transpose(Image.Transpose.ROTATE_270))


@cache
def rotated_scan_png() -> bytes:
    return _image_bytes(scan_image().transpose(Image.Transpose.ROTATE_270), "PNG")


@cache
def png_page() -> bytes:
    return _image_bytes(scan_image(), "PNG")


@cache
def jpeg_page() -> bytes:
    return _image_bytes(scan_image(), "JPEG", quality=85)


@cache
def webp_page() -> bytes:
    return _image_bytes(scan_image(), "WEBP", quality=85)


@cache
def exif_rotated_jpeg() -> bytes:
    """Pixels stored sideways with EXIF orientation 6 ("rotate 90° CW to display"), as
    phone cameras write them; a reader that ignores EXIF sees the text on its side."""
    stored = scan_image().transpose(Image.Transpose.ROTATE_90)
    exif = Image.Exif()
    exif[0x0112] = 6
    return _image_bytes(stored, "JPEG", quality=85, exif=exif)


def multipage_tiff(n: int = 2) -> bytes:
    """``n`` frames: the scan first, then the second sheet, then copies of the scan."""
    frames = [scan_image()]
    if n >= 2:
        frames.append(_rasterize(TIFF_PAGE_2_LINES, seed=11))
    frames.extend(scan_image() for _ in range(n - 2))
    buffer = io.BytesIO()
    frames[0].save(
        buffer, format="TIFF", save_all=True, append_images=frames[1:], compression="tiff_lzw"
    )
    return buffer.getvalue()


# --- documents that must be refused ----------------------------------------------------------

ENCRYPTED_PDF_PASSWORD = "folio-secret"


@cache
def encrypted_pdf() -> bytes:
    doc = _text_page(SCAN_LINES)
    buffer = io.BytesIO()
    doc.save(
        buffer,
        encryption=pymupdf.PDF_ENCRYPT_AES_256,
        user_pw=ENCRYPTED_PDF_PASSWORD,
        owner_pw=ENCRYPTED_PDF_PASSWORD + "-owner",
    )
    return buffer.getvalue()


@cache
def corrupt_pdf() -> bytes:
    """A PDF header followed by garbage: no page tree can be recovered from it."""
    rng = random.Random(3)
    return b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(2048))


@cache
def truncated_png() -> bytes:
    data = png_page()
    return data[: len(data) // 3]


def non_document() -> bytes:
    """A program, not a document (plain text is a document now: it is passed through)."""
    return b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4


@cache
def zip_archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "not a document")
    return buffer.getvalue()


def empty_pdf_bytes() -> bytes:
    return b""


def huge_png(width: int = 12_000, height: int = 10_000) -> bytes:
    """A tiny file that claims a huge pixel count (a decompression bomb in miniature)."""
    return _image_bytes(Image.new("1", (width, height), 1), "PNG", optimize=True)


def _save(doc: pymupdf.Document) -> bytes:
    # garbage/deflate keep the bytes stable and small from run to run
    return doc.tobytes(garbage=3, deflate=True, no_new_id=True)
