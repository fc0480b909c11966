"""Documents that point outside themselves, or hide a DTD, or count wrong, made from docling's
test documents by changing one thing (``tests/test_converter_guards.py``,
``tests/test_no_network.py``). ``url`` is where the outside resource is: a listener of the test
on 127.0.0.1 that must hear nothing."""

from __future__ import annotations

import io
import itertools
import zipfile
from collections.abc import Iterable

from tests import office
from tests.office import corpus, part, rezip

_ODT = "odf/sources/text_document_01.odt"
_ODS = "odf/sources/odf_table_with_title_01.ods"
_ODP = "odf/sources/odf_presentation_01.odp"
_DOCX = "docx/sources/lorem_ipsum.docx"
_PPTX = "pptx/sources/powerpoint_sample.pptx"


def _odf_with(relative: str, close: bytes, extra: str, *, styles: str = "") -> bytes:
    data = corpus(relative)
    content = part(data, "content.xml").replace(close, extra.encode() + close, 1)
    replace = {"content.xml": content}
    if styles:
        replace["styles.xml"] = part(data, "styles.xml").replace(
            b"</office:styles>", styles.encode() + b"</office:styles>", 1
        )
    return rezip(data, replace=replace)


def odt_image_single_quotes(url: str) -> bytes:
    return _odf_with(
        _ODT,
        b"</office:text>",
        "<text:p><draw:frame svg:width='3cm' svg:height='3cm'><draw:image "
        f"xlink:href='{url}/odt-single-quotes.png' xlink:type='simple'/></draw:frame></text:p>",
    )


def odt_image_other_prefixes(url: str) -> bytes:
    """The same link, its namespaces bound to prefixes of the author's choosing."""
    return _odf_with(
        _ODT,
        b"</office:text>",
        '<text:p><dr:frame xmlns:dr="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
        'xmlns:xl="http://www.w3.org/1999/xlink" '
        'xmlns:sv="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
        f'sv:width="3cm" sv:height="3cm"><dr:image xl:href="{url}/odt-prefixes.png" '
        'xl:type="simple"/></dr:frame></text:p>',
    )


def odt_background_image(url: str) -> bytes:
    """A paragraph style's background image (``style:background-image``)."""
    return _odf_with(
        _ODT,
        b"</office:text>",
        '<text:p text:style-name="FolioBackground">Background</text:p>',
        styles=(
            '<style:style style:name="FolioBackground" style:family="paragraph">'
            "<style:paragraph-properties><style:background-image "
            f'xlink:href="{url}/odt-background.png" xlink:type="simple" '
            'xlink:actuate="onLoad"/></style:paragraph-properties></style:style>'
        ),
    )


def ods_image(url: str) -> bytes:
    return _odf_with(
        _ODS,
        b"</table:table>",
        "<table:shapes><draw:frame svg:width='3cm' svg:height='3cm' svg:x='1cm' svg:y='1cm'>"
        f"<draw:image xlink:href='{url}/ods.png' xlink:type='simple'/></draw:frame>"
        "</table:shapes>",
    )


def odp_image(url: str) -> bytes:
    return _odf_with(
        _ODP,
        b"</draw:page>",
        "<draw:frame svg:width='3cm' svg:height='3cm' svg:x='1cm' svg:y='1cm'>"
        f"<draw:image xlink:href='{url}/odp.png' xlink:type='simple'/></draw:frame>",
    )


_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_IMAGE_REL = f"{_REL}/image"


def _linked_blip(rid: str) -> str:
    """A DrawingML picture whose image is linked (``r:link``), for Word's body."""
    return (
        '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
        'drawingml/2006/wordprocessingDrawing"><wp:extent cx="914400" cy="914400"/>'
        '<wp:docPr id="901" name="Linked"/><a:graphic xmlns:a="http://schemas.openxmlformats.org/'
        'drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/'
        '2006/picture"><pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/'
        'picture"><pic:nvPicPr><pic:cNvPr id="901" name="Linked"/><pic:cNvPicPr/></pic:nvPicPr>'
        f'<pic:blipFill><a:blip xmlns:r="{_REL}" r:link="{rid}"/><a:stretch><a:fillRect/>'
        '</a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" '
        'cy="914400"/></a:xfrm><a:prstGeom prst="rect"/></pic:spPr></pic:pic></a:graphicData>'
        "</a:graphic></wp:inline></w:drawing></w:r></w:p>"
    )


def _add_relationship(rels: bytes, rid: str, kind: str, target: str) -> bytes:
    return rels.replace(
        b"</Relationships>",
        f'<Relationship Id="{rid}" Type="{kind}" Target="{target}" '
        'TargetMode="External"/></Relationships>'.encode(),
        1,
    )


