"""FastMTP's training loss for one draft block applied recursively (self-distillation).

The self-distillation bench (``bench/fastmtp_distill.py``) trains a head with it, and the
vLLM tier distils the tiny checkpoint's head with it (``tests/vllm/tiny_distill.py``), so
that both train a draft exactly the way ``model.fastmtp.decoding`` reads it at inference.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.layers import attention_mask

# FastMTP's weighting of the recursive steps' losses: step j counts LOSS_DECAY ** (j - 1).
LOSS_DECAY = 0.6


def recursive_draft_loss(
    block: MTPDraftBlock,
    hidden: Tensor,
    tokens: Tensor,
    valid: Tensor,
    k: int,
    *,
    embeds: Tensor | None = None,
    scored: Tensor | None = None,
) -> Tensor:
    """FastMTP loss: one block applied k times, step j weighted ``LOSS_DECAY ** (j - 1)``.

    Step 1 reads (h_p, t_{p+1}) at position p and predicts t_{p+2}. Step j reads
    (norm(g_p^{j-1}), t_{p+j}) at position p+j-1 (teacher-forced tokens: they are the verifier's
    own greedy outputs) and predicts t_{p+j+1}. Its attention sees step-1 entries p' <= p and the
    step-2..j-1 entries of the same p, which is what the draft cache holds at inference.

    ``hidden`` (B, T, H) is the verifier's last hidden state at each position, ``valid`` (B, T)
    marks real (unpadded) positions. ``embeds`` (B, T, H), when given, is what the verifier read
    at each position, read by step 1 in place of the tokens' embeddings (a page's features at
    image positions, as at inference). ``scored`` (B, T) marks the positions whose token is a
    prediction target (the verifier's outputs); by default every valid one.
    """
    b, t = tokens.shape
    dev = tokens.device
    scored = valid if scored is None else scored & valid
    n1 = t - 1
    pos1 = torch.arange(n1, device=dev).expand(b, n1)
    g, (k1, v1) = block.step(
        hidden[:, :n1],
        tokens[:, 1:],
        pos1,
        attention_mask(valid[:, 1:], n1),
        None,
        embeds=None if embeds is None else embeds[:, 1:],
    )
    keys, values = [k1], [v1]
    losses, weights = [], []
    for j in range(1, k + 1):
        if j > 1:
            n = t - j
            g_prev = block.recycle(g[:, :n])  # vLLM's convention: the post-norm state
            p = torch.arange(n, device=dev)
            first = torch.arange(n1, device=dev)[None, :] <= p[:, None]
            blocks = [first[None] & valid[:, None, 1:]]
            for kk in keys[1:]:  # earlier recursive steps: the same round only
                blocks.append(
                    (torch.arange(kk.shape[2], device=dev)[None] == p[:, None])[None].expand(
                        b, n, -1
                    )
                )
            blocks.append(torch.eye(n, dtype=torch.bool, device=dev)[None].expand(b, n, n))
            past = (torch.cat(keys, dim=2), torch.cat(values, dim=2))
            g, (ks, vs) = block.step(
                g_prev,
                tokens[:, j : j + n],
                (p + j - 1).expand(b, n),
                torch.cat(blocks, dim=2),
                past,
            )
            keys.append(ks[:, :, -n:])
            values.append(vs[:, :, -n:])
        n = g.shape[1]
        target = tokens[:, j + 1 : j + n]  # g at p predicts t_{p+j+1}
        logits = block.logits(g[:, : target.shape[1]])
        mask = scored[:, j + 1 : j + n]
        losses.append(F.cross_entropy(logits[mask], target[mask]))
        weights.append(LOSS_DECAY ** (j - 1))
    return sum(w * loss for w, loss in zip(weights, losses, strict=True)) / sum(weights)
