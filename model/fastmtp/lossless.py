"""What "lossless" means, measured: speculative output against plain greedy output, and for
every place they part, how close the verifier was to a tie there.

Speculative decoding commits only the verifier's own argmax, so in exact arithmetic its tokens
are greedy decoding's. In floating point they are not quite: the verifier scores K+1
positions in one pass where greedy scores one, the kernels reduce in another order, and a
near-tie between the two best tokens can round the other way. So:

- in float64 the two must be identical (the property tests and the bench check it);
- in float32 / bfloat16 every divergence is reported with the verifier's *logit margin* there
  (best minus second-best logit, from a plain full forward over the committed prefix in the
  run's dtype), and a divergence counts as a near-tie when that margin is within a few units of
  rounding of the logits' size (``near_tie``);
- ``lossless=yes`` is printed only for a run with no divergence at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.fastmtp.hf import CausalLMAdapter

# How many units in the last place of the logits' magnitude still count as a tie: a verifier
# pass over K+1 positions and one over a single position differ by a few roundings per layer.
NEAR_TIE_ULPS = 64


@dataclass(frozen=True)
class Divergence:
    sequence: int
    position: int  # index into the output where the two first differ
    greedy_token: int
    speculative_token: int
    margin: float  # verifier's best minus second-best logit at that position, run dtype
    tolerance: float  # the margin under which rounding can flip the argmax

    @property
    def near_tie(self) -> bool:
        return self.margin <= self.tolerance

    def describe(self) -> str:
        return (
            f"seq {self.sequence} pos {self.position}: greedy {self.greedy_token}"
            f" vs speculative {self.speculative_token}, margin {self.margin:.3g}"
            f" ({'near-tie' if self.near_tie else 'NOT a near-tie'},"
            f" tolerance {self.tolerance:.3g})"
        )


@dataclass(frozen=True)
class Comparison:
    sequences: int
    divergences: list[Divergence]

    @property
    def identical(self) -> bool:
        return not self.divergences

    @property
    def only_near_ties(self) -> bool:
        return all(d.near_tie for d in self.divergences)

    def verdict(self) -> str:
        if self.identical:
            return "lossless=yes"
        ties = "all at near-ties" if self.only_near_ties else "NOT all at near-ties"
        worst = max(d.margin for d in self.divergences)
        return (
            f"lossless=no ({len(self.divergences)} of {self.sequences} sequences diverge,"
            f" {ties}, largest margin {worst:.3g})"
        )


def tolerance(top: float, dtype: torch.dtype) -> float:
    return NEAR_TIE_ULPS * torch.finfo(dtype).eps * max(abs(top), 1.0)


@torch.inference_mode()
def margin_at(
    verifier: CausalLMAdapter, prompt: Sequence[int], prefix: Sequence[int]
) -> tuple[float, float]:
    """The verifier's best-minus-second logit after ``prompt + prefix`` (one full forward, no
    cache, in the model's own dtype), and the top logit."""
    model = verifier.model
    device = next(model.parameters()).device
    ids = torch.tensor([[*prompt, *prefix]], device=device)
    logits = model(input_ids=ids).logits[0, -1].float()
    top2 = logits.topk(2).values
    return float(top2[0] - top2[1]), float(top2[0])


def compare(
    verifier: CausalLMAdapter,
    prompts: Sequence[Sequence[int]],
    greedy: Sequence[Sequence[int]],
    speculative: Sequence[Sequence[int]],
) -> Comparison:
    """Every sequence where the speculative output parts from greedy, with the margin."""
    dtype = next(verifier.model.parameters()).dtype
    found = []
    for i, (prompt, g, s) in enumerate(zip(prompts, greedy, speculative, strict=True)):
        if list(g) == list(s):
            continue
        at = next((j for j, (a, b) in enumerate(zip(g, s, strict=False)) if a != b), None)
        if at is None:  # one is a prefix of the other: they part where the shorter one stops
            at = min(len(g), len(s))
        margin, top = margin_at(verifier, prompt, g[:at])
        found.append(
            Divergence(
                sequence=i,
                position=at,
                greedy_token=g[at] if at < len(g) else -1,
                speculative_token=s[at] if at < len(s) else -1,
                margin=margin,
                tolerance=tolerance(top, dtype),
            )
        )
    return Comparison(sequences=len(prompts), divergences=found)
