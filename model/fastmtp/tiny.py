"""A tiny decoder-only causal LM with the Hugging Face calling convention.

It stands in for a real verifier in the property tests and the self-distillation bench: the
speculative loop only ever talks to it through ``CausalLMAdapter``, exactly as it talks to a
``transformers`` model, so what is proven on it is proven on the adapter path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.fastmtp.layers import BlockConfig, DecoderLayer, RMSNorm
from model.fastmtp.layers import attention_mask as build_mask


@dataclass
class TinyOutput:
    logits: Tensor
    hidden_states: tuple[Tensor, ...] | None
    past_key_values: tuple[tuple[Tensor, Tensor], ...] | None


class TinyCausalLM(nn.Module):
    def __init__(self, cfg: BlockConfig, vocab_size: int, num_layers: int):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(num_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_eps)
        self.lm_head = nn.Linear(cfg.hidden_size, vocab_size, bias=False)

    def get_input_embeddings(self) -> nn.Module:
        return self.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_values: tuple[tuple[Tensor, Tensor], ...] | None = None,
        use_cache: bool = True,
        output_hidden_states: bool = False,
        inputs_embeds: Tensor | None = None,
    ) -> TinyOutput:
        x = self.embed_tokens(input_ids) if inputs_embeds is None else inputs_embeds
        b, q = x.shape[:2]
        past_len = past_key_values[0][0].shape[2] if past_key_values else 0
        if attention_mask is None:
            attention_mask = torch.ones(b, past_len + q, dtype=torch.bool, device=x.device)
        if position_ids is None:
            position_ids = torch.arange(past_len, past_len + q, device=x.device)[None]
            position_ids = position_ids.expand(b, q)
        mask = build_mask(attention_mask.bool(), q)
        hidden: list[Tensor] = [x]
        new_cache = []
        for i, layer in enumerate(self.layers):
            past = past_key_values[i] if past_key_values else None
            x, kv = layer(x, position_ids, mask, past)
            new_cache.append(kv)
            hidden.append(x)
        x = self.norm(x)
        # Like Hugging Face: the last hidden state is the one after the final norm.
        hidden[-1] = x
        return TinyOutput(
            logits=self.lm_head(x),
            hidden_states=tuple(hidden) if output_hidden_states else None,
            past_key_values=tuple(new_cache) if use_cache else None,
        )