def docx_linked_image(url: str) -> bytes:
    """A linked picture, and an INCLUDEPICTURE field that names the same kind of link."""
    data = corpus(_DOCX)
    body = part(data, "word/document.xml").replace(
        b"<w:sectPr",
        (
            _linked_blip("rIdFolio1")
            + '<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText '
            f'xml:space="preserve"> INCLUDEPICTURE "{url}/docx-field.png" \\d </w:instrText>'
            '</w:r><w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
        ).encode()
        + b"<w:sectPr",
        1,
    )
    rels = _add_relationship(
        part(data, "word/_rels/document.xml.rels"), "rIdFolio1", _IMAGE_REL, f"{url}/docx.png"
    )
    return rezip(data, replace={"word/document.xml": body, "word/_rels/document.xml.rels": rels})


def pptx_linked_image(url: str) -> bytes:
    data = corpus(_PPTX)
    slide = part(data, "ppt/slides/slide1.xml").replace(
        b"</p:spTree>",
        b'<p:pic><p:nvPicPr><p:cNvPr id="901" name="Linked"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
        + f'<p:blipFill><a:blip xmlns:r="{_REL}" r:link="rIdFolio1"/>'.encode()
        + b'<a:stretch><a:fillRect/></a:stretch></p:blipFill><p:spPr><a:xfrm><a:off x="0" '
        b'y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"/></p:spPr>'
        b"</p:pic></p:spTree>",
        1,
    )
    rels = _add_relationship(
        part(data, "ppt/slides/_rels/slide1.xml.rels"), "rIdFolio1", _IMAGE_REL, f"{url}/pptx.png"
    )
    return rezip(
        data, replace={"ppt/slides/slide1.xml": slide, "ppt/slides/_rels/slide1.xml.rels": rels}
    )


def rtf_linked_image(url: str) -> bytes:
    """An INCLUDEPICTURE field, the way Word writes a linked picture in RTF."""
    return (
        b"{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}\\f0\\fs24 "
        b"Before the picture.\\par "
        b'{\\field{\\*\\fldinst INCLUDEPICTURE "' + f"{url}/rtf.png".encode() + b'" \\\\d}'
        b"{\\fldrslt }}\\par After the picture.\\par}"
    )


def html_linked_resources(url: str) -> bytes:
    return (
        "<!doctype html><html><head><title>Links</title>"
        f'<link rel="stylesheet" href="{url}/html.css"></head><body>'
        f'<h1>Harbour</h1><p>The quay reopened.</p><img src="{url}/html.png" alt="quay">'
        f"<p style=\"background-image: url('{url}/html-background.png')\">Text</p>"
        f'<iframe src="{url}/html-frame"></iframe></body></html>'
    ).encode()


def svg_linked_image(url: str) -> bytes:
    return (
        '<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" width="200" height="200">'
        '<text x="10" y="20">Harbour</text>'
        f'<image xlink:href="{url}/svg.png" href="{url}/svg2.png" x="0" y="30" width="100" '
        'height="100"/></svg>'
    ).encode()


def epub_linked_resources(url: str) -> bytes:
    """A chapter with an outside image and style sheet."""
    chapter = (
        '<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head>'
        f'<link rel="stylesheet" href="{url}/epub.css"/></head><body><h1>Chapter 1</h1>'
        f'<p>The lighthouse keeper counted 1 ships.</p><img src="{url}/epub.png" alt="x"/>'
        "</body></html>"
    ).encode()
    return rezip(office.epub(1), replace={"c1.xhtml": chapter})


# What each variant is (the name the tests show), its maker, and its format's name.
LINKING = {
    "ODT, single quotes": (odt_image_single_quotes, "ODT"),
    "ODT, other prefixes": (odt_image_other_prefixes, "ODT"),
    "ODT, a style's background image": (odt_background_image, "ODT"),
    "ODS": (ods_image, "ODS"),
    "ODP": (odp_image, "ODP"),
    "DOCX, a linked picture and an INCLUDEPICTURE field": (docx_linked_image, "DOCX"),
    "PPTX": (pptx_linked_image, "PPTX"),
    "RTF": (rtf_linked_image, "RTF"),
    "HTML": (html_linked_resources, "HTML"),
    "EPUB": (epub_linked_resources, "EPUB"),
    "SVG": (svg_linked_image, "SVG"),
}


# --- DTDs hidden from a byte-level look ------------------------------------------------

XXE = (
    '<?xml version="1.0" encoding="{encoding}"?>'
    '<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>'
)


