"""The FastMTP draft block, in the DeepSeek-V3 multi-token-prediction shape.

    g = Block( eh_proj( [ enorm(embed(t_{p+1})) ; hnorm(h_p) ] ) )      logits = head(norm(g))

``h_p`` is the verifier's last hidden state at position ``p`` and ``t_{p+1}`` the token that
follows it; the block predicts ``t_{p+2}``. FastMTP applies this one block recursively with the
same weights: the next step takes ``norm(g)`` in place of ``h`` and the drafted token in place
of ``t_{p+1}``.

Conventions shared with vLLM 0.32's DeepSeek MTP layer (vllm/model_executor/models/
deepseek_mtp.py, which says it matches SGLang's ``deepseek_nextn``), so that a head trained or
measured here behaves the same there: the *post*-final-norm hidden state ``norm(g)`` is what the
next recursive step reads (``recycle``), and the token embedding of a position-0 entry is
zeroed (nothing precedes it).

The embedding and output head are the verifier's (shared, never trained here) unless the
checkpoint's ``mtp_*`` keys say the head has its own (``model.fastmtp.layout``). At a
multimodal prompt's image positions the block reads what the verifier read there, the page's
features, in place of a token embedding (``step``'s ``embeds``): jina-ocr-v1's head was
trained that way.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from model.fastmtp.layers import BlockConfig, DecoderLayer, RMSNorm

KV = tuple[Tensor, Tensor]


class MTPDraftBlock(nn.Module):
    def __init__(
        self,
        cfg: BlockConfig,
        vocab_size: int,
        *,
        own_embedding: bool = False,
        own_head: bool = False,
    ):
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        h = cfg.hidden_size
        self.embed_tokens: nn.Embedding | None = (
            nn.Embedding(vocab_size, h) if own_embedding else None
        )
        self.enorm = RMSNorm(h, cfg.rms_eps)
        self.hnorm = RMSNorm(h, cfg.rms_eps)
        self.eh_proj = nn.Linear(2 * h, h, bias=False)
        self.block = DecoderLayer(cfg)
        self.norm = RMSNorm(h, cfg.rms_eps)  # DeepSeek-V3's shared_head.norm
        self.head: nn.Linear | None = nn.Linear(h, vocab_size, bias=False) if own_head else None
        # Held outside the module tree on purpose: they are the verifier's parameters, so they
        # must not appear in this block's state_dict nor be handed to its optimiser.
        self._shared: tuple[nn.Module, nn.Module] | None = None

    def share(self, embedding: nn.Module, head: nn.Module) -> MTPDraftBlock:
        """Borrow the verifier's input embedding (unless this block has its own) and output head."""
        self._shared = (embedding, head)
        return self

    def _parts(self) -> tuple[nn.Module, nn.Module]:
        if self._shared is None:
            raise RuntimeError("call share(embedding, head) with the verifier's modules first")
        embedding, head = self._shared
        return (
            self.embed_tokens if self.embed_tokens is not None else embedding,
            self.head if self.head is not None else head,
        )

    def step(
        self,
        hidden: Tensor,
        tokens: Tensor,
        positions: Tensor,
        mask: Tensor,
        past: KV | None = None,
        embeds: Tensor | None = None,
    ) -> tuple[Tensor, KV]:
        """One application over (B, Q) pairs; returns the block's output and its keys/values.

        ``embeds`` (B, Q, H), when given, is read instead of the tokens' embeddings: the
        verifier's own inputs at those positions (a page's features at image positions)."""
        embedding, _ = self._parts()
        e = (embedding(tokens) if embeds is None else embeds).to(hidden.dtype)
        e = self.enorm(e.masked_fill((positions == 0)[..., None], 0.0))
        x = self.eh_proj(torch.cat([e, self.hnorm(hidden)], dim=-1))
        return self.block(x, positions, mask, past)

    def embed(self, tokens: Tensor) -> Tensor:
        """The block's token embeddings (its own table, or the verifier's it shares)."""
        embedding, _ = self._parts()
        return embedding(tokens)

    def recycle(self, g: Tensor) -> Tensor:
        """What the next recursive step reads in place of the verifier's hidden state."""
        return self.norm(g)

    def logits(self, g: Tensor) -> Tensor:
        _, head = self._parts()
        return head(self.norm(g))
