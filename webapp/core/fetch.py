"""Fetching a document from a URL on a user's behalf: bounded in size, time and redirects,
and only from addresses that the SSRF policy allows."""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

import httpx
from django.conf import settings

from webapp.core.ssrf import AddressPolicy, BlockedAddress, guarded_client

REDIRECTS = {301, 302, 303, 307, 308}


class FetchError(ValueError):
    """The URL could not be fetched; the message says why, in words a user can act on."""


class FetchBlocked(FetchError):
    """The URL (or a redirect) points at an address this server refuses to reach."""


@dataclass(frozen=True)
class FetchedDocument:
    data: bytes
    url: str  # after redirects
    content_type: str
    filename: str


def address_policy() -> AddressPolicy:
    return AddressPolicy.from_setting(settings.FOLIO_SSRF_ALLOW)


def fetch_document(url: str) -> FetchedDocument:
    _check_url(url)
    deadline = time.monotonic() + settings.FOLIO_FETCH_TIMEOUT
    # One deadline for the whole fetch, redirects included, enforced on every socket wait:
    # the timeout alone applies per read, and a server trickling bytes would never trip it.
    with guarded_client(
        policy=address_policy(), timeout=settings.FOLIO_FETCH_TIMEOUT, deadline=deadline
    ) as client:
        for _ in range(settings.FOLIO_FETCH_MAX_REDIRECTS + 1):
            try:
                with client.stream(
                    "GET",
                    url,
                    headers={"Accept": "application/pdf,image/*,text/html;q=0.9,*/*;q=0.8"},
                ) as response:
                    if response.status_code in REDIRECTS and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        _check_url(url)
                        continue
                    if response.status_code >= 400:
                        raise FetchError(f"{url} answered HTTP {response.status_code}")
                    return FetchedDocument(
                        data=_read_bounded(response, deadline),
                        url=url,
                        content_type=response.headers.get("content-type", ""),
                        filename=_filename(url),
                    )
            except BlockedAddress as exc:
                raise FetchBlocked(str(exc)) from exc
            except httpx.TimeoutException as exc:
                raise FetchError(
                    f"{url} was not fetched within {settings.FOLIO_FETCH_TIMEOUT} s, the limit "
                    "for the whole download"
                ) from exc
            except httpx.HTTPError as exc:
                raise FetchError(f"{url} could not be fetched: {exc}") from exc
    raise FetchError(f"more than {settings.FOLIO_FETCH_MAX_REDIRECTS} redirects; gave up")


# Longer URLs are refused before any parsing: no real document needs one, and HTTP servers
# commonly refuse request lines past 8 KB anyway.
MAX_URL_LENGTH = 8192


def _check_url(url: str) -> None:
    """Refuse, with a reason, a URL that is not an http(s) URL the HTTP client can open: an
    address spelled in octal or with leading zeros (which resolvers read differently), a
    host in full-width digits, broken brackets, or an absurd length."""
    if len(url) > MAX_URL_LENGTH:
        raise FetchError(f"the URL is {len(url):,} characters; at most {MAX_URL_LENGTH:,} are read")
    try:
        parts = urlsplit(url)
        httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise FetchError(f"{url[:200]!r} is not a URL this server can fetch: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"only http and https URLs can be fetched, not {parts.scheme or 'this'!r}")
    if not parts.hostname:
        raise FetchError(f"{url!r} has no host name")


def _read_bounded(response: httpx.Response, deadline: float) -> bytes:
    limit = settings.FOLIO_MAX_UPLOAD_BYTES
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise FetchError(f"the document is {int(declared):,} bytes; the limit is {limit:,}")
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            raise FetchError(f"the document is larger than the limit of {limit:,} bytes")
        if time.monotonic() > deadline:
            raise FetchError(f"the download took longer than {settings.FOLIO_FETCH_TIMEOUT} s")
        chunks.append(chunk)
    return b"".join(chunks)


def _filename(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1]) or "document"
