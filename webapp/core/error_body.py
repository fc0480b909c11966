"""The body of every API error, Jina Reader's shape, as plain data, and the words every
authentication error uses: no DRF here, so that the lightest modules (the upload limits'
middleware, the authentication class DRF loads while it starts) can use them; ``errors``
builds the API's exceptions and handlers on them."""

from __future__ import annotations

# How a key is sent, said in every authentication error: the `Bearer` prefix is the part
# people leave out, and the client reads the key from FOLIO_API_KEY.
KEY_HINT = (
    "send it as `Authorization: Bearer <key>` (the folio CLI and SDK take it from "
    "FOLIO_API_KEY or --api-key); make a key on this server's /account/keys/ page"
)
NO_KEY_MESSAGE = f"No API key in the request: {KEY_HINT}."


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
