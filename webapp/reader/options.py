"""What a Reader request asks for, from its headers (and, for POST, its body), validated
before anything is fetched or stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from model.engines.auto import AUTO
from model.layout.chunks import DEFAULT_MAX_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS
from webapp.core.errors import bad_parameter

MAX_TIMEOUT_SECONDS = 180
# Bigger numbers are typos or probes, and would overflow a timedelta.
MAX_WHOLE_NUMBER = 10**12
# X-Respond-With values: the format of the answer, or the model to read with (``auto``: the
# local engine, and the best VLM engine served for the pages it reads badly).
TEXT_FORMATS = ("markdown", "content", "text")
MODELS = ("jina-ocr-v1", AUTO)
RESPOND_WITH = (*TEXT_FORMATS, *MODELS)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# Body keys (POST only) that stand in for headers, in Reader's camelCase.
BODY_OPTIONS = {
    "X-Respond-With": "respondWith",
    "X-Return-Format": "returnFormat",
    "X-Page": "page",
    "X-Timeout": "timeout",
    "X-No-Cache": "noCache",
    "X-Cache-Tolerance": "cacheTolerance",
    "X-Token-Budget": "tokenBudget",
    "X-Folio-Table-Format": "tableFormat",
    "X-Folio-Headers": "headers",
    "X-Folio-Normalize": "normalize",
    "X-Folio-Format": "format",
    "X-Folio-Chunk-Tokens": "chunkTokens",
    "X-Folio-Speaker-Notes": "speakerNotes",
    "X-Folio-Comments": "comments",
    "X-Folio-OCR-Language": "ocrLanguage",
}
# X-Folio-Format: what the answer holds beside (or instead of) the Markdown.
OUTPUTS = ("markdown", "blocks", "chunks", "pdf")


@dataclass(frozen=True)
class ReaderOptions:
    respond_with: str = "markdown"
    pages: str | None = None
    timeout: int = 0
    no_cache: bool = False
    cache_tolerance: timedelta | None = None
    token_budget: int | None = None
    respond_async: bool = False
    # An event stream whose client disconnects cancels the job's unread pages (opt-in).
    cancel_on_disconnect: bool = False
    response_format: str = "text"  # "text" | "json" | "sse"
    # Folio's own output options (validated by JobOptions.parse; None: the server default).
    table_format: str | None = None
    headers: str | None = None
    normalize: str | None = None
    # "markdown" (Reader's answer), "blocks", "chunks" (JSON documents) or "pdf".
    output: str = "markdown"
    chunk_tokens: int = DEFAULT_MAX_TOKENS
    # Documents read from their structure: a presentation's speaker notes, reviewers' comments.
    speaker_notes: bool = False
    comments: bool = False
    ocr_language: str | None = None

    @property
    def plain_text(self) -> bool:
        return self.respond_with == "text"

    @property
    def model(self) -> str | None:
        return self.respond_with if self.respond_with in MODELS else None


def reader_options(request, *, body: dict, url: str | None) -> ReaderOptions:
    def option(header: str) -> str | None:
        # A header wins over the body key, as in Reader (its headers are applied last).
        value = request.headers.get(header)
        if value is None and request.method == "POST":
            value = body.get(BODY_OPTIONS.get(header, ""))
        if isinstance(value, bool):  # JSON true/false
            value = "true" if value else "false"
        return None if value is None else str(value).strip()

    return ReaderOptions(
        respond_with=_respond_with(option("X-Respond-With") or option("X-Return-Format")),
        pages=option("X-Page") or _fragment_page(url),
        timeout=_timeout(option("X-Timeout")),
        no_cache=_flag("X-No-Cache", option("X-No-Cache")),
        cache_tolerance=_seconds("X-Cache-Tolerance", option("X-Cache-Tolerance")),
        token_budget=_positive("X-Token-Budget", option("X-Token-Budget")),
        respond_async="respond-async" in request.headers.get("Prefer", "").lower(),
        cancel_on_disconnect=_flag(
            "X-Cancel-On-Disconnect", request.headers.get("X-Cancel-On-Disconnect")
        ),
        response_format=_response_format(request.headers.get("Accept", "")),
        table_format=option("X-Folio-Table-Format") or None,
        headers=option("X-Folio-Headers") or None,
        normalize=option("X-Folio-Normalize") or None,
        output=_output(option("X-Folio-Format"), request.headers.get("Accept", "")),
        chunk_tokens=_chunk_tokens(option("X-Folio-Chunk-Tokens")),
        speaker_notes=_flag("X-Folio-Speaker-Notes", option("X-Folio-Speaker-Notes")),
        comments=_flag("X-Folio-Comments", option("X-Folio-Comments")),
        ocr_language=option("X-Folio-OCR-Language") or None,
    )


def _output(value: str | None, accept: str) -> str:
    value = (value or "markdown").lower()
    if value not in OUTPUTS:
        raise bad_parameter(
            f"X-Folio-Format {value!r} is not supported; use one of: {', '.join(OUTPUTS)}"
        )
    if value != "markdown" and "text/event-stream" in accept.lower():
        raise bad_parameter(
            f"X-Folio-Format {value} is answered whole, not as an event stream; "
            "ask with Accept: application/json (or leave Accept out)"
        )
    return value


def _chunk_tokens(value: str | None) -> int:
    tokens = _positive("X-Folio-Chunk-Tokens", value)
    if tokens is None:
        return DEFAULT_MAX_TOKENS
    if not MIN_MAX_TOKENS <= tokens <= MAX_MAX_TOKENS:
        raise bad_parameter(
            f"X-Folio-Chunk-Tokens must be between {MIN_MAX_TOKENS} and {MAX_MAX_TOKENS}"
        )
    return tokens


def without_fragment(url: str) -> str:
    return urlunsplit(_split(url)._replace(fragment=""))


def _split(url: str):
    """The URL's parts, or a 400 saying why it has none (e.g. an unclosed IPv6 bracket)."""
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise bad_parameter(f"{url[:200]!r} is not a URL: {exc}") from None


