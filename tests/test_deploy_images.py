"""The images' Python installs, made on this machine for every platform the images are built
for: the wheelhouse of each lock (deploy/wheelhouse.py, as `make wheels` fills it), then the
Dockerfile's own `pip install` options, with no index and every hash required, into a folder
for that platform's interpreter (``--target`` with ``--platform``/``--python-version``, as pip
installs for another machine). The compiled modules installed are then read: they are built
for the target's processor. The amd64 install is the image's, so the service's code is also
started on it here (Django's checks, the Celery app, the engines' imports).

Slow, and in the deployment tier (`make test-deploy`, which `.ci/run` runs). The wheelhouses
are kept between runs in FOLIO_WHEELHOUSE_CACHE (by default the user's cache folder,
.cache/folio-wheelhouse): the first run downloads about 0.6 GB for the two CPU platforms and
0.3 GB for the GPU one; later runs only check hashes. Each install takes one to two minutes on
the two-core development machine.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.platforms import TARGETS, Target
from deploy.wheelhouse import fill

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).resolve().parents[1]
ELF_MACHINE = {"x86_64": 62, "aarch64": 183}  # e_machine of an ELF header


def wheelhouse_cache() -> Path:
    configured = os.environ.get("FOLIO_WHEELHOUSE_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "folio-wheelhouse"


def dockerfile_pip_options(dockerfile: str) -> list[str]:
    """The options of the Dockerfile's install from the wheelhouse, offline (OFFLINE=1)."""
    text = (REPOSITORY / dockerfile).read_text().replace("\\\n", " ")
    [install] = [line for line in text.splitlines() if "--require-hashes" in line]
    command = install[install.index("pip install") :].split("&&")[0]
    words = shlex.split(command.replace("$index", "--no-index"))[2:]
    options = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
        elif word in ("--find-links", "-r"):
            skip_next = True  # this machine's wheelhouse and lock, below
        else:
            options.append(word)
    return options


def install(target: Target, dockerfile: str, into: Path) -> subprocess.CompletedProcess:
    wheels = fill(target, wheelhouse_cache())
    options = dockerfile_pip_options(dockerfile)
    assert {"--no-index", "--require-hashes", "--only-binary=:all:"} <= set(options), options
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-compile", *options, "--find-links", str(wheels), "-r", str(target.lock),
         "--target", str(into), *target.pip_flags()],
        capture_output=True, text=True, env=_pip_without_machine_config(),
    )  # fmt: skip


def _pip_without_machine_config() -> dict[str, str]:
    """This machine's pip settings (extra indexes, find-links, constraints) left out, so the
    install sees the wheelhouse and nothing else, as the image build does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return env | {"PIP_CONFIG_FILE": os.devnull}


def elf_machine(path: Path) -> int:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", path
    return int.from_bytes(header[18:20], "little")


def installed_versions(folder: Path) -> dict[str, str]:
    versions = {}
    for info in folder.glob("*.dist-info"):
        name, version = info.name.removesuffix(".dist-info").rsplit("-", 1)
        versions[re.sub(r"[-_.]+", "-", name).lower()] = version
    return versions


def locked_versions(target: Target) -> dict[str, str]:
    return dict(re.findall(r"^([a-z0-9-]+)==(\S+) \\$", target.lock.read_text(), re.M))


@pytest.mark.parametrize(
    ("name", "dockerfile"),
    [("amd64", "Dockerfile"), ("arm64", "Dockerfile"), ("gpu", "Dockerfile.gpu")],
)
def test_the_wheelhouse_installs_offline_for_the_image_platform(tmp_path, name, dockerfile):
    target = TARGETS[name]
    result = install(target, dockerfile, tmp_path / "site-packages")
    assert result.returncode == 0, result.stderr[-3000:]

    site = tmp_path / "site-packages"
    assert installed_versions(site) == locked_versions(target)
    compiled = [p for p in site.rglob("*.so") if p.is_file()]
    assert compiled, "no compiled module installed"
    machines = {elf_machine(path) for path in compiled}
    assert machines == {ELF_MACHINE[target.machine]}, (name, machines)
    abi_tagged = [p.name for p in compiled if ".cpython-" in p.name]
    assert abi_tagged and all(f"cpython-{target.abi[2:]}" in n for n in abi_tagged), name

    if name == "amd64":
        # The image's own install: each role starts on it (this interpreter is 3.11 too).
        for role, script in ROLE_STARTS.items():
            started = subprocess.run(
                [sys.executable, "-S", "-c", script],
                cwd=REPOSITORY,
                capture_output=True,
                text=True,
                timeout=300,
                env={
                    "PATH": os.environ["PATH"],
                    "PYTHONPATH": f"{site}{os.pathsep}{REPOSITORY}",
                    "DJANGO_SETTINGS_MODULE": "webapp.settings",
                    "FOLIO_SECRET_KEY": "x" * 50,
                    "FOLIO_VAR_DIR": str(tmp_path / "var"),
                    "HOME": str(tmp_path),
                },
            )
            assert started.returncode == 0, (role, started.stderr[-3000:])
            lines = started.stdout.strip().splitlines()
            assert lines[-1] == "started", (role, lines)
            origins = [line for line in lines if line.startswith(os.sep)]
            assert origins and all(Path(o).is_relative_to(site) for o in origins), lines


# What the entrypoint's roles import, each in a process of its own as in its container, from
# the installed folder alone (-S: no site-packages).
ROLE_STARTS = {
    "web": """
import webapp.wsgi, django
from django.core.management import call_command
call_command("check")
print(django.__file__)
print("started")
""",
    "worker": """
import django
django.setup()
import ocr_worker.celery_app, model.engines.local, celery, rapidocr, pymupdf
for module in (celery, rapidocr, pymupdf):
    print(module.__file__)
print("started")
""",
}
