"""FastMTP speculative decoding with PyTorch: lossless greedy decoding, faster.

Importing this package imports torch; ``import model`` alone does not.
"""

from __future__ import annotations

from model.fastmtp.counters import SpecCounters
from model.fastmtp.decoding import greedy_decode, speculative_decode
from model.fastmtp.draft import MTPDraftBlock
from model.fastmtp.hf import CausalLMAdapter, VerifierStep
from model.fastmtp.layers import BlockConfig

__all__ = [
    "BlockConfig",
    "CausalLMAdapter",
    "MTPDraftBlock",
    "SpecCounters",
    "VerifierStep",
    "greedy_decode",
    "speculative_decode",
]
