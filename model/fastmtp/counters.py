"""What a speculative run did, counted the way vLLM exports it.

``acceptance_rates[j]`` is the share of draft rounds whose draft at position ``j`` was accepted
(which needs every earlier one accepted too): the figure FastMTP reports as 81% / 56% / 36%.
``tokens_per_step`` is the mean number of tokens one verifier pass commits (accepted + 1),
vLLM's "mean acceptance length".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor


@dataclass
class SpecCounters:
    k: int
    drafts: int = 0  # draft rounds, one per sequence per verifier pass
    draft_tokens: int = 0
    accepted_tokens: int = 0
    accepted_per_position: list[int] = field(default_factory=list)
    verifier_passes: int = 0  # batched forward passes of the verifier after the prefill
    # Each pass's accepted drafts, row by row: at batch size one, vLLM's detailed per-request
    # ``per_step_accepted``.
    per_step: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.accepted_per_position:
            self.accepted_per_position = [0] * self.k

    def record(self, accepted: Tensor | list[int]) -> None:
        """``accepted`` (B,): how many of the K drafts each sequence kept in this pass."""
        counts = accepted if isinstance(accepted, list) else accepted.tolist()
        self.verifier_passes += 1
        self.per_step.append(list(counts))
        self.drafts += len(counts)
        self.draft_tokens += len(counts) * self.k
        self.accepted_tokens += sum(counts)
        for n in counts:
            for j in range(n):
                self.accepted_per_position[j] += 1

    @property
    def acceptance_rates(self) -> list[float]:
        return [a / self.drafts if self.drafts else 0.0 for a in self.accepted_per_position]

    @property
    def tokens_per_step(self) -> float:
        return 1.0 + self.accepted_tokens / self.drafts if self.drafts else 0.0

    def as_metrics(self) -> dict[str, int]:
        """Named like vLLM's ``vllm:spec_decode_*`` counters, so dashboards read both alike."""
        metrics = {
            "spec_decode_num_drafts": self.drafts,
            "spec_decode_num_draft_tokens": self.draft_tokens,
            "spec_decode_num_accepted_tokens": self.accepted_tokens,
        }
        for j, a in enumerate(self.accepted_per_position):
            metrics[f"spec_decode_num_accepted_tokens_per_pos_{j}"] = a
        return metrics

    def merge(self, other: SpecCounters) -> None:
        if other.k != self.k:
            raise ValueError(f"cannot merge counters of K={other.k} into K={self.k}")
        self.drafts += other.drafts
        self.draft_tokens += other.draft_tokens
        self.accepted_tokens += other.accepted_tokens
        self.verifier_passes += other.verifier_passes
        self.per_step.extend(other.per_step)
        for j, a in enumerate(other.accepted_per_position):
            self.accepted_per_position[j] += a
