"""The tiny checkpoint's weights: a decoder whose output is known and a draft head that is
right only when it is wired the way jina-ocr-v1's head was trained.

The decoder (``decoder_tensors``): every attention output projection and MLP down projection
is zero, so the residual stream carries the current token's embedding through both layers;
the final norm has a weight ``w`` of mixed magnitudes and signs, so the hidden state at a
position holding token ``t`` is ``w ⊙ e(t)``; the output head maps it to a fixed successor:
decoding walks the cycle ``successor_cycle`` and says end-of-sequence after ``STEPS_TO_EOS``
tokens. The image features
are one vector ``b`` wherever vLLM or the remote code puts a page (the projector's weight is
zero and its bias, the newline and the view separator are ``b``), whatever the pixels.

The draft head (``draft_tensors``), in jina-ocr-v1's published layout by default: at the
position of ``t_p`` it reads the target's hidden state ``h_p`` and the embedding of the next
input ``x_{p+1}`` (a token, or ``b`` at an image position), and it must predict ``t_{p+2}``.

- The hidden-state half of ``eh_proj`` is a map ``P`` with ``P·hnorm(w ⊙ e(t)) = e(s(t))``
  on the decoded part of the cycle (and 0 on the prompt's other words, its BOS and ``b``); the
  token half only copies a marker coordinate. So the draft is right only when it reads the
  hidden state of the right position, and at K > 1 only when each recursive step reads the
  previous step's *post*-norm state ``w ⊙ n(g)`` (its pre-norm ``g`` lacks ``w``, and ``P`` is
  not right on that).
- Its attention averages a marker over every position it has read (queries and keys are
  zero): the marker is 1 for a token embedding and 0 for the feature vector ``b``. The average
  pushes the logits towards ``PUSH_TOKEN``; it stays far below the right token's logit when
  the image positions carried the page's features, and wins when they carried the ``<image>``
  token's embedding instead. So the drafts are right only when the draft reads the page.

``MISWIRED`` variants swap the two halves of ``eh_proj`` (a draft concatenating
``[hidden; embedding]`` instead of vLLM's ``[embedding; hidden]``): acceptance near zero.
A head of in-between acceptance, for comparing two implementations step by step, is trained
instead (``tiny_distill``).
"""

from __future__ import annotations

import random
from collections.abc import Callable

HIDDEN = 64
PUSH, MARK = HIDDEN - 2, HIDDEN - 1  # reserved coordinates; the content is the rest
STEPS_TO_EOS = 24
WALK = STEPS_TO_EOS + 3  # the part of the cycle the draft is exact on (K=3 past the EOS)
HEAD_SCALE = 0.1
PUSH_GAIN = 1.0  # o_proj: the averaged marker onto the PUSH coordinate
PUSH_HEAD = 4.0  # lm_head: PUSH_TOKEN's weight on the PUSH coordinate
SEED = 14
MISWIRED = "swapped"


def successor_cycle(prompt_ids: list[int], ordinary: list[int]) -> list[int]:
    """From the prompt's last word through the other ordinary tokens (shuffled), the prompt's
    other words last: the decoded part never meets a word the prompt holds."""
    start, rest_of_prompt = prompt_ids[-1], prompt_ids[:-1]
    others = [i for i in ordinary if i not in prompt_ids]
    random.Random(SEED).shuffle(others)
    return [start, *others, *rest_of_prompt]


def decoder_tensors(torch, cycle: list[int], vocab: int, eos: int) -> dict:
    """Embeddings, final norm, output head and the page's feature vector."""
    g = torch.Generator().manual_seed(SEED)
    embed = torch.zeros(vocab, HIDDEN, dtype=torch.float64)
    embed[:, :PUSH] = torch.randn(vocab, PUSH, generator=g, dtype=torch.float64)
    embed[:, :PUSH] *= ((HIDDEN - 1) / embed[:, :PUSH].pow(2).sum(1, keepdim=True)).sqrt()
    embed[:, MARK] = 1.0  # rows of RMS 1: the draft's enorm leaves the marker at 1
    feature = torch.zeros(HIDDEN, dtype=torch.float64)
    feature[:PUSH] = torch.randn(PUSH, generator=g, dtype=torch.float64)
    feature *= HIDDEN**0.5 / feature.norm()
    # Magnitudes 0.5 to 2 and random signs: ``w ⊙ x`` is far from ``x``, so a draft that recycles
    # its pre-norm state (no ``w``) reads a vector ``P`` is not right on.
    weight = 0.5 + 1.5 * torch.rand(HIDDEN, generator=g, dtype=torch.float64)
    weight *= torch.randint(0, 2, (HIDDEN,), generator=g).double() * 2 - 1
    weight[PUSH] = weight[MARK] = 1.0
    head = torch.zeros(vocab, HIDDEN, dtype=torch.float64)
    for here, after in zip(cycle, cycle[1:], strict=False):
        head[after] = HEAD_SCALE * weight * embed[here]
    head[eos] = HEAD_SCALE * weight * embed[cycle[STEPS_TO_EOS]]
    head[cycle[STEPS_TO_EOS + 1]] = 0
    # After the EOS the decoder goes on where the draft's K=3 step past it lands, so that a
    # draft proposed beyond the end is checked like any other.
    head[cycle[STEPS_TO_EOS + 2]] += HEAD_SCALE * weight * embed[eos]
    head[push_token(cycle)] = 0
    head[push_token(cycle), PUSH] = PUSH_HEAD
    return {"embed": embed, "feature": feature, "norm": weight, "head": head}


