"""The ``openai`` engine's configuration, read from ``FOLIO_OPENAI_*``.

No HTTP client or imaging library here: the registry, the web process and a worker checking
its settings before it loads the engine all import this module cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from model.config import env_float, env_int, env_required, env_str
from model.engines.vllm.prompt import JINA_OCR_PROMPT

DEFAULT_MODEL = "jinaai/jina-ocr-v1"
DEFAULT_CONCURRENCY = 8


@dataclass(frozen=True)
class OpenAIConfig:
    base_url: str  # e.g. http://vllm:8000/v1
    model: str = DEFAULT_MODEL
    api_key: str = ""
    concurrency: int = DEFAULT_CONCURRENCY  # requests in flight per worker process
    timeout: float = 120.0  # seconds for one request
    connect_timeout: float = 10.0
    max_retries: int = 3
    backoff: float = 1.0  # first back-off in seconds; doubled each retry, jittered
    max_backoff: float = 30.0
    max_tokens: int = 8192
    prompt: str = JINA_OCR_PROMPT
    long_side: int = 1600
    extra_body: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpenAIConfig:
        """``FOLIO_OPENAI_BASE_URL`` (required), ``FOLIO_OPENAI_MODEL``,
        ``FOLIO_OPENAI_API_KEY`` (or ``_FILE``), ``FOLIO_OPENAI_CONCURRENCY``,
        ``FOLIO_OPENAI_TIMEOUT``, ``FOLIO_OPENAI_MAX_RETRIES``, ``FOLIO_OPENAI_MAX_TOKENS``;
        a malformed one raises ``model.config.ConfigError`` naming it."""
        return cls(
            base_url=env_required(
                "FOLIO_OPENAI_BASE_URL", what="the openai engine has no endpoint", environ=environ
            ),
            model=env_str("FOLIO_OPENAI_MODEL", environ=environ).strip() or DEFAULT_MODEL,
            api_key=env_str("FOLIO_OPENAI_API_KEY", environ=environ).strip(),
            concurrency=env_int(
                "FOLIO_OPENAI_CONCURRENCY", DEFAULT_CONCURRENCY, minimum=1, environ=environ
            ),
            timeout=env_float("FOLIO_OPENAI_TIMEOUT", 120.0, minimum=0.001, environ=environ),
            max_retries=env_int("FOLIO_OPENAI_MAX_RETRIES", 3, minimum=0, environ=environ),
            max_tokens=env_int("FOLIO_OPENAI_MAX_TOKENS", 8192, minimum=1, environ=environ),
        )
