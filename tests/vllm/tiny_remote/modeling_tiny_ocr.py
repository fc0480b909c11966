"""Remote code of the tiny test checkpoint: a DeepSeek-OCR-shaped model in miniature.

What ``AutoModelForCausalLM.from_pretrained(folder, trust_remote_code=True)`` builds from the
tiny checkpoint (``tests/vllm/tiny_checkpoint.py``). Its calling convention is DeepSeek-OCR's
public Hugging Face code's (``DeepseekOCRForCausalLM`` in ``modeling_deepseekocr.py`` of
deepseek-ai/DeepSeek-OCR), which is what Folio's ``transformers`` engine must drive:

- ``forward(input_ids, attention_mask, position_ids, past_key_values, use_cache,
  output_hidden_states, images=[(crops, global_views)], images_seq_mask,
  images_spatial_crop)``: on a prefill (more than one new token) whose global view is not all
  zeros, the page's features replace the token embeddings where ``images_seq_mask`` is true;
  a step without an image passes zero tensors, as the public ``infer`` does for a text prompt;
- the features come in the public code's order: the tiles' grid (one newline embedding after
  each row), then the global view's 16 × 16 grid (a newline after each row), then one view
  separator: (10·w + 1)·(10·h) + (16 + 1)·16 + 1 vectors for a page cut into w × h tiles.

Its decoder is the checkpoint's DeepSeek-V2 shape (first layer dense, the others routed plus
shared experts with greedy top-k softmax routing, plain multi-head attention with RoPE) under
DeepSeek-OCR's tensor names, so it reads the same ``model.safetensors`` as vLLM does. The
vision side is a stand-in, not SAM-B and CLIP-L: each view is average-pooled to its grid of
patches (64 × 64 pixels each) and padded to 2048 wide vectors, which go through DeepSeek-OCR's
projector (``model.projector.layers``, read from the checkpoint as vLLM reads it). Unlike the
public code it refuses a mask whose count is not its feature count (the public code's
``masked_scatter_`` would take a prefix silently): the engine's token layout is what the tests
hold it to.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_tiny_ocr import TinyOcrConfig

PATCH_PIXELS = 64  # 1024 / 16 and 640 / 10: one feature per 64 × 64 pixels
PROJECTOR_INPUT = 2048


class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * scale).to(x.dtype) * self.weight


def rotate(x: Tensor, positions: Tensor, theta: float) -> Tensor:
    """Rotary embedding, the half-split (GPT-NeoX) layout; x is (B, heads, Q, head_dim)."""
    half = x.shape[-1] // 2
    freqs = theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = positions[:, None, :, None].float() * freqs  # (B, 1, Q, half)
    cos, sin = angles.cos(), angles.sin()
    a, b = x[..., :half].float(), x[..., half:].float()
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, config: TinyOcrConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.heads = config.num_attention_heads
        self.head_dim = width // self.heads
        self.theta = float(getattr(config, "rope_theta", 10000.0))
        self.q_proj = nn.Linear(width, width, bias=False)
        self.k_proj = nn.Linear(width, width, bias=False)
        self.v_proj = nn.Linear(width, width, bias=False)
        self.o_proj = nn.Linear(width, width, bias=False)

    def forward(
        self, x: Tensor, positions: Tensor, mask: Tensor, past: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        b, q, _ = x.shape

        def split(t: Tensor) -> Tensor:
            return t.view(b, q, self.heads, self.head_dim).transpose(1, 2)

        query = rotate(split(self.q_proj(x)), positions, self.theta)
        key = rotate(split(self.k_proj(x)), positions, self.theta)
        value = split(self.v_proj(x))
        if past is not None:
            key = torch.cat([past[0], key], dim=2)
            value = torch.cat([past[1], value], dim=2)
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, q, -1)), (key, value)


class DenseMLP(nn.Module):
    def __init__(self, width: int, inner: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(width, inner, bias=False)
        self.up_proj = nn.Linear(width, inner, bias=False)
        self.down_proj = nn.Linear(inner, width, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    """Routed experts (greedy top-k of a softmax) plus always-on shared experts."""

    def __init__(self, config: TinyOcrConfig) -> None:
        super().__init__()
        width, inner = config.hidden_size, config.moe_intermediate_size
        self.top_k = config.num_experts_per_tok
        self.gate = nn.Linear(width, config.n_routed_experts, bias=False)
        self.experts = nn.ModuleList(DenseMLP(width, inner) for _ in range(config.n_routed_experts))
        self.shared_experts = DenseMLP(width, inner * config.n_shared_experts)

    def forward(self, x: Tensor) -> Tensor:
        scores = self.gate(x).float().softmax(-1)
        weights, chosen = scores.topk(self.top_k, dim=-1)
        out = self.shared_experts(x)
        for slot in range(self.top_k):
            for index, expert in enumerate(self.experts):
                picked = (chosen[..., slot] == index).unsqueeze(-1)
                if picked.any():
                    gain = (weights[..., slot : slot + 1] * picked).to(x.dtype)
                    out = out + expert(x) * gain
        return out


class DecoderLayer(nn.Module):
    def __init__(self, config: TinyOcrConfig, index: int) -> None:
        super().__init__()
        eps = config.rms_norm_eps
        self.input_layernorm = RMSNorm(config.hidden_size, eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, eps)
        dense = index < config.first_k_dense_replace
        self.mlp: nn.Module = (
            DenseMLP(config.hidden_size, config.intermediate_size) if dense else MoE(config)
        )

    def forward(
        self, x: Tensor, positions: Tensor, mask: Tensor, past: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        attended, kv = self.self_attn(self.input_layernorm(x), positions, mask, past)
        x = x + attended
        return x + self.mlp(self.post_attention_layernorm(x)), kv


class VisionStandIn(nn.Module):
    """Not a vision encoder: a view's mean colour per 64 × 64 patch, padded to the 2048 wide
    vectors DeepSeek-OCR's projector takes (its SAM and CLIP features, concatenated)."""

    def forward(self, views: Tensor) -> Tensor:  # (N, 3, H, W) -> (N, H/64, W/64, 2048)
        grid = F.avg_pool2d(views, PATCH_PIXELS).permute(0, 2, 3, 1)
        return F.pad(grid, (0, PROJECTOR_INPUT - grid.shape[-1]))


