"""Where a Reader request's document comes from: an uploaded file part, a base64 string, or
a URL fetched on the client's behalf."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from django.core.files.uploadedfile import UploadedFile

from webapp.core.errors import ApiError, bad_parameter, unprocessable
from webapp.core.fetch import FetchBlocked, FetchError, fetch_document
from webapp.jobs.services import upload_size_check
from webapp.reader.options import without_fragment


@dataclass(frozen=True)
class Source:
    data: bytes
    filename: str
    url: str  # where it came from; empty for uploads


def blocked(message: str) -> ApiError:
    return ApiError(message, http_status=451, name="SecurityCompromiseError", detail_code=45102)


def document_source(*, body: dict, url: str | None) -> Source:
    for field in ("file", "pdf"):
        value = body.get(field)
        if isinstance(value, UploadedFile):
            upload_size_check(size=value.size)
            return Source(data=value.read(), filename=value.name or field, url="")
        if isinstance(value, str) and value.strip():
            return Source(data=_base64(field, value), filename=f"{field}", url="")
    if url:
        return _fetched(url)
    raise bad_parameter(
        "nothing to read: send a `url`, or the document as `file` or `pdf` (a file part or a "
        "base64 string), or put the URL in the path (GET /https://example.org/a.pdf)"
    )


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
    if fetched.content_type.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
        raise unprocessable(
            f"{fetched.url} is an HTML page; Folio reads PDFs and images (PDF, PNG, JPEG, "
            "TIFF, WebP), not web pages"
        )
    return Source(data=fetched.data, filename=fetched.filename, url=fetched.url)
