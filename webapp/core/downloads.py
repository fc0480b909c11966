"""A file to save, not to show: the one way every view answers with a download, or says that
the file is still being made."""

from __future__ import annotations

from typing import TypeVar

from django.core.files import File
from django.http import FileResponse, HttpResponse
from django.utils.http import content_disposition_header

Response = TypeVar("Response", bound=HttpResponse)


def attachment_response(body: bytes | str, *, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    # As an attachment there is always a header; the name is quoted and, where it is not
    # ASCII, given again in RFC 5987's form, so browsers save it under the same name.
    response["Content-Disposition"] = content_disposition_header(True, filename) or "attachment"
    return response


def stored_attachment_response(file: File, *, content_type: str, filename: str) -> FileResponse:
    """A stored file as a download, streamed from storage (never read whole into memory)."""
    return FileResponse(file, as_attachment=True, filename=filename, content_type=content_type)


def still_preparing(response: Response, *, retry_after: int) -> Response:
    """``response`` (a 202) as the answer for a file a worker is still making: ask again after
    ``retry_after`` seconds, and let no cache keep this answer in the file's place."""
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response
