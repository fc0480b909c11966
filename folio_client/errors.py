"""Typed exceptions. A refusal by the server carries its Reader-shaped error: ``http_status``
(the HTTP code), ``status`` (Reader's five digits, e.g. 42903), ``name`` and ``message``."""

from __future__ import annotations

import json
from typing import Any

import httpx


class FolioError(Exception):
    """Anything this package raises."""


class ConfigError(FolioError):
    """No server URL, or a configuration file that cannot be read."""


class ConnectionFailed(FolioError):
    """The server could not be reached (or the connection broke) even after the retries."""


class WaitTimeout(FolioError):
    """A job did not finish within the time a caller was willing to wait."""

    def __init__(self, message: str, *, job: Any) -> None:
        super().__init__(message)
        self.job = job


class ApiError(FolioError):
    """The server answered with an error."""

    def __init__(
        self,
        message: str,
        *,
        http_status: int,
        status: int | None = None,
        name: str = "",
        retry_after: float | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        # Reader's five-digit status; servers that answer in another shape get HTTP x 100.
        self.status = status if status is not None else http_status * 100
        self.name = name
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        prefix = f"{self.name} ({self.status})" if self.name else f"HTTP {self.http_status}"
        return f"{prefix}: {self.message}"


class BadRequestError(ApiError):
    """400: a parameter the server refused (40001)."""


class AuthenticationError(ApiError):
    """401: no key, or a key the server does not know (40103)."""


class PermissionDeniedError(ApiError):
    """403."""


class NotFoundError(ApiError):
    """404: no such job for this key (another user's job is a 404 too)."""


class ConflictError(ApiError):
    """409: e.g. the result of a job that is still running, or cancelling a finished job."""


class GoneError(ApiError):
    """410: the job's results expired (retention)."""


class PayloadTooLargeError(ApiError):
    """413: a file over the upload limit, or a job larger than the whole daily quota."""


class UnprocessableError(ApiError):
    """422: a document that cannot be read (corrupt, encrypted, not a document)."""


class RateLimitedError(ApiError):
    """429 that the client stopped waiting out (``retry_after`` says how long it asked for)."""


class ServerError(ApiError):
    """5xx."""


class UnavailableError(ServerError):
    """503: no capacity, or not ready."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    422: UnprocessableError,
    429: RateLimitedError,
    503: UnavailableError,
}


def error_from_response(response: httpx.Response, *, retry_after: float | None = None) -> ApiError:
    """The typed error for an error answer, in Reader's shape, OpenAI's shape or neither."""
    code = response.status_code
    body: Any = None
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    status, name, message = None, "", ""
    if isinstance(body, dict) and "message" in body:
        status = body.get("status") if isinstance(body.get("status"), int) else None
        name = str(body.get("name") or "")
        message = str(body.get("message") or "")
    elif isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = str(body["error"].get("message") or "")
        name = str(body["error"].get("type") or "")
    if not message:
        text = response.text.strip() if body is None else json.dumps(body)
        message = text[:500] or response.reason_phrase or f"HTTP {code}"
    cls = _BY_STATUS.get(code) or (ServerError if code >= 500 else ApiError)
    return cls(
        message,
        http_status=code,
        status=status,
        name=name,
        retry_after=retry_after,
        body=body,
    )
