"""The vLLM engine's configuration: read from the environment, turned into engine arguments.

Nothing here imports vLLM, so a bad setting is reported before the heavy import.

| variable | default | what |
|---|---|---|
| ``FOLIO_VLLM_MODEL`` | (required) | the checkpoint's folder (jina-ocr-v1 or DeepSeek-OCR) |
| ``FOLIO_VLLM_SPECULATION`` | ``k3-eager`` | ``k3-eager``, ``k1-graphs``, ``ngram-k3`` or ``off`` |
| ``FOLIO_VLLM_PAGES_IN_FLIGHT`` | 32 | pages decoded at once (vLLM's ``max_num_seqs``) |
| ``FOLIO_VLLM_MAX_TOKENS`` | 8192 | output cap per page |
| ``FOLIO_VLLM_MAX_TILES`` | 6 | Gundam tiles; 9 needs the checkpoint's own processor glue |
| ``FOLIO_VLLM_PAGE_TIMEOUT`` | 300 | seconds before a page's request is aborted |
| ``FOLIO_VLLM_REPETITION_FALLBACK`` | ``on`` | a second engine, no speculation, for runaways |
| ``FOLIO_VLLM_ENGINE_ARGS`` | ``{}`` | JSON of further vLLM engine arguments (they win) |
| ``FOLIO_VLLM_FALLBACK_ENGINE_ARGS`` | ``{}`` | the same, for the fallback engine only |
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.engines.base import EngineError
from model.gundam import DEFAULT_MAX_TILES, MAX_TILES, MIN_TILES


@dataclass(frozen=True)
class Speculation:
    name: str
    method: str | None  # None: no speculation
    tokens: int = 0
    # CUDA graphs with K > 1 MTP steps cost more capture memory than they save on these
    # sequences; K=3 runs eager, K=1 keeps the graphs.
    eager: bool = True

    def config(self) -> dict[str, Any] | None:
        if self.method is None:
            return None
        spec: dict[str, Any] = {"method": self.method, "num_speculative_tokens": self.tokens}
        if self.method == "ngram":
            spec.update(prompt_lookup_min=1, prompt_lookup_max=3)
        return spec


PRESETS: dict[str, Speculation] = {
    "k3-eager": Speculation("k3-eager", "mtp", 3, eager=True),
    "k1-graphs": Speculation("k1-graphs", "mtp", 1, eager=False),
    # n-gram prompt lookup: needs no draft head, and is what the CPU build proves.
    "ngram-k3": Speculation("ngram-k3", "ngram", 3, eager=True),
    "off": Speculation("off", None, eager=False),
}

# DeepSeek-OCR's n-gram blocker (the logits processor) as its own scripts set it up.
NGRAM_SIZE = 30
NGRAM_WINDOW = 90
# Table cells repeat by nature: never blocked.
NGRAM_WHITELIST_TOKENS = ("<td>", "</td>")


@dataclass(frozen=True)
class VllmConfig:
    model: str
    speculation: Speculation = PRESETS["k3-eager"]
    pages_in_flight: int = 32
    max_tokens: int = 8192
    max_tiles: int = DEFAULT_MAX_TILES
    page_timeout: float = 300.0
    repetition_fallback: bool = True
    extra_args: dict[str, Any] = field(default_factory=dict)
    fallback_extra_args: dict[str, Any] = field(default_factory=dict)
    # Benchmarks only: every page decodes exactly this many tokens (EOS ignored), as in the
    # published measurement with dummy weights; the repetition guard is then off.
    fixed_output_tokens: int = 0

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> VllmConfig:
        env = os.environ if environ is None else environ
        model = env.get("FOLIO_VLLM_MODEL", "").strip()
        if not model:
            raise EngineError("FOLIO_VLLM_MODEL is not set: the vLLM engine has no checkpoint")
        preset = env.get("FOLIO_VLLM_SPECULATION", "k3-eager").strip() or "k3-eager"
        if preset not in PRESETS:
            raise EngineError(
                f"FOLIO_VLLM_SPECULATION={preset!r} is not one of: {', '.join(PRESETS)}"
            )
        max_tiles = _int(env, "FOLIO_VLLM_MAX_TILES", DEFAULT_MAX_TILES)
        if not MIN_TILES <= max_tiles <= MAX_TILES:
            raise EngineError(f"FOLIO_VLLM_MAX_TILES must be {MIN_TILES}..{MAX_TILES}")
        fallback = env.get("FOLIO_VLLM_REPETITION_FALLBACK", "on").strip().lower()
        if fallback not in ("on", "off"):
            raise EngineError("FOLIO_VLLM_REPETITION_FALLBACK must be on or off")
        return cls(
            model=model,
            speculation=PRESETS[preset],
            pages_in_flight=_int(env, "FOLIO_VLLM_PAGES_IN_FLIGHT", 32, minimum=1),
            max_tokens=_int(env, "FOLIO_VLLM_MAX_TOKENS", 8192, minimum=1),
            max_tiles=max_tiles,
            page_timeout=float(_int(env, "FOLIO_VLLM_PAGE_TIMEOUT", 300, minimum=1)),
            repetition_fallback=fallback == "on",
            extra_args=_json(env, "FOLIO_VLLM_ENGINE_ARGS"),
            fallback_extra_args=_json(env, "FOLIO_VLLM_FALLBACK_ENGINE_ARGS"),
            fixed_output_tokens=_int(env, "FOLIO_VLLM_FIXED_OUTPUT_TOKENS", 0),
        )

    def engine_args(self, *, speculation: Speculation | None) -> dict[str, Any]:
        """vLLM ``EngineArgs`` for the main engine (with ``speculation``) or the fallback."""
        args: dict[str, Any] = {
            "model": self.model,
            "tokenizer": self.model,
            "trust_remote_code": True,
            # Each page is a new image: nothing to share between prompts, and the processor
            # cache only holds memory.
            "enable_prefix_caching": False,
            "mm_processor_cache_gb": 0,
            "limit_mm_per_prompt": {"image": 1},
            "max_num_seqs": self.pages_in_flight,
            "enforce_eager": speculation.eager if speculation else True,
            # The main engine's Prometheus logger is the one exported; a second one would
            # unregister the first's metrics.
            "disable_log_stats": False,
        }
        if speculation is not None and speculation.method is not None:
            args["speculative_config"] = speculation.config()
        args.update(self.extra_args)
        return args

    def fallback_args(self) -> dict[str, Any]:
        """The engine runaway pages are retried on: no speculation, so DeepSeek-OCR's n-gram
        logits processor may run; few sequences (runaway pages are rare)."""
        args = self.engine_args(speculation=None)
        args.update(max_num_seqs=4, enforce_eager=True, disable_log_stats=True)
        args.pop("speculative_config", None)
        args.update(self.fallback_extra_args)
        return args


def has_draft_head(model: str) -> bool:
    """Whether the checkpoint ships an MTP draft layer (``num_nextn_predict_layers`` > 0 in its
    language model's configuration). Without one, MTP presets fall back to no speculation."""
    try:
        config = json.loads((Path(model) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    for section in (config, config.get("language_config") or {}, config.get("text_config") or {}):
        if int(section.get("num_nextn_predict_layers") or 0) > 0:
            return True
    return False


def _int(env: Any, name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise EngineError(f"{name} must be a whole number, not {raw!r}") from None
    if value < minimum:
        raise EngineError(f"{name} must be at least {minimum}, not {value}")
    return value


def _json(env: Any, name: str) -> dict[str, Any]:
    raw = env.get(name, "").strip()
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise EngineError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise EngineError(f"{name} must be a JSON object")
    return value
