"""Folio's own vLLM registration of a FastMTP draft for DeepSeek-OCR-shaped checkpoints.

Imports vLLM: only the vLLM processes load it (through ``checkpoint.register_glue``, which the
worker calls before it starts vLLM and Folio's ``vllm.general_plugins`` entry point calls in
every process vLLM spawns). Written against vLLM 0.32's own source:

- ``SpeculativeConfig.__post_init__`` (vllm/config/speculative.py) builds the draft's
  ``ModelConfig`` from the target's folder with ``hf_overrides=SpeculativeConfig.
  hf_config_override``; that maps only DeepSeek-V3-family model types to ``deepseek_mtp``, and
  any other type raises "Unsupported speculative method: 'mtp'". vLLM's config class for
  DeepSeek-OCR (``DeepseekVLV2Config``, vllm/transformers_utils/configs/deepseek_vl2.py)
  turns ``DeepseekOCRForCausalLM`` checkpoints into model type ``deepseek_ocr``. Folio wraps
  the override: for ``deepseek_ocr`` it returns the decoder's own configuration as a
  ``deepseek_mtp`` draft of one layer (``n_predict`` 1, so K > 1 re-applies the same block,
  FastMTP's recursion) whose architecture is ``FolioDeepseekOCRFastMTP``; every other type
  goes to vLLM's own mapping unchanged. The draft lists ``DeepSeekMTPModel`` after its own
  architecture: vLLM's proposer reads ``DeepSeekMTP``'s two outputs (hidden state for the
  logits, post-norm hidden state for the next step) only for the MTP architectures it names.
- The draft is vLLM's ``DeepSeekMTP`` (vllm/model_executor/models/deepseek_mtp.py) with the
  MTP layer's block made dense (``first_k_dense_replace`` past it: FastMTP's head is one dense
  decoder layer) and its own weight loading through Folio's one draft mapping
  (``model.fastmtp.layout``, which the preflight and the other loaders use too): jina-ocr-v1's
  published ``mtp_module.heads.0.*`` (or ``mtp_module.*``, or DeepSeek-V3's
  ``model.layers.<num_hidden_layers>.*``) onto vLLM's parameters, plain multi-head
  ``q/k/v_proj`` stacked into ``qkv_proj`` as DeepSeek-OCR's decoder has them, the config's
  ``mtp_*`` keys (copied from the checkpoint's top level into the draft's config) saying what
  the head shares: with ``mtp_share_norm`` its final norm is the target's ``model.norm``. A
  draft without its own embedding or output head reads the decoder's (vLLM's proposer then
  shares the target's, ``_maybe_share_embeddings`` / ``_maybe_share_lm_head`` in
  vllm/v1/spec_decode/llm_base_proposer.py; an own head is kept by ``has_own_lm_head``).
- vLLM's ``DeepseekOCRForCausalLM`` loads every tensor of the folder through its
  ``AutoWeightsLoader`` and rejects the draft's, which is why public serving scripts strip
  them. Folio registers a subclass under the same architecture name that leaves the draft
  tensors to the draft.

vLLM's own conventions for the draft (which ``model.fastmtp`` follows too): the embedding at
position 0 is zeroed, the post-final-norm hidden state is recycled into the next draft step,
the decoder's RoPE settings (``rope_parameters``) apply to the draft layer.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from vllm import ModelRegistry
from vllm.config.speculative import SpeculativeConfig
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.models.deepseek_mtp import DeepSeekMTP
from vllm.model_executor.models.deepseek_ocr import DeepseekOCRForCausalLM
from vllm.model_executor.models.interfaces import SupportsMultiModalEmbeddings
from vllm.model_executor.models.utils import _merge_multimodal_embeddings

from model.fastmtp.layout import (
    EMBEDDING,
    HEAD,
    MTP_KEYS,
    NORM,
    DraftLoadError,
    check_shapes,
    plan_draft,
    wanted,
)

# A child of vLLM's logger: these lines are written where vLLM writes its own, in every process
# vLLM spawns (a logger of Folio's own has no handler in vLLM's engine-core process).
logger = logging.getLogger("vllm.folio.fastmtp")

DRAFT_ARCHITECTURE = "FolioDeepseekOCRFastMTP"
# The draft's ``architectures``: see ``draft_config``.
DRAFT_ARCHITECTURES = (DRAFT_ARCHITECTURE, "DeepSeekMTPModel")
TARGET_ARCHITECTURE = "DeepseekOCRForCausalLM"
TARGET_MODEL_TYPES = ("deepseek_ocr",)
DRAFT_PREFIXES = ("mtp_module.", "mtp_embed_tokens.")
_STACKED = {
    "self_attn.q_proj.": ("self_attn.qkv_proj.", "q"),
    "self_attn.k_proj.": ("self_attn.qkv_proj.", "k"),
    "self_attn.v_proj.": ("self_attn.qkv_proj.", "v"),
    "mlp.gate_proj.": ("mlp.gate_up_proj.", 0),
    "mlp.up_proj.": ("mlp.gate_up_proj.", 1),
}


# --- the speculative config's draft mapping ----------------------------------------------------


def is_folio_target(hf_config: Any) -> bool:
    architectures = getattr(hf_config, "architectures", None) or [""]
    return (
        getattr(hf_config, "model_type", "") in TARGET_MODEL_TYPES
        and architectures[0] == TARGET_ARCHITECTURE
    )


def draft_config(hf_config: Any) -> Any:
    """The draft's configuration: the decoder's, as a one-layer dense ``deepseek_mtp``."""
    text = copy.deepcopy(hf_config.get_text_config())
    layers = int(text.num_hidden_layers)
    # jina-ocr-v1 keeps its head's settings at the config's top level: the draft's loader
    # reads them from its own config.
    text.update({key: getattr(hf_config, key) for key in MTP_KEYS if hasattr(hf_config, key)})
    text.update(
        {
            # Folio's class first: vLLM's registry builds the first listed architecture it
            # knows. DeepSeek's own MTP name second, for the proposer alone: it unpacks
            # ``DeepSeekMTP``'s (pre-norm, post-norm) output only for the architectures it
            # lists (``model_returns_tuple``, vllm/v1/spec_decode/llm_base_proposer.py), and
            # otherwise indexes the tuple as a tensor, which raised IndexError at the first draft.
            # (A process where Folio's glue did not register cannot fall back to vLLM's own
            # DeepSeekMTP unnoticed: vLLM's DeepSeek-OCR class, which Folio's registration
            # replaces too, refuses the checkpoint's draft tensors there.)
            "architectures": list(DRAFT_ARCHITECTURES),
            "n_predict": 1,
            "num_nextn_predict_layers": 1,
            # DeepseekV2DecoderLayer makes layer i a MoE layer when i >= first_k_dense_replace;
            # the FastMTP block (layer index num_hidden_layers) is dense.
            "first_k_dense_replace": layers + 1,
        }
    )
    text.model_type = "deepseek_mtp"
    return text


def draft_hf_config_override(hf_config: Any) -> Any:
    """``SpeculativeConfig.hf_config_override`` with DeepSeek-OCR added; module level so that the
    draft ``ModelConfig`` that holds it pickles into vLLM's engine-core process."""
    if is_folio_target(hf_config):
        return draft_config(hf_config)
    return _upstream_override()(hf_config)


