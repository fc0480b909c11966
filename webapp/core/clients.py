"""Who is asking: the client's address, and the identity anonymous quotas are counted by.

``X-Forwarded-For`` is written by whoever sends the request, so it is believed only as far as
the operator says proxies of theirs stand in front of this server (``FOLIO_TRUSTED_PROXIES``,
a count): each of them appends the address it was connected from, so with ``n`` trusted
proxies the client is the ``n``-th address from the right, and everything left of it may be
invented. With no trusted proxy (the default) the header is ignored and the connecting
address is the client.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings

# One IPv6 host is usually handed a whole /64, and can pick any address in it at will: an
# anonymous IPv6 client is its /64, or each address would be a fresh quota.
IPV6_CLIENT_PREFIX = 64


def client_address(request) -> str:
    """The address of the client: the connecting address, or the one the outermost trusted
    proxy saw. An unreadable header falls back to the connecting address."""
    remote = request.META.get("REMOTE_ADDR", "")
    proxies = settings.FOLIO_TRUSTED_PROXIES
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if not hops:
        return remote
    candidate = hops[-min(proxies, len(hops))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote


def client_identity(request) -> str:
    """What anonymous quotas are counted by: the client's IPv4 address, or its IPv6 /64."""
    address = client_address(request)
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_CLIENT_PREFIX}", strict=False))
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(parsed)