def push_token(cycle: list[int]) -> int:
    return cycle[-len(cycle) // 2]  # far from the decoded part and from the prompt's words


def _rms_normed(x):
    return x / x.pow(2).mean(-1, keepdim=True).sqrt()


def draft_tensors(
    torch, decoder: dict, cycle: list[int], prompt_ids: list[int], bos: int, variant: str = ""
) -> dict[str, object]:
    """The head's parameters under block names (``MTPDraftBlock``'s), float64."""
    embed, weight = decoder["embed"], decoder["norm"]
    hidden = lambda x: _rms_normed(weight * _rms_normed(x))  # noqa: E731 - hnorm(h)
    inputs = [hidden(embed[t]) for t in cycle[:WALK]]
    targets = [embed[t] for t in cycle[1 : WALK + 1]]
    for quiet in [*prompt_ids[:-1], bos]:
        inputs.append(hidden(embed[quiet]))
        targets.append(torch.zeros(HIDDEN, dtype=torch.float64))
    inputs.append(hidden(decoder["feature"]))
    targets.append(torch.zeros(HIDDEN, dtype=torch.float64))
    s, t = torch.stack(inputs, 1), torch.stack(targets, 1)
    p = torch.zeros(HIDDEN, HIDDEN, dtype=torch.float64)
    p[:PUSH] = t[:PUSH] @ torch.linalg.pinv(s)
    e = torch.zeros(HIDDEN, HIDDEN, dtype=torch.float64)
    e[MARK, MARK] = 1.0
    halves = [p, e] if variant == MISWIRED else [e, p]
    g = torch.Generator().manual_seed(SEED + 1)
    zeros, ones = (
        (lambda *s: torch.zeros(*s, dtype=torch.float64)),
        (lambda *s: torch.ones(*s, dtype=torch.float64)),
    )
    value = zeros(HIDDEN, HIDDEN)
    value[0, MARK] = 1.0  # head 0's first value dimension: the marker
    out = zeros(HIDDEN, HIDDEN)
    out[PUSH, 0] = PUSH_GAIN
    return {
        "enorm.weight": ones(HIDDEN),
        "hnorm.weight": ones(HIDDEN),
        "eh_proj.weight": torch.cat(halves, 1),
        "block.input_layernorm.weight": ones(HIDDEN),
        "block.post_attention_layernorm.weight": ones(HIDDEN),
        "block.self_attn.q_proj.weight": zeros(HIDDEN, HIDDEN),
        "block.self_attn.k_proj.weight": zeros(HIDDEN, HIDDEN),
        "block.self_attn.v_proj.weight": value,
        "block.self_attn.o_proj.weight": out,
        "block.mlp.gate_proj.weight": 0.02 * torch.randn(128, HIDDEN, generator=g).double(),
        "block.mlp.up_proj.weight": 0.02 * torch.randn(128, HIDDEN, generator=g).double(),
        "block.mlp.down_proj.weight": zeros(HIDDEN, 128),
    }


# Block names -> each layout's checkpoint names (the norm is the target's unless noted).
def published(name: str) -> str:
    """jina-ocr-v1 as published: ``mtp_module.heads.0.*``, the layer under ``mtp_block.``."""
    rest = name.removeprefix("block.")
    return "mtp_module.heads.0." + (("mtp_block." + rest) if name.startswith("block.") else rest)


def flat(name: str) -> str:
    return "mtp_module." + name.removeprefix("block.")


def deepseek_v3(layers: int) -> Callable[[str], str]:
    return lambda name: f"model.layers.{layers}." + name.removeprefix("block.")
