from __future__ import annotations

from rest_framework.renderers import BaseRenderer, JSONRenderer


class MarkdownRenderer(BaseRenderer):
    """``text/markdown`` for string payloads; errors (dicts) still go out as JSON, so a client
    asking for Markdown gets an error it can parse rather than a Python repr."""

    media_type = "text/markdown"
    format = "md"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, str):
            return data.encode(self.charset)
        return _as_json(data, renderer_context)


class PdfRenderer(BaseRenderer):
    """``application/pdf`` for a result asked for as a PDF (the view answers the bytes
    itself); errors go out as JSON."""

    media_type = "application/pdf"
    format = "pdf"
    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if isinstance(data, bytes):
            return data
        return _as_json(data, renderer_context)


class AnyMediaJSONRenderer(BaseRenderer):
    """Accepts any ``Accept`` (text/plain, text/event-stream, …) so that content negotiation
    never refuses a request before the view runs; the view answers in the asked format, and
    errors raised before that go out as JSON."""

    media_type = "*/*"
    format = "any"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return _as_json(data, renderer_context)


def _as_json(data, renderer_context) -> bytes:
    response = (renderer_context or {}).get("response")
    if response is not None:
        response["Content-Type"] = "application/json"
    return JSONRenderer().render(data, renderer_context=renderer_context)
