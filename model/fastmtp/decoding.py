"""Greedy decoding, plain and FastMTP-speculative, over a batch of prompts.

The speculative loop, per verifier pass:

1. catch the draft block up on every position the verifier confirmed since the last pass
   (pairs of the verifier's true hidden state and the token that follows it);
2. draft K tokens by applying the block recursively to its own output;
3. run the verifier once over the last committed token plus the K drafts (K+1 positions);
4. keep the longest prefix of drafts equal to the verifier's own greedy choices, plus the
   verifier's next token after it, so every committed token is one greedy decoding would emit;
5. roll both KV caches back to what was kept, per sequence, and drop finished sequences.

Because step 4 only ever commits the verifier's own argmax given the committed prefix, the
result equals plain greedy decoding token for token, whatever the draft block says; the draft
decides only how many tokens one pass gets.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from model.fastmtp.cache import apply_realign, realign, select_rows
from model.fastmtp.counters import SpecCounters
from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.hf import CausalLMAdapter
from model.fastmtp.layers import attention_mask

logger = logging.getLogger(__name__)


@dataclass
class _Prompts:
    ids: Tensor  # (B, S) left-padded
    valid: Tensor  # (B, S)
    positions: Tensor  # (B, S)


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> _Prompts:
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(list(p), dtype=torch.long)
        valid[i, width - len(p) :] = True
    positions = (valid.long().cumsum(1) - 1).clamp(min=0)
    return _Prompts(ids.to(device), valid.to(device), positions.to(device))


class _Outputs:
    """Committed tokens per original sequence, with the EOS and max-token stops."""

    def __init__(self, n: int, max_new_tokens: int, eos_token_id: int | None):
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.max_new_tokens = max_new_tokens
        self.eos_token_id = eos_token_id

    def commit(self, rows: Tensor, new: list[list[int]]) -> Tensor:
        """Append each row's new tokens up to a stop; returns which rows are now finished."""
        done = []
        for row, toks in zip(rows.tolist(), new, strict=True):
            out = self.tokens[row]
            finished = False
            for t in toks:
                out.append(t)
                if t == self.eos_token_id or len(out) >= self.max_new_tokens:
                    finished = True
                    break
            done.append(finished)
        return torch.tensor(done, dtype=torch.bool, device=rows.device)


@torch.inference_mode()
def greedy_decode(
    verifier: CausalLMAdapter,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    eos_token_id: int | None = None,
    pad_id: int = 0,
) -> list[list[int]]:
    """Plain batched greedy decoding with a KV cache: the baseline, one token per pass."""
    device = next(verifier.model.parameters()).device
    p = left_pad(prompts, pad_id, device)
    outputs = _Outputs(len(prompts), max_new_tokens, eos_token_id)
    if max_new_tokens <= 0:
        return outputs.tokens
    step = verifier(p.ids, p.positions, p.valid, None)
    token = step.logits[:, -1].argmax(-1)
    rows = torch.arange(len(prompts), device=device)
    valid, cache, next_pos = p.valid, step.cache, p.valid.sum(1)
    while True:
        done = outputs.commit(rows, [[t] for t in token.tolist()])
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            rows, token, next_pos, valid = rows[keep], token[keep], next_pos[keep], valid[keep]
            cache = select_rows(cache, keep)
        if len(rows) == 0:
            return outputs.tokens
        valid = torch.cat([valid, torch.ones_like(valid[:, :1])], dim=1)
        step = verifier(token[:, None], next_pos[:, None], valid, cache)
        cache, token, next_pos = step.cache, step.logits[:, -1].argmax(-1), next_pos + 1


@dataclass
class _DraftState:
    """What the draft block still has to read, and its own cache."""

    hidden: Tensor  # (B, Q, H) verifier hidden states not yet read by the draft block
    tokens: Tensor  # (B, Q) the token that follows each of them
    positions: Tensor  # (B, Q)
    valid: Tensor  # (B, Q) which of them were confirmed
    last: Tensor  # (B,) index in Q of each row's newest confirmed one
    cache: Any = None  # draft block keys/values for confirmed positions only
    cache_valid: Tensor | None = None  # (B, S_draft)

    def select(self, keep: Tensor) -> None:
        self.hidden, self.tokens = self.hidden[keep], self.tokens[keep]
        self.positions, self.valid, self.last = (
            self.positions[keep],
            self.valid[keep],
            self.last[keep],
        )
        if self.cache is not None and self.cache_valid is not None:
            self.cache = select_rows(self.cache, keep)
            self.cache_valid = self.cache_valid[keep]


