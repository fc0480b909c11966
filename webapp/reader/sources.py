"""Where a Reader request's document comes from: an uploaded file part, a base64 string, or
a URL fetched on the client's behalf."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from django.core.files.uploadedfile import UploadedFile

from webapp.core.errors import ApiError, bad_parameter, unprocessable
from webapp.core.fetch import FetchBlocked, FetchError, fetch_document
from webapp.jobs.services import upload_size_check
from webapp.reader.options import without_fragment


@dataclass(frozen=True)
class Source:
    data: bytes
    filename: str
    # What `data.url` and `URL Source:` name: the URL fetched; for a document sent in the
    # body, the `url` sent beside it (as Reader does), else the file part's name, else
    # `blob:<sha256>` (Reader's name for a body without one).
    url: str


def blocked(message: str) -> ApiError:
    return ApiError(message, http_status=451, name="SecurityCompromiseError", detail_code=45102)


def document_source(*, body: dict, url: str | None) -> Source:
    """The document a request carries (`file` or `pdf`, read first: a `url` beside it is only
    its source, never fetched), or the one at ``url``."""
    source_url = without_fragment(url) if url else ""
    for field in ("file", "pdf"):
        value = body.get(field)
        if isinstance(value, UploadedFile):
            upload_size_check(size=value.size or 0)
            name = value.name or field
            return Source(data=value.read(), filename=name, url=source_url or name)
        if isinstance(value, str) and value.strip():
            data = _base64(field, value)
            blob = f"blob:{hashlib.sha256(data).hexdigest()}"
            return Source(data=data, filename=_name_of(source_url) or field, url=source_url or blob)
    if url:
        return _fetched(url)
    raise bad_parameter(
        "nothing to read: send a `url`, or the document as `file` or `pdf` (a file part or a "
        "base64 string), or put the URL in the path (GET /https://example.org/a.pdf)"
    )


def _name_of(url: str) -> str:
    """The last path segment of a URL, as a file name for the stored document."""
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1]) if url else ""


def _base64(field: str, value: str) -> bytes:
    # A data URL ("data:application/pdf;base64,....") is the same thing with a prefix.
    if value.startswith("data:") and "," in value:
        value = value.split(",", 1)[1]
    try:
        data = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise bad_parameter(
            f"`{field}` is not valid base64; send the file's bytes base64-encoded"
        ) from None
    upload_size_check(size=len(data))
    return data


def _fetched(url: str) -> Source:
    url = without_fragment(url)
    try:
        fetched = fetch_document(url)
    except FetchBlocked as exc:
        raise blocked(str(exc)) from exc
    except FetchError as exc:
        raise unprocessable(f"could not fetch the document: {exc}") from exc
    data = fetched.data
    if fetched.content_type.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
        # A web page: its main content is read (model.formats.webpage), from UTF-8 bytes.
        data = _utf8_page(data, fetched.content_type)
    return Source(data=data, filename=fetched.filename, url=fetched.url)


def _utf8_page(data: bytes, content_type: str) -> bytes:
    """The page's bytes as UTF-8: decoded with the charset the server declared, else UTF-8,
    else Windows-1252 (what browsers fall back to for Western pages)."""
    declared = re.search(r"charset=[\"']?([\w.:-]+)", content_type, re.I)
    for charset in ([declared.group(1)] if declared else []) + ["utf-8", "cp1252"]:
        try:
            return data.decode(charset).encode("utf-8")
        except (LookupError, UnicodeDecodeError):
            continue
    return data