def _upstream_override() -> Callable[[Any], Any]:
    saved = SpeculativeConfig.__dict__.get("_folio_upstream_hf_config_override")
    if saved is not None:
        return saved.__func__ if isinstance(saved, staticmethod) else saved
    return SpeculativeConfig.hf_config_override


# --- the draft model ----------------------------------------------------------------------------


class FolioDeepseekOCRFastMTP(DeepSeekMTP, SupportsMultiModalEmbeddings):
    """vLLM's DeepSeek MTP draft, loading a FastMTP head out of a DeepSeek-OCR checkpoint.

    It reads the page as the decoder did: at image positions, the page's features, not the
    ``<image>`` token's embedding. vLLM's proposer hands a draft the target's multimodal
    embeddings only when the draft says it merges them (``supports_multimodal_embeddings``;
    otherwise it logs "using text-only draft inputs", ``load_model`` in
    vllm/v1/spec_decode/llm_base_proposer.py), and then calls ``embed_input_ids`` with them
    for the prefill (``build_model_inputs_first_pass``), as it does for vLLM's own multimodal
    MTP drafts (e.g. ``BailingMoeV3MTPModel``)."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__(vllm_config=_as_draft(vllm_config), prefix=prefix)
        self._read_features = False  # said once in the log, for the runbook and the tier

    def embed_input_ids(
        self,
        input_ids: torch.Tensor,
        multimodal_embeddings: Any = None,
        *,
        is_multimodal: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The draft's token embeddings, with the page's features over the image positions."""
        embeds: torch.Tensor = super().embed_input_ids(input_ids)
        if multimodal_embeddings is None or len(multimodal_embeddings) == 0:
            return embeds
        if is_multimodal is None:
            raise ValueError("page features without the mask of their positions")
        if not self._read_features:
            self._read_features = True
            logger.info(
                "FastMTP draft reads the page's features at %d image positions",
                int(is_multimodal.sum()),
            )
        merged: torch.Tensor = _merge_multimodal_embeddings(
            inputs_embeds=embeds,
            multimodal_embeddings=multimodal_embeddings,
            is_multimodal=is_multimodal,
        )
        return merged

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        layer = self.model.mtp_start_layer_idx  # == the decoder's num_hidden_layers
        config = self.config.to_dict()
        kept = {name: tensor for name, tensor in weights if wanted(name, layer)}
        try:
            plan = plan_draft(kept, config)
            if plan is None:
                raise DraftLoadError("the checkpoint has no draft tensors")
            check_shapes(plan, {name: tuple(t.shape) for name, t in kept.items()}, config)
        except (DraftLoadError, KeyError) as exc:
            raise ValueError(f"FastMTP draft: {exc}") from None
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for target, name in plan.sources.items():
            loaded.add(_load_block_param(params, layer, target, kept[name]))
        for target in (EMBEDDING, HEAD):  # shared and absent from the files: the target's
            if target not in plan.sources:
                loaded.add(_vllm_name(target, layer))
        # The proposer shares the target's embedding and output head unless the draft brought
        # its own (it reads ``lm_head`` to compare, so an own head is named there too).
        self.has_own_embed_tokens = plan.own_embedding
        self.has_own_lm_head = plan.own_head
        if plan.own_head:
            self.lm_head = self.model.layers[str(layer)].shared_head.head
        missing = sorted(set(params) - loaded)
        if missing:
            raise ValueError(f"FastMTP draft: the checkpoint leaves {missing} unset")
        logger.info(
            "FastMTP draft loaded: %d parameters (%s layout, %s*; own embedding: %s, own"
            " norm: %s, own head: %s; %d shared copies ignored)",
            len(loaded),
            plan.layout,
            plan.prefix,
            plan.own_embedding,
            plan.own_norm,
            plan.own_head,
            len(plan.ignored),
        )
        return loaded


