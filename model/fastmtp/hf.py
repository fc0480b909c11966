"""The verifier side: any causal LM with the Hugging Face calling convention.

``model(input_ids=..., attention_mask=..., position_ids=..., past_key_values=...|cache=...,
use_cache=True, output_hidden_states=True)`` returning ``.logits``, ``.hidden_states`` (the last
one after the final norm) and the cache. ``transformers`` 5 renamed ``past_key_values`` to
``cache``; the adapter reads the model's signature and uses whichever it takes.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

logger = logging.getLogger(__name__)


@dataclass
class VerifierStep:
    logits: Tensor  # (B, Q, vocab)
    hidden: Tensor  # (B, Q, H): the last hidden state, which the draft block consumes
    cache: Any
    # (B, Q, H): what the decoder's first layer read, the page's features merged in where the
    # model merges them itself (a Hugging Face model's hidden_states[0]).
    inputs: Tensor | None = None


class CausalLMAdapter:
    def __init__(self, model: nn.Module):
        self.model = model
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    @property
    def embedding(self) -> nn.Module:
        return self.model.get_input_embeddings()

    @property
    def head(self) -> nn.Module:
        head = self.model.get_output_embeddings()
        if head is None:
            raise ValueError("the verifier has no output head to share with the draft block")
        return head

    def __call__(
        self,
        input_ids: Tensor,
        positions: Tensor,
        key_valid: Tensor,
        cache: Any,
        *,
        inputs_embeds: Tensor | None = None,
    ) -> VerifierStep:
        """Run (B, Q) new tokens at explicit positions; ``key_valid`` (B, S_past + Q) marks the
        cache slots plus the new ones that hold real tokens.

        ``inputs_embeds`` (B, Q, H), when given, is fed instead of ``input_ids``: a multimodal
        prefill, where image features replace the placeholder tokens' embeddings.
        """
        inputs = (
            {"input_ids": input_ids} if inputs_embeds is None else {"inputs_embeds": inputs_embeds}
        )
        out = self.model(
            **inputs,
            attention_mask=key_valid.long(),
            position_ids=positions,
            use_cache=True,
            output_hidden_states=True,
            **{self._cache_kw: cache},
        )
        hidden = out.hidden_states
        return VerifierStep(out.logits, hidden[-1], _returned_cache(out), inputs=hidden[0])


def _returned_cache(out: Any) -> Any:
    # Read the field by name: on transformers 5 outputs the old attribute logs a deprecation.
    keys = out.keys() if hasattr(out, "keys") else ()
    if "cache" in keys:
        return out["cache"]
    if "past_key_values" in keys:
        return out["past_key_values"]
    return getattr(out, "cache", None) or out.past_key_values
