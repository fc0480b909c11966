"""Test tier only: let PyPI's CUDA build of torchvision import beside the CPU torch.

torchvision's native library links CUDA libraries that the CPU torch lacks, so its C++ ops
never register, and its Python meta registrations then fail on import with
``operator torchvision::nms does not exist`` (seen from ``import vllm`` through transformers).
Declaring the two schemas those registrations expect lets the import finish. DeepSeek-OCR's
preprocessing uses only torchvision's pure-Python transforms: the ops are never called.

Only ``make test-vllm`` puts this folder on ``PYTHONPATH``; the product never loads it (a GPU
host has a matching CUDA torch and torchvision).
"""

from __future__ import annotations

import contextlib

with contextlib.suppress(ImportError):
    import torch

    _library = torch.library.Library("torchvision", "FRAGMENT")
    for _op in ("nms", "qnms"):
        # Already defined by a torchvision whose native ops did load: nothing to do.
        with contextlib.suppress(RuntimeError):
            _library.define(f"{_op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

# The tier's load format for a checkpoint without a vision tower (see folio_partial_loader).
if __import__("os").environ.get("FOLIO_TEST_PARTIAL_LOADER") == "1":
    import folio_partial_loader  # noqa: F401
