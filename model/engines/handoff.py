"""An engine's request that a page be decoded again by a worker started without speculation.

vLLM refuses DeepSeek-OCR's n-gram logits processor (the guard against runaway repetition)
while speculative decoding is on, so a page that ran away under speculation can only be decoded
properly by an engine without it. Rather than a second engine in the same process, which needs
its own share of the GPU, the engine marks the page (``ask_plain``) and returns what it has
(trimmed, flagged for review); the worker then hands the page over to the engine's
no-speculation queue (``webapp.core.queues.plain_queue``) when a live worker consumes it, and
saves the page as it is otherwise. Engines never see queues: this key in ``PageResult.extra``
is the whole protocol.
"""

from __future__ import annotations

from typing import Any

KEY = "handoff"
PLAIN = "decode-without-speculation"


def ask_plain(extra: dict[str, Any], reason: str) -> None:
    extra[KEY] = {"to": PLAIN, "reason": reason}


def wants_plain(extra: dict[str, Any]) -> str | None:
    """The reason the engine gave for handing the page over, or ``None``."""
    asked = extra.get(KEY)
    if isinstance(asked, dict) and asked.get("to") == PLAIN:
        return str(asked.get("reason") or "the engine asked")
    return None
