"""Oversized request bodies refused before they are read (docs/RELIABILITY.md, hostile input).

Django reads a multipart body into memory or temporary files before any view can look at
its size, so a 600 MB upload used to be received whole (340 MB on disk) before its 413. Two
guards stop that at the door:

- ``RequestSizeLimitMiddleware`` answers 413 from ``Content-Length`` alone, before a byte of
  the body is read, when the body could not hold an acceptable document;
- ``CappedUploadHandler`` stops a file part the moment it passes ``FOLIO_MAX_UPLOAD_BYTES``
  (a body within the header's bound may still carry one file over the limit), so no more
  than the limit and one chunk is ever read or written.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpResponse, JsonResponse

from webapp.core.error_body import error_body

# Room for the other form fields and the multipart framing around one file at the limit.
REQUEST_OVERHEAD_BYTES = 1024 * 1024
# The browser upload page's script reads its own answer shape (webapp/ui/views/upload.py).
UI_UPLOAD_PATH = "/jobs/new/"


class UploadTooLarge(RequestDataTooBig):
    """A file part passed ``FOLIO_MAX_UPLOAD_BYTES``; the message says the limit."""


def upload_limit_message() -> str:
    return (
        f"the file is larger than this server accepts: at most "
        f"{settings.FOLIO_MAX_UPLOAD_BYTES:,} bytes"
    )


def max_request_bytes() -> int:
    """The largest body that can carry one document at the upload limit."""
    return settings.FOLIO_MAX_UPLOAD_BYTES + REQUEST_OVERHEAD_BYTES


# The OpenAI-compatible endpoint (webapp/reader/chat.py) answers errors in OpenAI's shape.
OPENAI_PATH_PREFIX = "/v1/chat/"


class RequestSizeLimitMiddleware:
    """413 on ``Content-Length`` alone: the body is never read, and the connection closes
    (a server must not read the rest of it to reuse the connection)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django treats a malformed length as no body at all
        if length > max_request_bytes():
            response = too_large_response(request, upload_limit_message())
            response["Connection"] = "close"
            return response
        if request.method == "POST" and request.path == UI_UPLOAD_PATH:
            # The CSRF check reads this form's body before the view could catch the cap, and
            # Django would turn it into a bare 400: parse it here, where the answer is ours.
            try:
                request.POST  # noqa: B018  (parses the body, files included)
            except UploadTooLarge as exc:
                return too_large_response(request, str(exc))
        return self.get_response(request)


def too_large_response(request, message: str) -> HttpResponse:
    if request.path == UI_UPLOAD_PATH:
        return JsonResponse({"ok": False, "error": _sentence(message)}, status=413)
    if request.path.startswith(OPENAI_PATH_PREFIX):
        # OpenAI's clients parse only their own error shape.
        error = {"message": message, "type": "invalid_request_error", "param": None}
        return JsonResponse({"error": error | {"code": "request_too_large"}}, status=413)
    if "text/html" in request.headers.get("Accept", ""):
        return HttpResponse(_sentence(message), status=413, content_type="text/plain")
    body = error_body(
        http_status=413, name="PayloadTooLargeError", detail_code=41302, message=message
    )
    return JsonResponse(body, status=413)


def _sentence(message: str) -> str:
    return f"{message[0].upper()}{message[1:]}."


class CappedUploadHandler(FileUploadHandler):
    """First of the upload handlers: counts each file part's bytes and stops the parse when
    one passes the limit, before the handlers after it store more."""

    def new_file(self, *args, **kwargs):
        self.received = 0
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.FOLIO_MAX_UPLOAD_BYTES:
            raise UploadTooLarge(upload_limit_message())
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handler (memory or temporary file) makes the file
