"""Queue names: the one rule the web process and the workers share about where pages go."""

from __future__ import annotations


def engine_queue(engine: str) -> str:
    """Each engine has a queue of its own, so a GPU worker takes only pages for its model."""
    return f"ocr.{engine}"
