"""The body of every API error, Jina Reader's shape, as plain data: no DRF here, so that the
lightest modules (the upload limits' middleware) can answer in it too; ``errors`` builds the
API's exceptions and handlers on it."""

from __future__ import annotations


def error_body(*, http_status: int, name: str, detail_code: int, message: str) -> dict:
    """``{"data": null, "code": 400, "name": "ParamValidationError", "status": 40001,
    "message": "...", "readableMessage": "..."}``; ``status`` is the HTTP code followed by a
    detail digit pair."""
    return {
        "data": None,
        "code": http_status,
        "name": name,
        "status": detail_code,
        "message": message,
        "readableMessage": f"{name}: {message}",
    }
