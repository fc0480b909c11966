"""The small transformer pieces shared by the draft block and the tiny test verifier.

A Llama-style pre-norm decoder layer (RMSNorm, rotary attention with grouped KV heads, SwiGLU
MLP) whose attention takes the past keys/values and an explicit boolean mask, so that the
caller decides what each query may see: left padding, rolled-back slots and the block masks of
recursive draft training are then all the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class BlockConfig:
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    rope_theta: float = 10000.0
    rms_eps: float = 1e-6
    # The decoder's RoPE scaling (its config's ``rope_scaling`` / ``rope_parameters``): the
    # draft layer must rotate positions exactly as the decoder does. None: plain RoPE.
    rope_scaling: Mapping[str, Any] | None = None

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        # Normalise in float32 at least: the tests run in float64 and the bench may run in bf16.
        dtype = x.dtype
        h = x.to(torch.promote_types(dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def rotary(
    positions: Tensor,
    head_dim: int,
    theta: float,
    dtype: torch.dtype,
    scaling: Mapping[str, Any] | None = None,
) -> tuple[Tensor, Tensor]:
    """cos/sin of shape (B, 1, Q, head_dim) for integer positions (B, Q)."""
    inv, magnitude = inverse_frequencies(head_dim, theta, scaling)
    angles = positions.double()[..., None] * inv.to(positions.device)
    emb = torch.cat([angles, angles], dim=-1)[:, None]
    return (emb.cos() * magnitude).to(dtype), (emb.sin() * magnitude).to(dtype)


def inverse_frequencies(
    head_dim: int, theta: float, scaling: Mapping[str, Any] | None = None
) -> tuple[Tensor, float]:
    """RoPE's inverse frequencies (float64) and the factor cos/sin are scaled by.

    Scaling types as vLLM 0.32's ``get_rope`` applies them (vllm/model_executor/layers/
    rotary_embedding/): ``linear`` divides the frequencies by ``factor``; ``yarn`` blends
    interpolated and extrapolated frequencies over a linear ramp between the correction
    dimensions of ``beta_fast``/``beta_slow`` rotations at ``original_max_position_embeddings``,
    and scales cos/sin by 0.1·m·ln(factor) + 1 (``mscale`` over ``mscale_all_dim`` when both are
    given, ``attention_factor`` when that is). Any other type is refused, naming it.
    """
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim
    base = theta**exponents
    scaling = dict(scaling or {})
    kind = str(scaling.get("rope_type") or scaling.get("type") or "default")
    if kind == "default":
        return 1.0 / base, 1.0
    factor = float(scaling["factor"])
    if kind == "linear":
        return 1.0 / (base * factor), 1.0
    if kind != "yarn":
        raise ValueError(f"rope scaling {kind!r} is not supported by the FastMTP draft block")
    original = float(scaling["original_max_position_embeddings"])
    fast = float(scaling.get("beta_fast", 32))
    slow = float(scaling.get("beta_slow", 1))

    def correction_dim(rotations: float) -> float:
        return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(fast), correction_dim(slow)
    if scaling.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    extrapolate = 1 - ramp
    inv = (1.0 / (factor * base)) * (1 - extrapolate) + (1.0 / base) * extrapolate

    def mscale(m: float = 1.0) -> float:
        return 1.0 if factor <= 1 else 0.1 * m * math.log(factor) + 1.0

    if scaling.get("attention_factor") is not None:
        magnitude = float(scaling["attention_factor"])
    elif scaling.get("mscale") and scaling.get("mscale_all_dim"):
        magnitude = mscale(float(scaling["mscale"])) / mscale(float(scaling["mscale_all_dim"]))
    else:
        magnitude = mscale()
    return inv, magnitude


def _rotate_half(x: Tensor) -> Tensor:
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    return x * cos + _rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.head_dim
        self.q_proj = nn.Linear(cfg.hidden_size, cfg.num_heads * d, bias=False)
        self.k_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * d, bias=False)
        self.v_proj = nn.Linear(cfg.hidden_size, cfg.num_kv_heads * d, bias=False)
        self.o_proj = nn.Linear(cfg.num_heads * d, cfg.hidden_size, bias=False)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: tuple[Tensor, Tensor] | None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """``mask`` is boolean (B, Q, S_past + Q): True where a query may look at a key.

        Returns the output and the keys/values of the past plus this call's (post-rotary, so that
        moving a cached slot elsewhere never changes what it means).
        """
        cfg = self.cfg
        b, q, _ = x.shape
        d = cfg.head_dim
        cos, sin = rotary(positions, d, cfg.rope_theta, x.dtype, cfg.rope_scaling)
        qs = apply_rotary(self.q_proj(x).view(b, q, cfg.num_heads, d).transpose(1, 2), cos, sin)
        ks = apply_rotary(self.k_proj(x).view(b, q, cfg.num_kv_heads, d).transpose(1, 2), cos, sin)
        vs = self.v_proj(x).view(b, q, cfg.num_kv_heads, d).transpose(1, 2)
        if past is not None:
            ks = torch.cat([past[0], ks], dim=2)
            vs = torch.cat([past[1], vs], dim=2)
        groups = cfg.num_heads // cfg.num_kv_heads
        kx = ks.repeat_interleave(groups, dim=1) if groups > 1 else ks
        vx = vs.repeat_interleave(groups, dim=1) if groups > 1 else vs
        out = F.scaled_dot_product_attention(qs, kx, vx, attn_mask=mask[:, None])
        return self.o_proj(out.transpose(1, 2).reshape(b, q, -1)), (ks, vs)


class MLP(nn.Module):
    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.up_proj = nn.Linear(cfg.hidden_size, cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Parameter names follow Hugging Face's Llama/DeepSeek layers, so checkpoints map 1:1."""

    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.mlp = MLP(cfg)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: tuple[Tensor, Tensor] | None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        a, kv = self.self_attn(self.input_layernorm(x), positions, mask, past)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), kv


def attention_mask(key_valid: Tensor, queries: int) -> Tensor:
    """Boolean (B, Q, S) mask for the last ``queries`` slots of a left-to-right slot layout.

    ``key_valid`` (B, S) says which slots hold a real token (not padding, not rolled back).
    A query always sees itself as well: a padding query with nothing to look at would otherwise
    produce NaN, and a NaN cached value poisons every later softmax even when masked out.
    """
    b, s = key_valid.shape
    q_slots = torch.arange(s - queries, s, device=key_valid.device)
    k_slots = torch.arange(s, device=key_valid.device)
    causal = k_slots[None, :] <= q_slots[:, None]
    own = k_slots[None, :] == q_slots[:, None]
    return (key_valid[:, None, :] & causal[None]) | own[None]
