"""The ``transformers`` engine's configuration, read from ``FOLIO_TRANSFORMERS_*``.

No torch here: the registry, the web process and a worker checking its settings before it loads
the engine all import this module cheaply. The device and dtype are names; the engine turns
them into torch objects (and picks ``cuda`` / bfloat16 when a GPU is there and none is named).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from model.config import env_bool, env_choice, env_int, env_required, env_str

DEFAULT_K = 3
DEFAULT_MAX_NEW_TOKENS = 4096
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class TransformersConfig:
    model_dir: Path
    device: str = ""  # "" = cuda when available, else cpu
    dtype: str = ""  # "" = bfloat16 on a GPU, float32 on a CPU
    # Drafts per verifier pass; 0 turns FastMTP off. None (unset): the checkpoint's
    # ``mtp_num_speculative_steps``, else DEFAULT_K.
    fastmtp_k: int | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    # Run the checkpoint's own Python (config.json's auto_map), as DeepSeek-OCR's public
    # loading does (trust_remote_code=True); off unless the operator has read that code.
    trust_remote_code: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> TransformersConfig:
        """``FOLIO_TRANSFORMERS_MODEL_DIR`` (required), ``FOLIO_TRANSFORMERS_DEVICE``,
        ``FOLIO_TRANSFORMERS_DTYPE``, ``FOLIO_TRANSFORMERS_FASTMTP_K``,
        ``FOLIO_TRANSFORMERS_MAX_NEW_TOKENS``, ``FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE``; a
        malformed one raises
        ``model.config.ConfigError`` naming it."""
        return cls(
            model_dir=Path(
                env_required(
                    "FOLIO_TRANSFORMERS_MODEL_DIR",
                    what="the transformers engine has no local checkpoint directory",
                    environ=environ,
                )
            ),
            device=env_str("FOLIO_TRANSFORMERS_DEVICE", environ=environ).strip(),
            dtype=env_choice("FOLIO_TRANSFORMERS_DTYPE", "", ("", *DTYPES), environ=environ),
            fastmtp_k=_unset_is_none(
                env_int("FOLIO_TRANSFORMERS_FASTMTP_K", -1, minimum=0, environ=environ)
            ),
            max_new_tokens=env_int(
                "FOLIO_TRANSFORMERS_MAX_NEW_TOKENS",
                DEFAULT_MAX_NEW_TOKENS,
                minimum=1,
                environ=environ,
            ),
            trust_remote_code=env_bool(
                "FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE", False, environ=environ
            ),
        )


def _unset_is_none(value: int) -> int | None:
    return None if value < 0 else value
