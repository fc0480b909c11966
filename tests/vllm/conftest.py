"""The vLLM tier: collected only by ``make test-vllm`` (``FOLIO_VLLM_TIER=1``), which runs it
in ``.venv-vllm`` with the torchvision shim on ``PYTHONPATH``. ``make test`` skips the folder
without importing vLLM."""

from __future__ import annotations

import os

if os.environ.get("FOLIO_VLLM_TIER") != "1":
    collect_ignore_glob = ["test_*.py"]
