"""Test tier only: vLLM load format ``folio-partial``, random weights for what the folder lacks.

The tiny checkpoint (``tests/vllm/tiny_checkpoint.py``) carries the decoder and its FastMTP
draft head, not the ~0.4 B-parameter vision tower that vLLM builds for DeepSeek-OCR whatever
the config says. This loader first fills every tensor at random, as ``load_format="dummy"``
does, then loads every tensor the folder has through the model's own ``load_weights``, as the
default loader does (without its check that nothing was left unset, which the vision tower
would fail). ``sitecustomize`` registers it in each process of the tier that sets
``FOLIO_TEST_PARTIAL_LOADER=1``; the product never loads it.
"""

from __future__ import annotations

import copy

from vllm.model_executor.model_loader import register_model_loader
from vllm.model_executor.model_loader.base_loader import BaseModelLoader
from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
from vllm.model_executor.model_loader.dummy_loader import DummyModelLoader


def _with_format(load_config, load_format: str):
    config = copy.copy(load_config)
    config.load_format = load_format
    return config


@register_model_loader("folio-partial")
class PartialModelLoader(BaseModelLoader):
    def __init__(self, load_config):
        super().__init__(load_config)
        self._random = DummyModelLoader(_with_format(load_config, "dummy"))
        self._files = DefaultModelLoader(_with_format(load_config, "safetensors"))

    def download_model(self, model_config) -> None:
        pass  # a local folder

    def load_weights(self, model, model_config) -> None:
        self._random.load_weights(model, model_config)
        model.load_weights(self._files.get_all_weights(model_config, model))
