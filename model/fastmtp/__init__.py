"""FastMTP speculative decoding with PyTorch: lossless greedy decoding, faster.

The names below import torch when first used; ``model.fastmtp.layout`` (which tensors a draft
head has and where they go) never does, so the preflight reads it without torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from model.fastmtp.counters import SpecCounters
    from model.fastmtp.decoding import greedy_decode, speculative_decode
    from model.fastmtp.draft import MTPDraftBlock
    from model.fastmtp.hf import CausalLMAdapter, VerifierStep
    from model.fastmtp.layers import BlockConfig

_HOMES = {
    "BlockConfig": "model.fastmtp.layers",
    "CausalLMAdapter": "model.fastmtp.hf",
    "MTPDraftBlock": "model.fastmtp.draft",
    "SpecCounters": "model.fastmtp.counters",
    "VerifierStep": "model.fastmtp.hf",
    "greedy_decode": "model.fastmtp.decoding",
    "speculative_decode": "model.fastmtp.decoding",
}

__all__ = [
    "BlockConfig",
    "CausalLMAdapter",
    "MTPDraftBlock",
    "SpecCounters",
    "VerifierStep",
    "greedy_decode",
    "speculative_decode",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
