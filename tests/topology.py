"""docker-compose.yml's services as processes on this machine, for the multi-host test.

Each service is started the way its container would start it: ``deploy/entrypoint.sh`` with
the service's ``command``, and the service's ``environment`` read from docker-compose.yml
(``${NAME:-default}`` filled from the mapping the test gives, as Compose fills it from the
shell). On the test network (tests/netns.py) a host is a network namespace of its own, and
the compose host names (``postgres``, ``redis``, ``minio``) are real hosts there, so the
environment is used as written. Only what a container gets from Docker itself is replaced:

- ``/run/secrets/NAME`` becomes a file the test wrote;
- the machine: each host gets its own host name (FOLIO_HOSTNAME) and its own local disk
  (FOLIO_VAR_DIR, FOLIO_MEDIA_ROOT and TMPDIR under a folder of its own), so a file written
  to local disk by mistake is one the other hosts cannot see.

Without a network (``net=None``) a host is a process group on this machine, and ``replace``
swaps the compose addresses for this machine's services: the preflight tests use that.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import yaml

from tests.netns import Network

REPOSITORY = Path(__file__).resolve().parents[1]
COMPOSE_FILE = REPOSITORY / "docker-compose.yml"
ENTRYPOINT = REPOSITORY / "deploy" / "entrypoint.sh"
# Host names that exist only inside the compose network.
COMPOSE_HOSTS = ("postgres", "redis", "minio")
_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, *, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


def compose_services() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())["services"]


def interpolate(value: str, environ: Mapping[str, str]) -> str:
    """Compose's ``${NAME:-default}``, from ``environ`` (Compose reads the shell's)."""
    return _DEFAULTED.sub(lambda match: environ.get(match[1]) or match[2], value)


def service_environment(
    service: str,
    *,
    replace: dict[str, str],
    environ: Mapping[str, str] | None = None,
    networked: bool = False,
) -> dict[str, str]:
    """The service's environment from docker-compose.yml, with ``replace``'s substrings
    (secret paths; without a network, the compose addresses too) swapped for this machine's."""
    env = {}
    for name, value in (compose_services()[service].get("environment") or {}).items():
        value = interpolate(str(value), environ or {})
        for old, new in replace.items():
            value = value.replace(old, new)
        env[name] = value
    if not networked:
        for name, value in env.items():
            for host in COMPOSE_HOSTS:
                assert f"//{host}:" not in value and f"@{host}:" not in value, (
                    f"{service}: {name}={value} still names the compose host {host!r}"
                )
    return env


def service_command(service: str) -> list[str]:
    return [str(part) for part in compose_services()[service]["command"]]


class Host:
    """One service on one "machine": ``deploy/entrypoint.sh`` with the service's command and
    environment, a host name and a local disk of its own, in a process group of its own (so
    killing it is losing the machine)."""

    def __init__(
        self,
        service: str,
        *,
        hostname: str,
        env: dict[str, str],
        scratch: Path,
        log_dir: Path,
        net: Network | None = None,
    ):
        self.service = service
        self.hostname = hostname
        self.net = net
        if net is not None:
            net.add(hostname)
        self.disk = scratch / hostname
        for folder in ("var", "media", "tmp"):
            (self.disk / folder).mkdir(parents=True, exist_ok=True)
        self.env = {
            # What a container has that is not in docker-compose.yml: its tools on PATH.
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "LANG": "C.UTF-8",
            **env,
            "FOLIO_HOSTNAME": hostname,
            "FOLIO_VAR_DIR": str(self.disk / "var"),
            "FOLIO_MEDIA_ROOT": str(self.disk / "media"),
            "TMPDIR": str(self.disk / "tmp"),
        }
        self.log_path = log_dir / f"{hostname}.log"
        self.log_path.unlink(missing_ok=True)  # this run's log only
        self.process: subprocess.Popen | None = None

    def command(self, *args: str) -> list[str]:
        argv = ["sh", str(ENTRYPOINT), *args]
        return self.net.command(self.hostname, argv) if self.net else argv

    def start(self, *args: str) -> Host:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.command(*(args or service_command(self.service))), env=self.env, cwd=REPOSITORY,
            stdout=self.log_path.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        return self

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """A one-off command on this host (as ``docker compose run``), to its end."""
        return subprocess.run(
            self.command(*(args or service_command(self.service))),
            env=self.env,
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for_log(self, text: str, *, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log():
                return
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.hostname} exited ({self.process.returncode}): {self.log()[-3000:]}"
                )
            time.sleep(0.3)
        raise TimeoutError(f"{self.hostname}: no {text!r} in its log after {timeout} s")

    def local_files(self) -> list[Path]:
        """Files on this host's own disk where uploads would land with local storage."""
        return [path for path in (self.disk / "media").rglob("*") if path.is_file()]

    def kill(self) -> None:
        """SIGKILL the whole process group at once: the machine is gone."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, *, timeout: float = 30) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
