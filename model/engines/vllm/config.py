"""The vLLM engine's configuration: read from the environment, turned into engine arguments.

Nothing here imports vLLM, so a bad setting is reported before the heavy import.

| variable | default | what |
|---|---|---|
| ``FOLIO_VLLM_MODEL`` | (required) | the checkpoint's folder (jina-ocr-v1 or DeepSeek-OCR) |
| ``FOLIO_VLLM_SPECULATION`` | see below | a preset: ``k3-graphs``, ``k1-graphs``, ``off``... |
| ``FOLIO_VLLM_PAGES_IN_FLIGHT`` | 32 | pages decoded at once (vLLM's ``max_num_seqs``) |
| ``FOLIO_VLLM_MAX_TOKENS`` | 8192 | output cap per page (``max_model_len`` follows from it) |
| ``FOLIO_VLLM_PAGE_TIMEOUT`` | 300 | seconds before a page's request is aborted |
| ``FOLIO_VLLM_PROMPT`` | jina-ocr-v1's | the instruction after the image |
| ``FOLIO_VLLM_REPETITION_FALLBACK`` | ``off`` | ``on``: a second in-process engine for runaways |
| ``FOLIO_VLLM_OVERHEAD_GIB`` | 2 | memory plan: room kept for CUDA graphs and activations |
| ``FOLIO_VLLM_PLUGIN`` | (none) | ``module:function``: the draft head's glue, instead of Folio's |
| ``FOLIO_VLLM_ENGINE_ARGS`` | ``{}`` | JSON of further vLLM engine arguments (they win) |
| ``FOLIO_VLLM_FALLBACK_ENGINE_ARGS`` | ``{}`` | the same, for the fallback engine only |

The presets: ``k1-graphs``, ``k3-graphs``, ``k1-eager``, ``k3-eager`` (MTP at K=1 or 3, with CUDA
graphs or eager), ``ngram-k3``, ``off`` and ``off-eager``. The output cap, when not set, is
lowered to what the decoder's ``max_position_embeddings`` leaves (``launch.plan_launch``).

The speculation preset, when not set: MTP for a checkpoint with a FastMTP draft head, at the
checkpoint's own K (its config's ``mtp_num_speculative_steps``; 1 without the key), with CUDA
graphs unless ``"enforce_eager": true`` is in ``FOLIO_VLLM_ENGINE_ARGS``; ``off`` for a
checkpoint without a draft head. The seeds measured K=1 with CUDA graphs as the best point
(158.3 → 185.6 tok/s) and K=3 paying only in eager mode: docs/GPU.md's bench decides on the
real machine, and ``FOLIO_VLLM_SPECULATION`` pins what it found. An MTP preset asked for on a
checkpoint without a draft head is an error, never a silent fall back.

Tiles: vLLM 0.32 caps DeepSeek-OCR's Gundam grid at ``MAX_CROPS = 6`` (a module constant in
vllm/transformers_utils/processors/deepseek_ocr.py, which its placeholder count also uses), so
Folio has no setting for it: passing a larger cap to the processor alone would desynchronise the
placeholders from the image features.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from model import gundam
from model.config import (
    ConfigError,
    env_choice,
    env_float,
    env_int,
    env_json_object,
    env_required,
    env_str,
)
from model.engines.vllm.prompt import JINA_OCR_PROMPT


@dataclass(frozen=True)
class Speculation:
    name: str
    method: str | None  # None: no speculation
    tokens: int = 0
    # Each preset keeps the mode the seeds measured it in: K=1 with CUDA graphs, K=3 eager.
    eager: bool = True

    def config(self) -> dict[str, Any] | None:
        if self.method is None:
            return None
        spec: dict[str, Any] = {"method": self.method, "num_speculative_tokens": self.tokens}
        if self.method == "ngram":
            spec.update(prompt_lookup_min=1, prompt_lookup_max=3)
        return spec


PRESETS: dict[str, Speculation] = {
    "k1-graphs": Speculation("k1-graphs", "mtp", 1, eager=False),
    "k3-graphs": Speculation("k3-graphs", "mtp", 3, eager=False),
    "k1-eager": Speculation("k1-eager", "mtp", 1, eager=True),
    "k3-eager": Speculation("k3-eager", "mtp", 3, eager=True),
    # n-gram prompt lookup: needs no draft head.
    "ngram-k3": Speculation("ngram-k3", "ngram", 3, eager=True),
    "off": Speculation("off", None, eager=False),
    "off-eager": Speculation("off-eager", None, eager=True),
}

# vLLM 0.32's tile cap for DeepSeek-OCR (MAX_CROPS in its processor); see the module docstring.
VLLM_MAX_TILES = 6
# Room for the prompt's text tokens (BOS, the newline after the image, the instruction) in
# max_model_len: jina-ocr-v1's longer prompt fits (prompt.py); the launch counts the prompt
# with the checkpoint's tokenizer and refuses one that does not fit (``launch.plan_launch``).
PROMPT_TEXT_ALLOWANCE = 192
DEFAULT_MAX_TOKENS = 8192


def max_image_placeholders(max_tiles: int = VLLM_MAX_TILES) -> int:
    """The most image placeholder tokens one page can take (the widest grid, separators in)."""
    grids = [gundam.NO_TILES, *gundam.candidate_grids(max_tiles)]
    return max(gundam.placeholder_count(grid) for grid in grids)


def default_preset(
    *, has_draft: bool, extra_args: dict[str, Any], draft_k: int | None = None
) -> Speculation:
    """MTP at the checkpoint's K (``draft_k``, its ``mtp_num_speculative_steps``; 1 without
    it), CUDA graphs unless the engine arguments turn them off; ``off`` without a draft head."""
    if not has_draft:
        return PRESETS["off"]
    k = draft_k or 1
    eager = bool(extra_args.get("enforce_eager"))
    name = f"k{k}-{'eager' if eager else 'graphs'}"
    return PRESETS.get(name) or Speculation(name, "mtp", k, eager=eager)


# DeepSeek-OCR's n-gram blocker (the logits processor) as its own scripts set it up.
NGRAM_SIZE = 30
NGRAM_WINDOW = 90
# Table cells repeat by nature: never blocked.
NGRAM_WHITELIST_TOKENS = ("<td>", "</td>")


@dataclass(frozen=True)
class VllmConfig:
    model: str
    # None: chosen by the checkpoint when the engine loads (``default_preset``).
    speculation: Speculation | None = None
    pages_in_flight: int = 32
    # None (unset): DEFAULT_MAX_TOKENS, lowered by the launch to what the decoder's positions
    # leave (``launch.plan_launch``).
    max_tokens: int | None = None
    page_timeout: float = 300.0
    prompt: str = JINA_OCR_PROMPT
    repetition_fallback: bool = False
    overhead_gib: float = 2.0
    plugin: str = ""  # FOLIO_VLLM_PLUGIN, module:function
    extra_args: dict[str, Any] = field(default_factory=dict)
    fallback_extra_args: dict[str, Any] = field(default_factory=dict)
    # Benchmarks on a folder without weights only: every page decodes exactly this many tokens
    # (EOS ignored); the repetition guard is then off.
    fixed_output_tokens: int = 0
    # DeepSeek-OCR's n-gram blocker on every page decoded without speculation (the product's
    # way); a benchmark turns it off to decode every preset under the same constraints.
    ngram_blocker: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> VllmConfig:
        """The ``FOLIO_VLLM_*`` settings (table above); a malformed one raises
        ``model.config.ConfigError`` naming it, before anything heavy is imported."""
        env = os.environ if environ is None else environ
        model = env_required(
            "FOLIO_VLLM_MODEL", what="the vLLM engine has no checkpoint", environ=env
        )
        preset = env_choice("FOLIO_VLLM_SPECULATION", "", ("", *PRESETS), environ=env)
        if env_str("FOLIO_VLLM_MAX_TILES", environ=env).strip():
            raise ConfigError(
                "FOLIO_VLLM_MAX_TILES is gone: vLLM 0.32 fixes DeepSeek-OCR's tile cap at"
                f" {VLLM_MAX_TILES}; unset it"
            )
        fallback = env_choice("FOLIO_VLLM_REPETITION_FALLBACK", "off", ("on", "off"), environ=env)
        return cls(
            model=model,
            speculation=PRESETS[preset] if preset else None,
            pages_in_flight=env_int("FOLIO_VLLM_PAGES_IN_FLIGHT", 32, minimum=1, environ=env),
            max_tokens=env_int("FOLIO_VLLM_MAX_TOKENS", 0, minimum=1, environ=env) or None,
            page_timeout=float(env_int("FOLIO_VLLM_PAGE_TIMEOUT", 300, minimum=1, environ=env)),
            prompt=env_str("FOLIO_VLLM_PROMPT", environ=env).strip() or JINA_OCR_PROMPT,
            repetition_fallback=fallback == "on",
            overhead_gib=env_float("FOLIO_VLLM_OVERHEAD_GIB", 2.0, minimum=0, environ=env),
            plugin=_plugin(env),
            extra_args=env_json_object("FOLIO_VLLM_ENGINE_ARGS", environ=env),
            fallback_extra_args=env_json_object("FOLIO_VLLM_FALLBACK_ENGINE_ARGS", environ=env),
            fixed_output_tokens=env_int(
                "FOLIO_VLLM_FIXED_OUTPUT_TOKENS", 0, minimum=0, environ=env
            ),
        )

    def blocks_ngrams(self, speculation: Speculation) -> bool:
        """Whether pages decoded under ``speculation`` carry DeepSeek-OCR's n-gram blocker:
        every preset without speculation does (``off``, ``off-eager``, and so every worker on
        the no-speculation queue, which ``settle_no_speculation`` holds to those two), unless a
        benchmark turned it off to decode every preset alike. Under speculation vLLM refuses
        the logits processor (docs/GPU.md)."""
        return speculation.method is None and self.ngram_blocker

    def ngram_args(self, whitelist_token_ids: list[int]) -> dict[str, Any]:
        """The blocker's per-request settings, as DeepSeek-OCR's own scripts set them."""
        return {
            "ngram_size": NGRAM_SIZE,
            "window_size": NGRAM_WINDOW,
            "whitelist_token_ids": list(whitelist_token_ids),
        }

    @property
    def output_cap(self) -> int:
        return self.max_tokens or DEFAULT_MAX_TOKENS

    @property
    def max_model_len(self) -> int:
        """Visual tokens of the widest page + the prompt's text + the output cap."""
        return max_image_placeholders() + PROMPT_TEXT_ALLOWANCE + self.output_cap

    def engine_args(self, *, speculation: Speculation | None) -> dict[str, Any]:
        """vLLM ``EngineArgs`` for the main engine (with ``speculation``) or the fallback."""
        args: dict[str, Any] = {
            "model": self.model,
            "tokenizer": self.model,
            "trust_remote_code": True,
            # Unset, vLLM takes the decoder's max_position_embeddings and sizes the KV cache
            # and the scheduler for pages 30 times longer than any can be.
            "max_model_len": self.max_model_len,
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


def _plugin(env: Mapping[str, str]) -> str:
    from model.engines.vllm.draft import DraftRouteError, named_plugin

    try:
        return named_plugin(env)
    except DraftRouteError as exc:
        raise ConfigError(str(exc)) from None
