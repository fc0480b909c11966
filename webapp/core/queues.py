"""Queue names: the one rule the web process and the workers share about where pages go."""

from __future__ import annotations

PLAIN_SUFFIX = ".plain"


def engine_queue(engine: str) -> str:
    """Each engine has a queue of its own, so a GPU worker takes only pages for its model."""
    return f"ocr.{engine}"


def plain_queue(engine: str) -> str:
    """Pages an engine hands over to a worker of the same engine started without speculative
    decoding (a runaway page, which only such a worker can decode with DeepSeek-OCR's n-gram
    processor): that worker consumes this queue alone."""
    return engine_queue(engine) + PLAIN_SUFFIX


def page_queue(engine: str, *, plain: bool) -> str:
    return plain_queue(engine) if plain else engine_queue(engine)