def _respond_with(value: str | None) -> str:
    value = (value or "markdown").lower()
    if value not in RESPOND_WITH:
        raise bad_parameter(
            f"X-Respond-With {value!r} is not supported; use one of: {', '.join(RESPOND_WITH)}"
        )
    return value


def _fragment_page(url: str | None) -> str | None:
    """Reader's ``#N`` (and ``#page=N``) at the end of the URL picks a page."""
    if not url:
        return None
    fragment = _split(url).fragment.strip()
    fragment = fragment.removeprefix("page=")
    return fragment or None


def _timeout(value: str | None) -> int:
    """Seconds to wait. Above the maximum it is clamped to it, as Reader clamps (its
    CrawlerOptions caps X-Timeout at 180); what is not a positive whole number is refused."""
    if value is None or value == "":
        return settings.FOLIO_READER_TIMEOUT
    if not (value.isascii() and value.isdigit()) or not value.strip("0"):
        raise bad_parameter(
            f"X-Timeout {value[:40]!r} must be a whole number of seconds, at least 1 "
            f"(larger than {MAX_TIMEOUT_SECONDS} is read as {MAX_TIMEOUT_SECONDS})"
        )
    # Compared as text first: a thousand-digit number is not worth converting.
    if len(value.lstrip("0")) > len(str(MAX_TIMEOUT_SECONDS)):
        return MAX_TIMEOUT_SECONDS
    return min(int(value), MAX_TIMEOUT_SECONDS)


def _flag(name: str, value: str | None) -> bool:
    if value is None:
        return False
    if value.lower() in _TRUE or value == "":
        return True
    if value.lower() in _FALSE:
        return False
    raise bad_parameter(f"{name} {value!r} must be true or false")


def _seconds(name: str, value: str | None) -> timedelta | None:
    if value is None or value == "":
        return None
    if not value.isdigit() or int(value) > MAX_WHOLE_NUMBER:
        raise bad_parameter(f"{name} {value!r} must be a whole number of seconds")
    return timedelta(seconds=int(value))


def _positive(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    if not value.isdigit() or not 1 <= int(value) <= MAX_WHOLE_NUMBER:
        raise bad_parameter(f"{name} {value!r} must be a positive whole number")
    return int(value)


def _response_format(accept: str) -> str:
    accept = accept.lower()
    if "text/event-stream" in accept:
        return "sse"
    if "application/json" in accept:
        return "json"
    return "text"
