"""Outbound HTTP that cannot be aimed at our own network (SSRF protection).

Every connection is checked when it is made, not when a URL is parsed: the host name is
resolved (within the exchange's deadline: ``resolve``), every address it resolves to must be
public (or allowed by FOLIO_SSRF_ALLOW), and the socket is opened to the address that was
checked. Redirects open new connections, so each
hop is checked the same way, and a DNS answer that changes between check and use cannot slip
through (there is no second lookup). Decimal, octal and IPv4-mapped IPv6 spellings of an
address all resolve to the address itself and are judged as such; so are the IPv6 addresses
that carry an IPv4 address inside them (NAT64, 6to4, IPv4-compatible), whose traffic a
translator or relay may deliver to that IPv4 address.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpcore
import httpx

from webapp.core.deadline import DeadlineStream, within

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class BlockedAddress(httpx.TransportError):
    """The target resolves to an address this server must not connect to."""


@dataclass(frozen=True)
class AddressPolicy:
    """Public addresses only, except the host names and networks explicitly allowed."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_networks: tuple[IPNetwork, ...] = field(default_factory=tuple)

    @classmethod
    def from_setting(cls, entries: Iterable[str]) -> AddressPolicy:
        """``FOLIO_SSRF_ALLOW``: host names and CIDR networks, e.g. ``files.corp,10.8.0.0/16``."""
        hosts, networks = set(), []
        for entry in entries:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(allowed_hosts=frozenset(hosts), allowed_networks=tuple(networks))

    def check(self, host: str, address: IPAddress) -> None:
        if host.lower().rstrip(".") in self.allowed_hosts:
            return
        if any(
            candidate in network
            for network in self.allowed_networks
            for candidate in {address, judged_address(address)}
        ):
            return
        if not is_public(address):
            raise BlockedAddress(
                f"{host} resolves to {address}, a private, loopback, link-local or otherwise "
                "internal address; this server does not fetch from those unless its operator "
                "allows the host or network in FOLIO_SSRF_ALLOW (host names and CIDR networks, "
                "comma-separated)"
            )


# Ranges refused although Python's ``is_global`` calls (some of) them global: IETF protocol
# assignments (192.0.0.0/24), the deprecated 6to4 relay anycast, benchmarking, reserved and
# broadcast, NAT64's local-use prefix, the deprecated IPv6 site-local range, documentation,
# discard-only and Teredo (its IPv4 client address is obfuscated; nothing public needs it).
SPECIAL_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/32",
        "2001:db8::/32",
        "3fff::/20",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
    )
)
# IPv6 prefixes whose last 32 bits are an IPv4 address a translator delivers to (RFC 6052).
NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d (RFC 4291 2.5.5.1)


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries, where a translator, relay or dual stack
    would deliver to it: IPv4-mapped, NAT64, 6to4 and IPv4-compatible addresses."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64_PREFIX or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def judged_address(address: IPAddress) -> IPAddress:
    """The address a connection to ``address`` really reaches, for judging it."""
    if isinstance(address, ipaddress.IPv6Address):
        return embedded_ipv4(address) or address
    return address


def is_public(address: IPAddress) -> bool:
    address = judged_address(address)
    if any(address in network for network in SPECIAL_NETWORKS):
        return False
    return address.is_global and not address.is_multicast


# Seconds a host name may take to resolve where no deadline says otherwise.
RESOLVE_SECONDS = 10.0


def resolve(host: str, port: int, *, timeout: float | None = RESOLVE_SECONDS) -> list[IPAddress]:
    """Every address ``host`` resolves to, within ``timeout`` seconds.

    ``getaddrinfo`` takes no timeout, and a name server that never answers holds it for as
    long as the system resolver's own retries last (``resolv.conf``: attempts × servers ×
    timeout, not ours to set). So the lookup runs in a daemon thread of its own, and the
    caller waits for it only until ``timeout``: a fetch's deadline covers resolution too. A
    thread left behind ends when the system resolver gives up; nothing waits for it."""
    outcome: dict[str, object] = {}
    done = threading.Event()

    def lookup() -> None:
        try:
            outcome["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=lookup, name=f"resolve {host}", daemon=True).start()
    if not done.wait(timeout):
        raise httpx.ConnectTimeout(f"the host name {host!r} did not resolve within {timeout:g} s")
    error = outcome.get("error")
    if isinstance(error, socket.gaierror):
        raise httpx.ConnectError(
            f"the host name {host!r} does not resolve ({error.strerror})"
        ) from error
    if isinstance(error, BaseException):
        raise error
    infos = outcome["infos"]
    assert isinstance(infos, list)
    # getaddrinfo may add a scope to link-local IPv6 ("fe80::1%eth0"); the scope is not part
    # of the address we judge.
    return list(
        dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos)
    )


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's socket layer, but every connection goes to a checked address."""

    def __init__(self, policy: AddressPolicy, deadline: float | None = None):
        self.policy = policy
        self.deadline = deadline  # time.monotonic() by which the whole exchange ends

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        # Resolution shares the exchange's deadline (and the connect timeout) with the rest.
        addresses = resolve(
            host, port, timeout=within(self.deadline, timeout, httpcore.ConnectTimeout)
        )
        # Every address must pass, not just the first: a name that resolves to a public and a
        # private address would otherwise be a coin toss away from the inside.
        for address in addresses:
            self.policy.check(host, address)
        error: Exception | None = None
        for address in addresses:
            try:
                stream = super().connect_tcp(
                    str(address),
                    port,
                    within(self.deadline, timeout, httpcore.ConnectTimeout),
                    local_address,
                    socket_options,
                )
                return DeadlineStream(stream, self.deadline) if self.deadline else stream
            except httpcore.ConnectError as exc:
                error = exc
        raise error or httpcore.ConnectError(f"no address for {host}")


def guarded_client(
    *, policy: AddressPolicy, timeout: float, deadline: float | None = None, **kwargs
) -> httpx.Client:
    """An httpx client whose every connection is checked by ``policy``. Redirects are left to
    the caller (``follow_redirects=False``), who must also bound them. With ``deadline``
    (``time.monotonic()``), every socket wait of every request ends by then
    (``webapp.core.deadline``): one budget for the whole exchange, not per read."""
    transport = httpx.HTTPTransport(retries=0)
    # httpx has no public hook for the socket layer; its pool takes one. (Pinned httpx; the
    # tests prove a private address is refused, so a change here cannot pass unnoticed.)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(policy, deadline)
    )
    return httpx.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False, **kwargs
    )
