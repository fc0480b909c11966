"""Engine names → classes, imported lazily so that a worker loads only the engine it runs
(and a web process, which only validates names, imports none)."""

from __future__ import annotations

import importlib
from functools import cache

from model.engines.base import Engine

ENGINE_PATHS: dict[str, str] = {
    "local": "model.engines.local:LocalEngine",
    "transformers": "model.engines.transformers_engine:TransformersEngine",
    "jina-ocr-v1": "model.engines.vllm.engine:VllmEngine",
    "openai": "model.engines.openai_engine:OpenAIEngine",
}


class UnknownEngine(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown engine {self.name!r}; known engines: {', '.join(sorted(ENGINE_PATHS))}"


def engine_names() -> list[str]:
    return sorted(ENGINE_PATHS)


def engine_class(name: str) -> type[Engine]:
    try:
        module_name, _, attribute = ENGINE_PATHS[name].partition(":")
    except KeyError:
        raise UnknownEngine(name) from None
    return getattr(importlib.import_module(module_name), attribute)


@cache
def load_engine(name: str) -> Engine:
    """The process-wide instance of an engine, built on first use and kept."""
    return engine_class(name)()
