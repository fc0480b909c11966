"""Every API error in one shape, the one Jina Reader uses:

``{"data": null, "code": 400, "name": "ParamValidationError", "status": 40001,
"message": "...", "readableMessage": "..."}``

``status`` is the HTTP code followed by a detail digit pair, so clients can branch on it.
The body itself is ``webapp.core.error_body``'s.
"""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from webapp.core.error_body import NO_KEY_MESSAGE, error_body
from webapp.core.upload_limits import UploadTooLarge

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with a Reader-style name and five-digit status."""

    def __init__(self, message: str, *, http_status: int, name: str, detail_code: int):
        super().__init__(message)
        self.status_code = http_status
        self.name = name
        self.detail_code = detail_code


def bad_parameter(message: str) -> ApiError:
    return ApiError(message, http_status=400, name="ParamValidationError", detail_code=40001)


def unprocessable(message: str) -> ApiError:
    return ApiError(message, http_status=422, name="AssertionFailureError", detail_code=42206)


def too_large(message: str) -> ApiError:
    return ApiError(message, http_status=413, name="PayloadTooLargeError", detail_code=41302)


def conflict(message: str) -> ApiError:
    return ApiError(message, http_status=409, name="ConflictError", detail_code=40901)


_DEFAULTS: dict[type[exceptions.APIException], tuple[str, int]] = {
    exceptions.NotAuthenticated: ("AuthenticationRequiredError", 40103),
    exceptions.AuthenticationFailed: ("AuthenticationFailedError", 40103),
    exceptions.PermissionDenied: ("PermissionDeniedError", 40301),
    exceptions.NotFound: ("NotFoundError", 40401),
    exceptions.MethodNotAllowed: ("MethodNotAllowedError", 40501),
    exceptions.NotAcceptable: ("NotAcceptableError", 40601),
    exceptions.UnsupportedMediaType: ("UnsupportedMediaTypeError", 41501),
    exceptions.Throttled: ("RateLimitTriggeredError", 42903),
    exceptions.ParseError: ("ParamValidationError", 40001),
    exceptions.ValidationError: ("ParamValidationError", 40001),
}


def _flatten(detail) -> str:
    """DRF's nested validation details as one sentence a person can read."""
    if isinstance(detail, dict):
        parts = []
        for field, value in detail.items():
            text = _flatten(value)
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        return "; ".join(parts)
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


# Seconds a client should wait after the database was unreachable: a restart or a failover.
DATABASE_RETRY_AFTER_SECONDS = 5


def _database_unavailable() -> Response:
    """The database went away mid-request: whatever the request wrote was in a transaction
    that did not commit, so the client may simply send it again."""
    set_rollback()
    logger.exception("database unreachable; answered 503")
    body = error_body(
        http_status=503,
        name="ServiceUnavailableError",
        detail_code=50302,
        message="the database is unreachable for a moment; nothing was saved, "
        f"retry in {DATABASE_RETRY_AFTER_SECONDS} seconds",
    )
    return Response(body, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)})


def with_key_hint(exc):
    """DRF's "Authentication credentials were not provided." made actionable."""
    if isinstance(exc, exceptions.NotAuthenticated):
        return exceptions.NotAuthenticated(NO_KEY_MESSAGE)
    return exc


def api_exception_handler(exc, context):
    exc = with_key_hint(exc)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    if isinstance(exc, OperationalError | InterfaceError):
        return _database_unavailable()
    if isinstance(exc, UploadTooLarge):
        exc = too_large(str(exc))
    elif isinstance(exc, RequestDataTooBig):
        # Django's own refusal of a body over DATA_UPLOAD_MAX_MEMORY_SIZE would be an HTML 400.
        exc = too_large(
            "the request body is too large to read in memory; send big documents as a "
            "multipart file part, not inside a JSON or form body"
        )
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        name, detail_code = exc.name, exc.detail_code
    else:
        name, detail_code = next(
            (value for cls, value in _DEFAULTS.items() if isinstance(exc, cls)),
            ("ServerError", response.status_code * 100 + 1),
        )
    if response.status_code == status.HTTP_401_UNAUTHORIZED and detail_code // 100 != 401:
        detail_code = 40103
    message = _flatten(exc.detail) if hasattr(exc, "detail") else str(exc)
    response.data = error_body(
        http_status=response.status_code, name=name, detail_code=detail_code, message=message
    )
    return response


def _wants_html(request) -> bool:
    return "text/html" in request.headers.get("Accept", "")


def page_not_found(request, exception=None):
    """Django's 404 for paths no route matches (and ids that are not ids): in the API's
    error shape, unless a browser asked for a page."""
    if _wants_html(request):
        from django.views.defaults import page_not_found as html_page_not_found

        return html_page_not_found(request, exception)
    body = error_body(
        http_status=404,
        name="NotFoundError",
        detail_code=40401,
        message=f"No such path: {request.path}",
    )
    return JsonResponse(body, status=404)


def server_error(request):
    if _wants_html(request):
        from django.views.defaults import server_error as html_server_error

        return html_server_error(request)
    body = error_body(
        http_status=500,
        name="ServerError",
        detail_code=50001,
        message="an internal error; it was logged, and retrying later may work",
    )
    return JsonResponse(body, status=500)