class Projector(nn.Module):
    """DeepSeek-OCR's linear projector, under its name (``model.projector.layers``)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.layers = nn.Linear(PROJECTOR_INPUT, width)

    def forward(self, features: Tensor) -> Tensor:
        return self.layers(features)


class TinyOcrModel(nn.Module):
    def __init__(self, config: TinyOcrConfig) -> None:
        super().__init__()
        width = config.hidden_size
        self.embed_tokens = nn.Embedding(config.vocab_size, width)
        self.layers = nn.ModuleList(
            DecoderLayer(config, i) for i in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(width, config.rms_norm_eps)
        self.vision = VisionStandIn()
        self.projector = Projector(width)
        self.image_newline = nn.Parameter(torch.zeros(width))
        self.view_seperator = nn.Parameter(torch.zeros(width))

    def page_features(self, crops: Tensor, global_view: Tensor, grid: Tensor) -> Tensor:
        """One page's features in the public code's order: tiles, global view, separator."""
        width = self.embed_tokens.embedding_dim
        parts = []
        columns, rows = int(grid[0]), int(grid[1])
        if crops.abs().sum() != 0:
            tiles = self.projector(self.vision(crops))  # (rows·columns, 10, 10, width)
            side = tiles.shape[1]
            tiles = tiles.view(rows, columns, side, side, width).permute(0, 2, 1, 3, 4)
            parts.append(self.with_newlines(tiles.reshape(rows * side, columns * side, width)))
        parts.append(self.with_newlines(self.projector(self.vision(global_view))[0]))
        parts.append(self.view_seperator[None, :])
        return torch.cat(parts)

    def with_newlines(self, grid: Tensor) -> Tensor:
        newline = self.image_newline.to(grid.dtype).expand(grid.shape[0], 1, -1)
        return torch.cat([grid, newline], dim=1).reshape(-1, grid.shape[-1])

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None,
        position_ids: Tensor | None,
        past_key_values: tuple[tuple[Tensor, Tensor], ...] | None,
        output_hidden_states: bool,
        images: list[tuple[Tensor, Tensor]] | None,
        images_seq_mask: Tensor | None,
        images_spatial_crop: Tensor | None,
    ) -> tuple[Tensor, tuple[tuple[Tensor, Tensor], ...], tuple[Tensor, ...] | None]:
        x = self.embed_tokens(input_ids)
        b, q = input_ids.shape
        if q != 1 and images is not None and images[0][1].abs().sum() != 0:
            assert images_seq_mask is not None and images_spatial_crop is not None
            x = x.clone()
            for row, (crops, global_view) in enumerate(images):
                features = self.page_features(crops, global_view, images_spatial_crop[row])
                mask = images_seq_mask[row]
                if int(mask.sum()) != features.shape[0]:
                    raise ValueError(
                        f"images_seq_mask marks {int(mask.sum())} positions, the page has"
                        f" {features.shape[0]} features"
                    )
                x[row, mask] = features.to(x.dtype)
        past_len = past_key_values[0][0].shape[2] if past_key_values else 0
        if attention_mask is None:
            attention_mask = torch.ones(b, past_len + q, dtype=torch.long, device=x.device)
        if position_ids is None:
            position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)[:, -q:]
        slots = torch.arange(past_len + q, device=x.device)
        causal = slots[None, :] <= (past_len + torch.arange(q, device=x.device))[:, None]
        mask = causal[None] & attention_mask.bool()[:, None, :]
        # A padding query sees at least itself (its output is never read): no all-masked rows.
        mask = mask | (slots[None, :] == past_len + torch.arange(q, device=x.device)[:, None])
        mask = mask[:, None]  # (B, 1, Q, S)
        hidden: list[Tensor] = []
        cache = []
        for i, layer in enumerate(self.layers):
            if output_hidden_states:
                hidden.append(x)
            x, kv = layer(x, position_ids, mask, past_key_values[i] if past_key_values else None)
            cache.append(kv)
        x = self.norm(x)
        if output_hidden_states:
            hidden.append(x)
        return x, tuple(cache), tuple(hidden) if output_hidden_states else None


class TinyOcrForCausalLM(PreTrainedModel):
    config_class = TinyOcrConfig
    base_model_prefix = "model"
    # The checkpoint's FastMTP head is not this model's: Folio's engine reads it itself.
    _keys_to_ignore_on_load_unexpected = [r"^mtp_module\.", r"^mtp_embed_tokens\."]

    def __init__(self, config: TinyOcrConfig) -> None:
        super().__init__(config)
        self.model = TinyOcrModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, TinyOcrModel):
            std = self.config.hidden_size**-0.5
            with torch.no_grad():
                module.image_newline.normal_(0.0, std)
                module.view_seperator.normal_(0.0, std)

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_values: tuple[tuple[Tensor, Tensor], ...] | None = None,
        inputs_embeds: Tensor | None = None,
        use_cache: bool | None = None,
        output_hidden_states: bool | None = None,
        images: list[tuple[Tensor, Tensor]] | None = None,
        images_seq_mask: Tensor | None = None,
        images_spatial_crop: Tensor | None = None,
        return_dict: bool | None = None,
        **_: Any,
    ) -> CausalLMOutputWithPast:
        if input_ids is None:
            # As in the public code, which reads input_ids.shape before anything else.
            raise ValueError("this model takes input_ids (the image goes in through images=)")
        x, cache, hidden = self.model(
            input_ids,
            attention_mask,
            position_ids,
            past_key_values,
            bool(output_hidden_states),
            images,
            images_seq_mask,
            images_spatial_crop,
        )
        return CausalLMOutputWithPast(
            logits=self.lm_head(x).float(),
            past_key_values=cache if use_cache else None,
            hidden_states=hidden,
        )
