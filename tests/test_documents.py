"""The document layer: sniffing and checking uploads, file names, page selections, rendering."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from model.documents import (
    MAX_IMAGE_PIXELS,
    CorruptDocument,
    DocumentError,
    DocumentInfo,
    DocumentTooLarge,
    EmptyDocument,
    EncryptedDocument,
    NoPages,
    UnsupportedDocument,
    inspect_document,
    safe_filename,
)
from model.pages import PageSelectionError, parse_page_selection
from model.rendering import MIN_LONG_SIDE, open_page_image
from tests import documents

# --- inspect_document ----------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (documents.born_digital_pdf, DocumentInfo("application/pdf", 3, "pdf")),
        (documents.scanned_pdf, DocumentInfo("application/pdf", 1, "pdf")),
        (documents.png_page, DocumentInfo("image/png", 1, "image")),
        (documents.jpeg_page, DocumentInfo("image/jpeg", 1, "image")),
        (documents.webp_page, DocumentInfo("image/webp", 1, "image")),
        (documents.multipage_tiff, DocumentInfo("image/tiff", 2, "image")),
    ],
)
def test_it_recognizes_each_accepted_type_from_its_content(make, expected):
    assert inspect_document(make()) == expected


def test_it_counts_every_frame_of_a_multipage_tiff_as_a_page():
    assert inspect_document(documents.multipage_tiff(5)).page_count == 5


def test_it_ignores_junk_before_a_pdf_header_as_pdf_readers_do():
    assert inspect_document(b"\r\n" + documents.born_digital_pdf()).page_count == 3


@pytest.mark.parametrize(
    ("data", "error", "code"),
    [
        (b"", EmptyDocument, "empty"),
        (documents.non_document(), UnsupportedDocument, "unsupported"),
        (documents.zip_archive(), UnsupportedDocument, "unsupported"),
        (documents.corrupt_pdf(), CorruptDocument, "corrupt"),
        (documents.truncated_png(), CorruptDocument, "corrupt"),
        (documents.encrypted_pdf(), EncryptedDocument, "encrypted"),
        (documents.huge_png(), DocumentTooLarge, "too_large"),
    ],
)
def test_it_refuses_what_it_cannot_read_with_a_stable_code(data, error, code):
    with pytest.raises(error) as caught:
        inspect_document(data)
    assert caught.value.code == code
    assert isinstance(caught.value, ValueError)
    assert str(caught.value)


def test_it_rejects_an_encrypted_pdf_saying_it_takes_no_passwords():
    with pytest.raises(EncryptedDocument, match="password"):
        inspect_document(documents.encrypted_pdf())


def test_it_names_the_accepted_types_when_refusing_one():
    with pytest.raises(UnsupportedDocument, match="PDF, PNG, JPEG, TIFF"):
        inspect_document(documents.non_document())


def test_it_trusts_the_bytes_not_a_claimed_type():
    # A PNG signature followed by a PDF is neither a PNG nor accepted as one.
    with pytest.raises(DocumentError):
        inspect_document(b"\x89PNG\r\n\x1a\n" + b"not really" * 10)


def test_it_reports_a_pdf_without_readable_pages():
    import pymupdf

    doc = pymupdf.open()
    doc.new_page()
    data = doc.tobytes()
    # Drop the page from the page tree by hand: /Count 0 and no kids.
    broken = data.replace(b"/Count 1", b"/Count 0").replace(b"/Kids[4 0 R]", b"/Kids[]")
    with pytest.raises((NoPages, CorruptDocument)):
        inspect_document(broken)


def test_its_pixel_limit_is_about_a_hundred_megapixels():
    assert 50_000_000 <= MAX_IMAGE_PIXELS <= 200_000_000


# --- safe_filename ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\ada\\scan 01.png", "scan 01.png"),
        ("a\tb\nc.pdf", "a b c.pdf"),
        ("bell\x07\x00.pdf", "bell.pdf"),
        ("   lots    of   space  .pdf ", "lots of space .pdf"),
        ("..", "document"),
        (".", "document"),
        ("dir/", "document"),
        ("", "document"),
        (None, "document"),
    ],
)
def test_it_makes_a_safe_file_name(name, expected):
    assert safe_filename(name) == expected


def test_it_shortens_a_long_file_name_keeping_its_extension():
    name = safe_filename("x" * 500 + ".pdf")
    assert len(name) == 200
    assert name.endswith(".pdf")


def test_it_uses_the_given_default_for_a_name_with_nothing_left():
    assert safe_filename("/", default="upload") == "upload"


@given(st.text())
def test_a_safe_file_name_is_never_empty_dotted_or_a_path(name):
    result = safe_filename(name)
    assert result and result not in (".", "..")
    assert "/" not in result and "\\" not in result
    assert len(result) <= 200
    assert all(ch.isprintable() for ch in result)


# --- parse_page_selection ----------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "count", "expected"),
    [
        (None, 3, [1, 2, 3]),
        ("", 2, [1, 2]),
        ("3", 4, [3]),
        ("1-3,7", 9, [1, 2, 3, 7]),
        (" 2 - 4 ", 5, [2, 3, 4]),
        ("5-", 7, [5, 6, 7]),
        ("3,1,3,2-3", 4, [1, 2, 3]),
        # A range that runs past the end is clamped to the last page (the README's example).
        ("1-3", 1, [1]),
        ("2-9", 4, [2, 3, 4]),
        ("1-999999", 3, [1, 2, 3]),
    ],
)
def test_it_reads_page_selections(spec, count, expected):
    assert parse_page_selection(spec, count) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("9", "page 9 is past the end: the document has 4 pages"),
        ("5-9", "page 5 is past the end"),
        ("1,7", "page 7 is past the end"),
        ("0", "start at 1"),
        ("-2", "start at 1"),
        ("3-1", "backwards"),
        ("two", 'like "3", "1-3,7"'),
        ("1,,2", "cannot read"),
        ("1-2-3", "cannot read"),
    ],
)
def test_it_explains_a_page_selection_it_cannot_satisfy(spec, message):
    with pytest.raises(PageSelectionError, match=message):
        parse_page_selection(spec, 4)


def test_it_caps_the_length_of_a_page_selection():
    with pytest.raises(PageSelectionError, match="too long"):
        parse_page_selection(",".join(["1"] * 1000), 4)


@given(
    st.integers(min_value=1, max_value=60),
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 5)), min_size=1, max_size=8),
)
def test_a_valid_selection_gives_sorted_unique_pages_in_range(count, parts):
    spec = ",".join(f"{start}-{start + width}" if width else str(start) for start, width in parts)
    if max(start for start, _ in parts) > count:
        with pytest.raises(PageSelectionError, match="past the end"):
            parse_page_selection(spec, count)
    else:
        # Ranges that run past the end are clamped to the last page.
        wanted = {p for start, width in parts for p in range(start, min(start + width, count) + 1)}
        assert parse_page_selection(spec, count) == sorted(wanted)


# --- rendering ----------------------------------------------------------


def test_it_renders_an_a4_page_at_about_144_dpi():
    image = open_page_image(documents.born_digital_pdf(), "application/pdf", 1)
    assert image.mode == "RGB"
    assert max(image.size) == 1600  # 144 dpi would be 1684: capped at the long side
    assert image.size[0] == pytest.approx(1600 * 595 / 842, abs=2)


def test_it_never_renders_a_small_page_tiny_nor_a_huge_page_enormous():
    import pymupdf

    for width, height in ((200, 300), (2400, 3400)):
        doc = pymupdf.open()
        doc.new_page(width=width, height=height)
        image = open_page_image(doc.tobytes(), "application/pdf", 1, long_side=1600)
        assert MIN_LONG_SIDE <= max(image.size) <= 1600


def test_it_takes_the_requested_frame_of_a_tiff():
    data = documents.multipage_tiff(2)
    first = open_page_image(data, "image/tiff", 1)
    second = open_page_image(data, "image/tiff", 2)
    assert first.tobytes() != second.tobytes()


def test_it_applies_exif_rotation_to_a_photo():
    stored = Image.open(io.BytesIO(documents.exif_rotated_jpeg()))
    assert stored.width > stored.height  # stored sideways
    image = open_page_image(documents.exif_rotated_jpeg(), "image/jpeg", 1)
    assert image.height > image.width  # shown upright, as a portrait page


def test_it_scales_a_large_image_down_to_the_long_side():
    image = open_page_image(documents.png_page(), "image/png", 1, long_side=700)
    assert max(image.size) == 700


def test_it_refuses_a_page_past_the_end_when_rendering():
    with pytest.raises(PageSelectionError, match="does not exist"):
        open_page_image(documents.png_page(), "image/png", 2)
