"""What the public port shows besides the API, as the operator decides: ``/metrics`` only to a
bearer token or to addresses allowed (by default this machine and private networks), and
switches for the API docs and schema, DRF's browsable API and the admin. Each switch is read
at request time, so a test or a reload sees the current setting."""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpResponse
from django_prometheus import exports
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer

from webapp.core.clients import client_address

METRICS_REFUSAL = (
    "metrics are not served to this client: send FOLIO_METRICS_TOKEN as a bearer "
    "token, or scrape from an address in FOLIO_METRICS_ALLOW\n"
)


def metrics(request) -> HttpResponse:
    """django-prometheus's exposition, behind the token or the address allow-list."""
    allowed = metrics_allowed(
        authorization=request.headers.get("Authorization", ""), address=client_address(request)
    )
    if not allowed:
        return HttpResponse(METRICS_REFUSAL, status=403, content_type="text/plain; charset=utf-8")
    return exports.ExportToDjangoView(request)


def metrics_allowed(*, authorization: str, address: str) -> bool:
    """Whether a scraper may read metrics: it sent ``FOLIO_METRICS_TOKEN`` as a bearer token,
    or its ``address`` is in ``FOLIO_METRICS_ALLOW``. The web's ``/metrics`` and a worker's
    metrics port (``ocr_worker/metrics_port.py``) answer alike."""
    token = settings.FOLIO_METRICS_TOKEN
    if token and hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode()):
        return True
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return _address_allowed(parsed)


def _address_allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    networks = [ipaddress.ip_network(entry, strict=False) for entry in settings.FOLIO_METRICS_ALLOW]
    return any(address in network for network in networks)


# Paths each switch turns off: a 404, as if they did not exist.
SWITCHED = {
    "FOLIO_API_DOCS": ("/api/schema/", "/api/docs/", "/v1/openapi.json"),
    "FOLIO_ADMIN": ("/admin/",),
}


class SurfacesMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        for setting, prefixes in SWITCHED.items():
            if request.path.startswith(prefixes) and not getattr(settings, setting):
                raise Http404(f"{setting} is off")
        return self.get_response(request)


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, without the browsable API where FOLIO_BROWSABLE_API is off (a
    browser then gets JSON)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if not settings.FOLIO_BROWSABLE_API:
            kept = [r for r in renderers if not isinstance(r, BrowsableAPIRenderer)]
            renderers = kept or renderers
        return super().select_renderer(request, renderers, format_suffix)