def _as_draft(vllm_config: Any) -> Any:
    """The proposer builds the draft with the *target's* ``model_config``
    (``_create_draft_vllm_config`` in llm_base_proposer.py), and ``DeepSeekMTP`` reads the layer
    count and vocabulary from it: a DeepSeek-V3 target has them at its top level, DeepSeek-OCR's
    ``DeepseekVLV2Config`` keeps them in its text config. Hand it the draft's own model config
    (a shallow copy: every other part, the attention-layer registry included, is shared)."""
    draft = vllm_config.speculative_config.draft_model_config
    if vllm_config.model_config is draft:
        return vllm_config
    config = copy.copy(vllm_config)
    object.__setattr__(config, "model_config", draft)
    return config


def _load(params: dict[str, Any], name: str, tensor: torch.Tensor, shard: Any = None) -> str:
    if name not in params:
        raise ValueError(f"FastMTP draft: the vLLM draft has no parameter {name}")
    param = params[name]
    loader = getattr(param, "weight_loader", default_weight_loader)
    if shard is None:
        loader(param, tensor)
    else:
        loader(param, tensor, shard)
    return name


def _vllm_name(target: str, layer: int) -> str:
    """The vLLM draft parameter a block parameter loads into (before q/k/v and gate/up
    stacking)."""
    if target == EMBEDDING:
        return "model.embed_tokens.weight"
    if target == NORM:
        return f"model.layers.{layer}.shared_head.norm.weight"
    if target == HEAD:
        return f"model.layers.{layer}.shared_head.head.weight"
    if target.startswith("block."):
        return f"model.layers.{layer}.mtp_block." + target.removeprefix("block.")
    return f"model.layers.{layer}.{target}"


def _load_block_param(params: dict[str, Any], layer: int, target: str, tensor: torch.Tensor) -> str:
    name = _vllm_name(target, layer)
    for part, (stacked, shard) in _STACKED.items():
        if f".mtp_block.{part}" in name:
            return _load(params, name.replace(part, stacked, 1), tensor, shard)
    return _load(params, name, tensor)


# --- the target model ---------------------------------------------------------------------------


class FolioDeepseekOCRForCausalLM(DeepseekOCRForCausalLM):
    """vLLM's DeepSeek-OCR, leaving a checkpoint's FastMTP draft tensors to the draft."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        # The proposer copies the target's image token into the draft's config under this name
        # (``load_model`` in llm_base_proposer.py); DeepseekVLV2Config has no such field.
        self.config.image_token_index = self.image_token_id

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        layer = int(self.config.get_text_config().num_hidden_layers)
        loaded: set[str] = super().load_weights(_without_draft(weights, layer))
        return loaded


def _without_draft(
    weights: Iterable[tuple[str, torch.Tensor]], layer: int
) -> Iterator[tuple[str, torch.Tensor]]:
    v3 = f"model.layers.{layer}."
    for name, tensor in weights:
        if not name.startswith(DRAFT_PREFIXES) and not name.startswith(v3):
            yield name, tensor


# --- registration -------------------------------------------------------------------------------


def register() -> None:
    """Idempotent: vLLM may load its general plugins more than once per process."""
    ModelRegistry.register_model(DRAFT_ARCHITECTURE, f"{__name__}:FolioDeepseekOCRFastMTP")
    ModelRegistry.register_model(TARGET_ARCHITECTURE, f"{__name__}:FolioDeepseekOCRForCausalLM")
    if "_folio_upstream_hf_config_override" not in SpeculativeConfig.__dict__:
        SpeculativeConfig._folio_upstream_hf_config_override = SpeculativeConfig.__dict__[
            "hf_config_override"
        ]
        SpeculativeConfig.hf_config_override = staticmethod(draft_hf_config_override)
