"""Which of the formats in ``model.formats.types`` the bytes prove.

Containers are looked into, not trusted by name: a zip is OOXML when its content types say so,
OpenDocument or EPUB when its ``mimetype`` entry says so; an OLE2 file is Word, Excel or
PowerPoint by the streams it holds. Text formats are told apart by their content.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile

import olefile

from model.formats import types

ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_TEXT_WINDOW = 64 * 1024
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff")
_MARKUP_START = re.compile(rb"^(?:\s|<\?xml[^>]*>|<!--.*?-->)*<(!doctype\s+)?(\w+)", re.I | re.S)
_HTML_TAGS = re.compile(rb"<(html|head|body|article|main|div|p|h[1-6]|table|ul|ol|section)\b", re.I)
_MARKDOWN_SIGNS = re.compile(
    r"^(#{1,6} \S|\s*[-*+] \S|\s*\d+[.)] \S|```|~~~|>\s|\|.*\|\s*$|\[[^\]]+\]\([^)]+\))", re.M
)


class EncryptedOffice(Exception):
    """An Office file saved with a password (an OLE2 container holding an encrypted package)."""


class DamagedContainer(Exception):
    """A zip whose directory cannot be read: an Office, OpenDocument or e-book file cut short
    or broken, not a type we refuse."""


def sniff_format(data: bytes) -> types.Format | None:
    if data.startswith(ZIP_MAGIC):
        return _zip_format(data)
    if data.startswith(OLE_MAGIC):
        return _ole_format(data)
    if data[60:68] == b"BOOKMOBI":
        return types.MOBI
    if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return types.RTF
    text = decode_text(data[:_TEXT_WINDOW], partial=len(data) > _TEXT_WINDOW)
    if text is None:
        return None
    return _text_format(text, data[:_TEXT_WINDOW])


def decode_text(data: bytes, *, partial: bool = False) -> str | None:
    """The text of ``data`` if it is text (UTF-8, or UTF-16 with its byte-order mark), else
    None. ``partial``: the bytes were cut from a longer file, maybe inside a character."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if not partial or exc.start < len(data) - 4:
            return None
        text = data[: exc.start].decode("utf-8-sig")
    controls = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return text if controls <= len(text) // 100 else None


def _text_format(text: str, head: bytes) -> types.Format | None:
    markup = _MARKUP_START.match(head.lstrip(b"\xef\xbb\xbf"))
    if markup:
        root = markup.group(2).lower()
        if root == b"svg":
            return types.SVG
        if root == b"fictionbook":
            return types.FB2
        if root in (b"html", b"head", b"body") or _HTML_TAGS.search(head):
            return types.HTML
        return None  # some other XML: not a document format we read
    if _looks_like_csv(text):
        return types.CSV
    return types.MARKDOWN if _MARKDOWN_SIGNS.search(text) else types.TEXT


def _looks_like_csv(text: str) -> bool:
    """Several lines with the same number (at least two) of one delimiter's fields."""
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    if len(lines) < 2:
        return False
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t")
    except csv.Error:
        return False
    widths = {len(row) for row in csv.reader(io.StringIO("\n".join(lines)), dialect)}
    return len(widths) == 1 and widths.pop() >= 2


def _zip_format(data: bytes) -> types.Format | None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DamagedContainer(str(exc)) from exc
    with archive:
        names = set(archive.namelist())
        if "mimetype" in names:
            declared = _small_entry(archive, "mimetype").strip()
            return {
                types.ODT.mime_type: types.ODT,
                types.ODS.mime_type: types.ODS,
                types.ODP.mime_type: types.ODP,
                types.EPUB.mime_type: types.EPUB,
            }.get(declared)
        if "[Content_Types].xml" in names:
            content_types = _small_entry(archive, "[Content_Types].xml", limit=1 << 20)
            return _ooxml_format(content_types, names)
        files = [name for name in names if not name.endswith("/")]
        if files and all(name.lower().endswith(_IMAGE_SUFFIXES) for name in files):
            return types.CBZ
    return None


def _ooxml_format(content_types: str, names: set[str]) -> types.Format | None:
    if "macroEnabled" in content_types or any(name.endswith("vbaProject.bin") for name in names):
        if "word/document.xml" in names:
            return types.DOCM
        if "xl/workbook.xml" in names:
            return types.XLSM
        if "ppt/presentation.xml" in names:
            return types.PPTM
    if "word/document.xml" in names or "wordprocessingml.document.main" in content_types:
        return types.DOCX
    if "xl/workbook.xml" in names or "spreadsheetml.sheet.main" in content_types:
        return types.XLSX
    if "ppt/presentation.xml" in names or "presentationml.presentation.main" in content_types:
        return types.PPTX
    if "fixedrepresentation" in content_types.lower() or "xps" in content_types.lower():
        return types.XPS
    return None


def _small_entry(archive: zipfile.ZipFile, name: str, limit: int = 200) -> str:
    """An entry's first ``limit`` bytes as text: never more, whatever the entry claims."""
    try:
        with archive.open(name) as entry:
            return entry.read(limit).decode("utf-8", "replace")
    except (zipfile.BadZipFile, KeyError, OSError, RuntimeError, NotImplementedError):
        return ""


def _ole_format(data: bytes) -> types.Format | None:
    try:
        ole = olefile.OleFileIO(io.BytesIO(data))
    except (OSError, ValueError, IndexError):
        return None
    try:
        streams = {"/".join(entry) for entry in ole.listdir()}
    finally:
        ole.close()
    if "EncryptedPackage" in streams:
        raise EncryptedOffice()
    if "WordDocument" in streams:
        return types.DOC
    if streams & {"Workbook", "Book"}:
        return types.XLS
    if "PowerPoint Document" in streams:
        return types.PPT
    return None
