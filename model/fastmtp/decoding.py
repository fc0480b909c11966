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

Per-pass fixed costs matter as much as the passes saved: on a small verifier (or a GPU, where
every host read stalls the stream) a loop that does bookkeeping on the device between
passes can lose the whole speed-up. So each pass reads the device exactly once (the
verifier's K+1 choices and the acceptance count, in one ``tolist``), everything else about
stops and counters is decided in Python on those numbers, and when every live row accepted
the same number of drafts (always so at batch size one) both KV caches are rolled back by a
crop that copies nothing; only mixed acceptance pays for a realigning gather.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from model.fastmtp.cache import apply_realign, crop, realign, select_rows
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
    embeds: Tensor | None = None  # (B, S, H) left-padded with zeros, when given


def left_pad(
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    device: torch.device,
    embeds: Sequence[Tensor] | None = None,
) -> _Prompts:
    if not prompts or any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    valid = torch.zeros((len(prompts), width), dtype=torch.bool)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(list(p), dtype=torch.long)
        valid[i, width - len(p) :] = True
    positions = (valid.long().cumsum(1) - 1).clamp(min=0)
    padded = None
    if embeds is not None:
        if len(embeds) != len(prompts):
            raise ValueError("one prompt embedding tensor per prompt")
        for p, e in zip(prompts, embeds, strict=True):
            if e.dim() != 2 or e.shape[0] != len(p):
                raise ValueError("prompt embeddings must be (prompt length, hidden size)")
        padded = embeds[0].new_zeros((len(prompts), width, embeds[0].shape[1]))
        for i, e in enumerate(embeds):
            padded[i, width - e.shape[0] :] = e
        padded = padded.to(device)
    return _Prompts(ids.to(device), valid.to(device), positions.to(device), padded)


class _Outputs:
    """Committed tokens per original sequence, with the EOS and max-token stops."""

    def __init__(self, n: int, max_new_tokens: int, eos_token_id: int | None):
        self.tokens: list[list[int]] = [[] for _ in range(n)]
        self.max_new_tokens = max_new_tokens
        self.eos_token_id = eos_token_id

    def commit(self, rows: list[int], new: list[list[int]]) -> list[int]:
        """Append each row's new tokens up to a stop; returns the indices (into ``rows``) of
        the rows still running."""
        running = []
        eos, budget = self.eos_token_id, self.max_new_tokens
        for i, (row, toks) in enumerate(zip(rows, new, strict=True)):
            out = self.tokens[row]
            room = budget - len(out)
            if eos is not None and eos in toks[:room]:
                out.extend(toks[: toks.index(eos) + 1])
                continue
            out.extend(toks[:room])
            if len(out) < budget:
                running.append(i)
        return running


def _device_of(verifier: CausalLMAdapter) -> torch.device:
    return next(verifier.model.parameters()).device


@torch.inference_mode()
def greedy_decode(
    verifier: CausalLMAdapter,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    eos_token_id: int | None = None,
    pad_id: int = 0,
    prompt_embeds: Sequence[Tensor] | None = None,
) -> list[list[int]]:
    """Plain batched greedy decoding with a KV cache: the baseline, one token per pass.

    ``prompt_embeds`` (one (len(prompt), H) tensor per prompt) replaces the prompt's token
    embeddings in the prefill, e.g. a page image's features spliced into a VLM's prompt;
    decoding then continues from token ids.
    """
    device = _device_of(verifier)
    p = left_pad(prompts, pad_id, device, prompt_embeds)
    outputs = _Outputs(len(prompts), max_new_tokens, eos_token_id)
    if max_new_tokens <= 0:
        return outputs.tokens
    step = verifier(p.ids, p.positions, p.valid, None, inputs_embeds=p.embeds)
    token = step.logits[:, -1].argmax(-1)
    rows = list(range(len(prompts)))
    valid, cache, next_pos = p.valid, step.cache, p.valid.sum(1)
    while True:
        # The one host read of the step: the tokens, which the stops need anyway.
        running = outputs.commit(rows, [[t] for t in token.tolist()])
        if len(running) < len(rows):
            if not running:
                return outputs.tokens
            keep = torch.tensor(running, device=device)
            rows = [rows[i] for i in running]
            token, next_pos, valid = token[keep], next_pos[keep], valid[keep]
            cache = select_rows(cache, keep)
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
    # When every row's unconfirmed slots are the same trailing ones (uniform acceptance),
    # how many: the cache is then rolled back by a crop. None: mixed, realign by gather.
    trailing: int | None = 0
    cache: Any = None  # draft block keys/values for confirmed positions only
    cache_valid: Tensor | None = None  # (B, S_draft)
    # (B, Q, H) what the block reads in place of ``tokens``' embeddings, for the prompt's
    # catch-up only: the verifier's inputs there, a page's features at image positions.
    embeds: Tensor | None = None

    def select(self, keep: Tensor) -> None:
        self.hidden, self.tokens = self.hidden[keep], self.tokens[keep]
        if self.embeds is not None:
            self.embeds = self.embeds[keep]
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
    q = state.hidden.shape[1]
    prior = state.cache_valid if state.cache_valid is not None else state.valid[:, :0]
    cache_valid = torch.cat([prior, state.valid], dim=1)
    g, cache = block.step(
        state.hidden,
        state.tokens,
        state.positions,
        attention_mask(cache_valid, q),
        tuple(state.cache[0]) if state.cache is not None else None,
        embeds=state.embeds,
    )
    state.embeds = None
    # Only confirmed positions stay in the draft cache; the recursive steps below are scratch.
    if state.trailing is not None:
        end = cache_valid.shape[1] - state.trailing
        state.cache_valid, state.cache = cache_valid[:, :end], crop((cache,), end)
    else:
        how, state.cache_valid = realign(cache_valid)
        state.cache = apply_realign((cache,), how)
    if state.trailing is not None and q - state.trailing > 0:
        # Uniform: every row's newest confirmed slot is the same column, no gather needed.
        last = q - state.trailing - 1
        g_last, position = g[:, last], state.positions[:, last]
    else:
        rows = torch.arange(g.shape[0], device=g.device)
        g_last = g[rows, state.last]
        position = state.positions[rows, state.last]
    token = block.logits(g_last).argmax(-1)
    drafts = [token]
    scratch, scratch_valid = state.cache[0], state.cache_valid
    for j in range(1, k):
        # A single query sees every valid slot and itself: the mask is the validity row.
        scratch_valid = torch.cat([scratch_valid, torch.ones_like(scratch_valid[:, :1])], dim=1)
        g, scratch = block.step(
            block.recycle(g_last)[:, None],
            token[:, None],
            (position + j)[:, None],
            scratch_valid[:, None, :],
            scratch,
        )
        g_last = g[:, 0]
        token = block.logits(g_last).argmax(-1)
        drafts.append(token)
    return torch.stack(drafts, dim=1)


def _draft_prompt_embeds(
    verifier: CausalLMAdapter,
    block: MTPDraftBlock,
    ids: Tensor,
    inputs: Tensor | None,
    last: Tensor,
) -> Tensor | None:
    """What the draft reads over the prompt, shifted by one like its tokens: what the verifier
    read where that is not a token's embedding (a page's features, merged by the caller or by
    the model itself), the block's own embedding of the token elsewhere, and the first
    generated token's at the end. None when the verifier read plain token embeddings."""
    if inputs is None:
        return None
    read = inputs[:, 1:]
    features = (read != verifier.embedding(ids[:, 1:]).to(read.dtype)).any(-1)
    if not bool(features.any()):
        return None
    merged = block.embed(torch.cat([ids[:, 1:], last[:, None]], dim=1)).to(read.dtype)
    merged[:, :-1] = torch.where(features[..., None], read, merged[:, :-1])
    return merged


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
    prompt_embeds: Sequence[Tensor] | None = None,
) -> list[list[int]]:
    """Greedy decoding sped up by K FastMTP drafts per verifier pass; same tokens as greedy.

    ``prompt_embeds`` as in ``greedy_decode``. Over the prompt the draft block reads what the
    verifier's first layer read wherever that is not the token's embedding (a page's features,
    whether spliced in here or merged by the model itself), as vLLM's proposer hands a
    multimodal draft the target's merged inputs; that shapes only its drafts, and a draft never
    decides a token, only how many one pass commits.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    device = _device_of(verifier)
    p = left_pad(prompts, pad_id, device, prompt_embeds)
    outputs = _Outputs(len(prompts), max_new_tokens, eos_token_id)
    if max_new_tokens <= 0:
        return outputs.tokens
    step = verifier(p.ids, p.positions, p.valid, None, inputs_embeds=p.embeds)
    last = step.logits[:, -1].argmax(-1)
    width = p.ids.shape[1]
    draft = _DraftState(
        # Padding queries attended to themselves only; zero them anyway, because a model
        # whose padding rows come out NaN would leak it through the masked softmax as 0 * NaN.
        hidden=step.hidden.masked_fill(~p.valid[..., None], 0.0),
        tokens=torch.cat([p.ids[:, 1:], last[:, None]], dim=1),
        positions=p.positions,
        valid=p.valid,
        last=torch.full_like(last, width - 1),
        embeds=_draft_prompt_embeds(verifier, block, p.ids, step.inputs, last),
    )
    rows = list(range(len(prompts)))
    valid, cache, next_pos = p.valid, step.cache, p.valid.sum(1)
    running = outputs.commit(rows, [[t] for t in last.tolist()])
    offsets = torch.arange(k + 1, device=device)
    while True:
        if len(running) < len(rows):
            if not running:
                return outputs.tokens
            keep = torch.tensor(running, device=device)
            rows = [rows[i] for i in running]
            last, next_pos, valid = last[keep], next_pos[keep], valid[keep]
            cache = select_rows(cache, keep)
            draft.select(keep)
        drafts = _draft(block, draft, k)
        positions = next_pos[:, None] + offsets
        fresh = torch.ones((len(rows), k + 1), dtype=torch.bool, device=device)
        valid = torch.cat([valid, fresh], dim=1)
        step = verifier(torch.cat([last[:, None], drafts], dim=1), positions, valid, cache)
        greedy = step.logits.argmax(-1)  # (B, K+1): the verifier's choice after each prefix
        accepted = (drafts == greedy[:, :k]).long().cumprod(dim=1).sum(dim=1)
        # The one host read of the pass.
        host = torch.cat([greedy, accepted[:, None]], dim=1).tolist()
        counts = [r[-1] for r in host]
        if counters is not None:
            counters.record(counts)
        uniform = min(counts) == max(counts)
        if uniform:
            trailing = k - counts[0]
            end = valid.shape[1] - trailing
            valid, cache = valid[:, :end], crop(step.cache, end)
            kept = offsets[None, :].expand(len(rows), -1) <= counts[0]
        else:
            trailing = None
            kept = offsets[None, :] <= accepted[:, None]
            valid[:, -(k + 1) :] = kept
            how, valid = realign(valid)
            cache = apply_realign(step.cache, how)
        draft.hidden, draft.tokens, draft.positions = step.hidden, greedy, positions
        draft.valid, draft.last, draft.trailing = kept, accepted, trailing
        last = greedy.gather(1, accepted[:, None]).squeeze(1)
        next_pos = next_pos + accepted + 1
        running = outputs.commit(rows, [r[: r[-1] + 1] for r in host])
