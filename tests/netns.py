"""Hosts on a network of their own, on this machine: one Linux network namespace per host, each
joined to a bridge by a veth pair, with an address on a private /24 and a hosts file that names
every host, so that hosts reach each other by name and never over loopback.

The bridge lives in a namespace of its own (the switch); the test process stays in the
machine's namespace and joins the network through one more veth pair (the first address), so
it can talk to the hosts without being one. A command runs on a host through
``ip netns exec`` (which gives it a mount namespace of its own) with the host's hosts file
bind-mounted on /etc/hosts there, as a container gets from Docker.

A partition detaches a host's cable from the bridge: its packets go nowhere and nothing
reaches it, while its own interface stays up (no error tells its processes; their TCP
connections simply stop getting answers), as a switch port going dead does. Healing plugs it
back in.

Needs root and iproute2; ``unavailable()`` says why not where namespaces cannot be made.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Candidate subnets for the test network; the first one no route of this machine overlaps.
_SUBNETS = [f"10.231.{n}.0/24" for n in range(16, 48)]


def _ip(*args: str, namespace: str | None = None) -> None:
    command = ["ip", *(["-n", namespace] if namespace else []), *args]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")


def unavailable() -> str | None:
    """Why this machine cannot make the test network, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"folio-probe-{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except (RuntimeError, FileNotFoundError) as exc:
        return f"cannot make a network namespace here ({exc})"
    try:
        _ip("link", "add", "probe0", "type", "veth", "peer", "name", "probe1", namespace=probe)
        _ip("link", "add", "probebr", "type", "bridge", namespace=probe)
    except RuntimeError as exc:
        return f"cannot make veth pairs or a bridge here ({exc})"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _free_subnet() -> ipaddress.IPv4Network:
    routes = subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=True
    ).stdout
    taken = []
    for word in routes.split():
        try:
            taken.append(ipaddress.ip_network(word, strict=False))
        except ValueError:
            continue
    for candidate in map(ipaddress.ip_network, _SUBNETS):
        if not any(candidate.overlaps(net) for net in taken if net.prefixlen > 0):
            return candidate
    raise RuntimeError(f"every candidate subnet overlaps a route of this machine: {_SUBNETS}")


@dataclass(frozen=True)
class NetHost:
    name: str
    namespace: str
    address: str
    cable: str  # the veth end on the bridge


class Network:
    """Make it with ``with Network(scratch) as net:``; everything is removed on exit. Several
    can exist at once (each on its own subnet, with names of its own)."""

    _made = 0

    def __init__(self, scratch: Path):
        self.scratch = scratch
        scratch.mkdir(parents=True, exist_ok=True)
        Network._made += 1
        self.tag = f"f{os.getpid() % 100000}n{Network._made}"
        self.switch = f"{self.tag}-switch"
        self.subnet = _free_subnet()
        self._addresses = self.subnet.hosts()
        self.client_address = str(next(self._addresses))  # the test process's
        self.hosts: dict[str, NetHost] = {}
        self._client_cable = f"{self.tag}c"

    def __enter__(self) -> Network:
        _ip("netns", "add", self.switch)
        _ip("link", "add", "br0", "type", "bridge", namespace=self.switch)
        _ip("link", "set", "br0", "up", namespace=self.switch)
        # The test process's own cable: one end here, the other on the bridge.
        _ip("link", "add", self._client_cable, "type", "veth", "peer", "name", "uplink")
        _ip("link", "set", "uplink", "netns", self.switch)
        _ip("link", "set", "uplink", "master", "br0", namespace=self.switch)
        _ip("link", "set", "uplink", "up", namespace=self.switch)
        prefix = self.subnet.prefixlen
        _ip("addr", "add", f"{self.client_address}/{prefix}", "dev", self._client_cable)
        _ip("link", "set", self._client_cable, "up")
        return self

    def add(self, name: str) -> NetHost:
        """A host named ``name``, with its address and cable, in every host's hosts file."""
        cable = f"{self.tag}h{len(self.hosts)}"
        host = NetHost(name, f"{self.tag}-{name}", str(next(self._addresses)), cable)
        _ip("netns", "add", host.namespace)
        _ip("link", "add", cable, "type", "veth", "peer", "name", "eth0", namespace=self.switch)
        _ip("link", "set", "eth0", "netns", host.namespace, namespace=self.switch)
        _ip("link", "set", host.cable, "master", "br0", namespace=self.switch)
        _ip("link", "set", host.cable, "up", namespace=self.switch)
        _ip("addr", "add", f"{host.address}/{self.subnet.prefixlen}", "dev", "eth0",
            namespace=host.namespace)  # fmt: skip
        _ip("link", "set", "eth0", "up", namespace=host.namespace)
        _ip("link", "set", "lo", "up", namespace=host.namespace)  # the host's own, as any has
        self.hosts[name] = host
        self._write_hosts_file()
        return host

    @property
    def hosts_file(self) -> Path:
        """The /etc/hosts every host gets: each host's name at its address."""
        return self.scratch / "hosts"

    def _write_hosts_file(self) -> None:
        lines = ["127.0.0.1 localhost", f"{self.client_address} test-client"]
        lines += [f"{host.address} {host.name}" for host in self.hosts.values()]
        self.hosts_file.write_text("\n".join(lines) + "\n")
        self.hosts_file.chmod(0o644)

    def command(self, name: str, argv: list[str]) -> list[str]:
        """``argv`` as run on host ``name``: its namespace, its hosts file."""
        return [
            "ip", "netns", "exec", self.hosts[name].namespace,
            "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', str(self.hosts_file),
            *argv,
        ]  # fmt: skip

    def partition(self, name: str) -> None:
        _ip("link", "set", self.hosts[name].cable, "nomaster", namespace=self.switch)

    def heal(self, name: str) -> None:
        _ip("link", "set", self.hosts[name].cable, "master", "br0", namespace=self.switch)

    def __exit__(self, *exc) -> None:
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
        subprocess.run(["ip", "link", "del", self._client_cable], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True)