def _draft(block: MTPDraftBlock, state: _DraftState, k: int) -> Tensor:
    """Catch the block up on the confirmed positions, then draft K tokens recursively."""
    b = state.hidden.shape[0]
    rows = torch.arange(b, device=state.hidden.device)
    prior = state.cache_valid if state.cache_valid is not None else state.valid[:, :0]
    cache_valid = torch.cat([prior, state.valid], dim=1)
    # Unconfirmed slots still go through the block (the batch is rectangular), so zero them:
    # a NaN there would leak through the masked softmax as 0 * NaN.
    hidden = state.hidden.masked_fill(~state.valid[..., None], 0.0)
    g, cache = block.step(
        hidden,
        state.tokens,
        state.positions,
        attention_mask(cache_valid, state.hidden.shape[1]),
        tuple(state.cache[0]) if state.cache is not None else None,
    )
    # Only confirmed positions stay in the draft cache; the recursive steps below are scratch.
    how, state.cache_valid = realign(cache_valid)
    state.cache = apply_realign((cache,), how)
    g_last = g[rows, state.last]
    position = state.positions[rows, state.last]
    token = block.logits(g_last).argmax(-1)
    drafts = [token]
    scratch, scratch_valid = state.cache[0], state.cache_valid
    for j in range(1, k):
        scratch_valid = torch.cat([scratch_valid, torch.ones_like(scratch_valid[:, :1])], dim=1)
        g, scratch = block.step(
            g_last[:, None],
            token[:, None],
            (position + j)[:, None],
            attention_mask(scratch_valid, 1),
            scratch,
        )
        g_last = g[:, 0]
        token = block.logits(g_last).argmax(-1)
        drafts.append(token)
    return torch.stack(drafts, dim=1)


@torch.inference_mode()
def speculative_decode(
    verifier: CausalLMAdapter,
    block: MTPDraftBlock,
    prompts: Sequence[Sequence[int]],
    *,
    k: int,
    max_new_tokens: int,
    eos_token_id: int | None = None,
    pad_id: int = 0,
    counters: SpecCounters | None = None,
) -> list[list[int]]:
    """Greedy decoding sped up by K FastMTP drafts per verifier pass; same tokens as greedy."""
    if k < 1:
        raise ValueError("k must be at least 1")
    device = next(verifier.model.parameters()).device
    p = left_pad(prompts, pad_id, device)
    outputs = _Outputs(len(prompts), max_new_tokens, eos_token_id)
    if max_new_tokens <= 0:
        return outputs.tokens
    step = verifier(p.ids, p.positions, p.valid, None)
    last = step.logits[:, -1].argmax(-1)
    width = p.ids.shape[1]
    draft = _DraftState(
        hidden=step.hidden,
        tokens=torch.cat([p.ids[:, 1:], last[:, None]], dim=1),
        positions=p.positions,
        valid=p.valid,
        last=torch.full_like(last, width - 1),
    )
    rows = torch.arange(len(prompts), device=device)
    valid, cache, next_pos = p.valid, step.cache, p.valid.sum(1)
    done = outputs.commit(rows, [[t] for t in last.tolist()])
    offsets = torch.arange(k + 1, device=device)
    while True:
        if done.any():
            keep = (~done).nonzero().squeeze(1)
            rows, last, next_pos, valid = rows[keep], last[keep], next_pos[keep], valid[keep]
            cache = select_rows(cache, keep)
            draft.select(keep)
        if len(rows) == 0:
            return outputs.tokens
        drafts = _draft(block, draft, k)
        positions = next_pos[:, None] + offsets
        fresh = torch.ones((len(rows), k + 1), dtype=torch.bool, device=device)
        valid = torch.cat([valid, fresh], dim=1)
        step = verifier(torch.cat([last[:, None], drafts], dim=1), positions, valid, cache)
        greedy = step.logits.argmax(-1)  # (B, K+1): the verifier's choice after each prefix
        accepted = (drafts == greedy[:, :k]).long().cumprod(dim=1).sum(dim=1)
        if counters is not None:
            counters.record(accepted)
        kept = offsets[None, :] <= accepted[:, None]
        valid[:, -(k + 1) :] = kept
        how, valid = realign(valid)
        cache = apply_realign(step.cache, how)
        draft.hidden, draft.tokens, draft.positions = step.hidden, greedy, positions
        draft.valid, draft.last = kept, accepted
        last = greedy.gather(1, accepted[:, None]).squeeze(1)
        next_pos = next_pos + accepted + 1
        new = [g[: n + 1] for g, n in zip(greedy.tolist(), accepted.tolist(), strict=True)]
        done = outputs.commit(rows, new)
