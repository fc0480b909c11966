"""The checkpoint's own vLLM glue: jina-ocr-v1's snapshot ships a ``register()`` that adds
what upstream vLLM lacks for it (the MTP draft head of a ``deepseek_ocr`` model, nine tiles).

It must run in every process of vLLM: the worker (which preprocesses images) and the
engine-core process that vLLM spawns. The worker calls ``register`` before it starts the
engine; Folio's ``vllm.general_plugins`` entry point (``plugin``) runs it in the spawned
processes, finding the checkpoint through ``FOLIO_VLLM_MODEL``, which they inherit.

``FOLIO_VLLM_REGISTER`` names the glue as ``file.py:function`` inside the snapshot; by default
the files below are tried, and a checkpoint without any (plain DeepSeek-OCR) needs none.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)

DEFAULT_GLUE = ("register.py:register", "vllm_register.py:register")
_done: set[str] = set()


def glue_entry(model: str) -> tuple[Path, str] | None:
    """The glue file and function of a checkpoint folder, or ``None`` when it ships none."""
    wanted = os.environ.get("FOLIO_VLLM_REGISTER", "").strip()
    for entry in (wanted,) if wanted else DEFAULT_GLUE:
        filename, _, function = entry.partition(":")
        path = Path(model) / filename
        if path.is_file():
            return path, function or "register"
        if wanted:
            raise FileNotFoundError(f"FOLIO_VLLM_REGISTER={wanted!r}: no {path}")
    return None


def register(model: str) -> str:
    """Run the checkpoint's glue once in this process; answers what ran ("" for nothing)."""
    entry = glue_entry(model)
    if entry is None:
        return ""
    path, function = entry
    label = f"{path.name}:{function}"
    if label in _done:
        return label
    spec = importlib.util.spec_from_file_location(f"folio_checkpoint_glue_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    getattr(module, function)()
    _done.add(label)
    logger.info("ran the checkpoint's vLLM glue %s", label)
    return label


def plugin() -> None:
    """vLLM general plugin: the same glue in each process vLLM starts."""
    model = os.environ.get("FOLIO_VLLM_MODEL", "").strip()
    if model:
        register(model)
