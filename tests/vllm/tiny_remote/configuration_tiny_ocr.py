"""Remote code of the tiny test checkpoint: its configuration (``AutoConfig`` through
``auto_map`` with ``trust_remote_code=True``).

The checkpoint's ``config.json`` keeps the decoder's settings under ``language_config``, where
vLLM's DeepSeek-OCR config class reads them; a Transformers model reads them as attributes of
its config, so this class lifts them to the top level (the ones given there win).
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig


class TinyOcrConfig(PretrainedConfig):
    model_type = "deepseek_vl_v2"

    def __init__(self, language_config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        language = dict(language_config or {})
        for key in ("architectures", "model_type", "auto_map", "torch_dtype", "dtype"):
            language.pop(key, None)
        merged = {**language, **kwargs}
        merged.setdefault("initializer_range", 0.02)
        merged.setdefault("tie_word_embeddings", False)
        super().__init__(**merged)
        self.language_config = language_config or {}
