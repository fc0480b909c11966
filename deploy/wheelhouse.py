"""Fill wheels/<target>/ with every wheel deploy/requirements-<target>.lock pins, checked
against the lock's hashes, for the target's platform and interpreter (deploy/platforms.py)
whatever this host is: the wheelhouse the images install from with no index.

    python deploy/wheelhouse.py amd64 arm64     # `make wheels`
    python deploy/wheelhouse.py gpu             # `make wheels-gpu`
    python deploy/wheelhouse.py --into DIR amd64    # elsewhere (DIR/amd64/)

Wheels already there are not downloaded again (pip checks their hashes).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from platforms import TARGETS, Target  # noqa: E402


def download_command(target: Target, requirements: Path, into: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
        *target.pip_flags(), "-r", str(requirements), "--dest", str(into),
    ]  # fmt: skip


def missing_entries(lock_text: str, folder: Path) -> list[str]:
    """The lock's entries whose wheel (by its hash) is not in the folder yet."""
    present = {hashlib.sha256(wheel.read_bytes()).hexdigest() for wheel in folder.glob("*.whl")}
    entries = re.findall(r"^[a-z0-9-]+==\S+ \\\n\s+--hash=sha256:([0-9a-f]{64})$", lock_text, re.M)
    blocks = re.findall(r"^([a-z0-9-]+==\S+ \\\n\s+--hash=sha256:[0-9a-f]{64})$", lock_text, re.M)
    return [block for block, digest in zip(blocks, entries, strict=True) if digest not in present]


def fill(target: Target, into: Path | None = None) -> Path:
    """The target's wheelhouse, with what it lacks downloaded (asking the index only then)."""
    folder = into / target.name if into else target.wheelhouse
    folder.mkdir(parents=True, exist_ok=True)
    missing = missing_entries(target.lock.read_text(), folder)
    if missing:
        with tempfile.TemporaryDirectory() as scratch:
            requirements = Path(scratch) / "missing.txt"
            requirements.write_text("\n".join(missing) + "\n")
            subprocess.run(download_command(target, requirements, folder), check=True)
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+", choices=sorted(TARGETS))
    parser.add_argument("--into", type=Path, help="a folder other than wheels/")
    args = parser.parse_args()
    for name in args.targets:
        folder = fill(TARGETS[name], args.into)
        print(f"{folder}: {len(list(folder.glob('*.whl')))} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