def _with_prolog(relative: str, name: str, prolog: str, *, codec: str, bom: bytes) -> bytes:
    data = corpus(relative)
    body = part(data, name).split(b"?>", 1)[1].decode("utf-8")
    return rezip(data, replace={name: bom + (prolog + body).encode(codec)})


def xxe_bom_docx() -> bytes:
    return _with_prolog(
        _DOCX,
        "word/document.xml",
        XXE.format(encoding="UTF-8"),
        codec="utf-8",
        bom=b"\xef\xbb\xbf",
    )


def xxe_utf16_docx() -> bytes:
    return _with_prolog(
        _DOCX,
        "word/document.xml",
        XXE.format(encoding="UTF-16"),
        codec="utf-16-le",
        bom=b"\xff\xfe",
    )


def lol_bom_odt() -> bytes:
    return _with_prolog(
        _ODT,
        "content.xml",
        '<?xml version="1.0" encoding="UTF-8"?>'
        + office.BILLION_LAUGHS.decode().split("?>", 1)[1].strip(),
        codec="utf-8",
        bom=b"\xef\xbb\xbf",
    )


def xxe_bom_epub() -> bytes:
    chapter = (
        '<?xml version="1.0"?><!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>'
        '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&xxe;</p></body></html>'
    )
    return rezip(office.epub(1), replace={"c1.xhtml": b"\xef\xbb\xbf" + chapter.encode()})


def epub3_book() -> bytes:
    """An EPUB 3 book as publishers write one: every chapter starts ``<!DOCTYPE html>``."""
    book = office.epub(2)
    replace = {}
    for name in ("c1.xhtml", "c2.xhtml"):
        chapter = part(book, name).replace(b"?><html", b"?><!DOCTYPE html><html", 1)
        replace[name] = chapter
    return rezip(book, replace=replace)


# --- what the converters would walk ----------------------------------------------------


def xlsx_rows_without_references(rows: int = 1_000_000) -> bytes:
    """A workbook whose one sheet has ``rows`` filled rows whose rows and cells carry no
    ``r`` (openpyxl places them one after the other, as Excel's own files allow)."""
    # Values that differ row to row, as real ones do: they deflate like data (about 6 bytes a
    # row), not like a bomb.
    return xlsx_with_sheet_data(
        b"<row><c><v>%d</v></c></row>" % (number * 7919 % 1_000_003) for number in range(rows)
    )


def xlsx_with_sheet_data(rows: Iterable[bytes]) -> bytes:
    """xlsx_01 with its first sheet's data replaced by ``rows`` (each a ``<row>`` element's
    bytes), streamed into the zip as they come: a sheet of any size costs its deflating."""
    data = corpus("xlsx/sources/xlsx_01.xlsx")
    sheet = part(data, "xl/worksheets/sheet1.xml")
    head, _, rest = sheet.partition(b"<sheetData>")
    _, _, tail = rest.partition(b"</sheetData>")
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            if info.filename != "xl/worksheets/sheet1.xml":
                target.writestr(info, source.read(info.filename))
                continue
            with target.open(info.filename, "w") as entry:
                entry.write(head + b"<sheetData>")
                rows = iter(rows)
                while batch := b"".join(itertools.islice(rows, 10_000)):
                    entry.write(batch)
                entry.write(b"</sheetData>" + tail)
    return out.getvalue()


def html_nested(depth: int = 100_000, *, furniture: bool = False) -> bytes:
    nav = "<nav>menu</nav>" if furniture else ""
    return (
        f"<html><body>{nav}" + "<div>" * depth + "deep text at the bottom" + "</div>" * depth
    ).encode() + b"</body></html>"


def pptx_slides_under_another_prefix(slides: int = 10_000) -> bytes:
    """The presentation's slide list written with a ``q:`` prefix for PresentationML."""
    data = corpus(_PPTX)
    ids = "".join(f'<q:sldId id="{256 + n}" r:id="rId2"/>' for n in range(slides))
    presentation = (
        '<?xml version="1.0" encoding="UTF-8"?><q:presentation xmlns:q="http://schemas.'
        'openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.'
        f'org/officeDocument/2006/relationships"><q:sldIdLst>{ids}</q:sldIdLst>'
        '<q:sldSz cx="9144000" cy="6858000"/><q:notesSz cx="6858000" cy="9144000"/>'
        "</q:presentation>"
    ).encode()
    return rezip(data, replace={"ppt/presentation.xml": presentation})


def odt_section_source(url: str) -> bytes:
    """A section whose text comes from another file (refused: it is not an image)."""
    return _odf_with(
        _ODT,
        b"</office:text>",
        "<text:section text:name='S1'><text:section-source "
        f"xlink:href='{url}/section.odt' xlink:type='simple'/><text:p>kept</text:p></text:section>",
    )
