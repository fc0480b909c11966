"""No network for the converters that could follow a document's links: LibreOffice runs only
behind an operating-system denial of every network connection, whatever the document says
(a linked image, a background image, an OLE link, a remote template), so that no document
can make the worker reach the operator's network (SSRF past ``webapp/core/ssrf.py``).

Two denials, both used where the host allows them (``FOLIO_CONVERTER_SANDBOX=auto``, the
default):

- ``namespace``: a user and network namespace of its own (util-linux's ``unshare``), whose
  only interface is a loopback that is down: nothing, the host's loopback included, can be
  reached. Containers often deny namespaces (Docker's default seccomp profile refuses
  ``unshare`` to a process without CAP_SYS_ADMIN, moby/moby#42441);
- ``seccomp``: a seccomp filter (libseccomp, through pyseccomp) installed in the process
  before it starts LibreOffice, inherited by every process it starts and never lifted, that
  fails any socket but a Unix one (LibreOffice's own pipe) and io_uring (whose operations a
  filter cannot see). Containers allow this: it is how Docker's own profile is applied.

Each is proved once per process before its first use: a child started behind it must fail
to reach a listener opened on 127.0.0.1 for the purpose. Where neither can be had, LibreOffice
is not started and the conversion fails saying why (``SandboxUnavailable``); an operator can
name one (``namespace``, ``seccomp``) to require it, or, knowingly, ``off``: LibreOffice then
runs with only its own settings against links (``libreoffice._PROFILE``), and every start
logs a warning (docs/SECURITY.md says when that can be right).

``python -m model.formats.sandbox PROGRAM ARG...`` is the seccomp launcher: it installs the
filter and becomes PROGRAM.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from model.config import env_choice

logger = logging.getLogger(__name__)

MODES = ("auto", "namespace", "seccomp", "off")
_ROOT = Path(__file__).resolve().parents[2]  # where ``model`` is imported from
_PROBE_SECONDS = 30
# The probe's child: exit 0 when it cannot reach the listener, 3 when it can.
_PROBE = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=5).close()
except OSError:
    sys.exit(0)
sys.exit(3)
"""


class SandboxUnavailable(RuntimeError):
    """No denial of the network can be had here; the message says why, for the operator."""


@dataclass(frozen=True)
class Sandbox:
    how: str  # "namespace+seccomp", "namespace", "seccomp" or "off"
    prefix: tuple[str, ...]  # what the converter's command is run under
    environment: tuple[tuple[str, str], ...] = ()  # what the prefix needs in the environment

    def command(self, command: list[str]) -> list[str]:
        return [*self.prefix, *command]

    def env(self, base: dict[str, str]) -> dict[str, str]:
        return {**base, **dict(self.environment)}


def mode() -> str:
    return env_choice("FOLIO_CONVERTER_SANDBOX", "auto", MODES)


def sandbox() -> Sandbox:
    """The sandbox this process runs its converters in (decided once per process and mode);
    raises ``SandboxUnavailable`` where the mode asked for cannot be had."""
    return _sandbox(mode())


@functools.cache
def _sandbox(wanted: str) -> Sandbox:
    if wanted == "off":
        logger.warning(
            "FOLIO_CONVERTER_SANDBOX=off: LibreOffice runs with the network this worker has; "
            "a document's links are refused by LibreOffice's own settings only"
        )
        return Sandbox("off", ())
    found: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
    reasons: dict[str, str] = {}
    for how in ("namespace", "seccomp"):
        if wanted not in ("auto", how):
            continue
        prefix, environment = _namespace_prefix() if how == "namespace" else _seccomp_prefix()
        reason = _unavailable(prefix, dict(environment))
        if reason is None:
            found[how] = (prefix, environment)
        else:
            reasons[how] = reason
    if not found:
        detail = "; ".join(f"{how}: {reason}" for how, reason in reasons.items())
        logger.error("LibreOffice will not be started: no network sandbox (%s)", detail)
        raise SandboxUnavailable(
            "this worker cannot start LibreOffice without network access, and it does not "
            f"start it with network access ({detail}); the operator can allow user "
            "namespaces or seccomp filters, see docs/SECURITY.md"
        )
    prefix = tuple(part for how in found for part in found[how][0])
    environment = tuple(pair for how in found for pair in found[how][1])
    made = Sandbox("+".join(found), prefix, environment)
    logger.info("LibreOffice runs without network access (%s)", made.how)
    return made


def _namespace_prefix() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    path = f"{os.environ.get('PATH', '')}{os.pathsep}/usr/bin{os.pathsep}/bin"
    unshare = shutil.which("unshare", path=path) or "unshare"
    # --map-root-user: an unprivileged process may make a network namespace only inside a
    # user namespace of its own; without --fork, unshare becomes the program (same process,
    # same process group, so a time limit still kills it).
    return (unshare, "--user", "--map-root-user", "--net", "--"), ()


def _seccomp_prefix() -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    return (sys.executable, "-m", "model.formats.sandbox"), (("PYTHONPATH", str(_ROOT)),)


def _unavailable(prefix: tuple[str, ...], environment: dict[str, str]) -> str | None:
    """Why ``prefix`` does not deny the network (it cannot start, or its child reached a
    listener on loopback), or None when it does."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        command = [*prefix, sys.executable, "-c", _PROBE.format(port=port)]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **environment}
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_PROBE_SECONDS,
                env=env,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"it could not be started ({exc})"
    if done.returncode == 0:
        return None
    if done.returncode == 3:
        return "a process started in it still reached the network"
    detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"it could not be started ({detail[-1] if detail else f'exit {done.returncode}'})"


def deny_network() -> None:
    """Install the seccomp filter in this process (and all it will start): a socket of any
    family but AF_UNIX fails with EACCES, io_uring is not there (ENOSYS). Raises OSError or
    ImportError where seccomp or libseccomp is missing."""
    import pyseccomp as seccomp  # libseccomp, through ctypes: raises where it is missing

    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    rules.add_rule(
        seccomp.ERRNO(errno.EACCES), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX)
    )
    for call in ("io_uring_setup", "io_uring_enter", "io_uring_register"):
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), call)
    rules.load()  # sets no_new_privs first (libseccomp's default), so it cannot be undone


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m model.formats.sandbox PROGRAM [ARG...]")
    try:
        deny_network()
    except (ImportError, OSError, RuntimeError) as exc:
        sys.exit(f"seccomp is not available ({exc})")
    environment = dict(os.environ)
    environment.pop("PYTHONPATH", None)  # ours, not the program's
    os.execvpe(argv[0], argv, environment)


if __name__ == "__main__":
    main(sys.argv[1:])
