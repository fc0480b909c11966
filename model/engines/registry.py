"""Engine names → classes, imported lazily so that a worker loads only the engine it runs
(and a web process, which only validates names, imports none).

Test and extension hook: ``FOLIO_EXTRA_ENGINES="name=package.module:Class,..."`` adds engines
to the built-in ones, read at each lookup. The fault tests set it (``tests/fault_engines.py``:
engines that raise, hang or loop on purpose) in the test process and in the worker processes
they start; a deployment sets it only to plug in an engine of its own. A built-in name cannot
be replaced this way.
"""

from __future__ import annotations

import importlib
import os
from functools import cache

from model.engines.base import Engine

ENGINE_PATHS: dict[str, str] = {
    "local": "model.engines.local:LocalEngine",
    "transformers": "model.engines.transformers_engine:TransformersEngine",
    "jina-ocr-v1": "model.engines.vllm.engine:VllmEngine",
    "openai": "model.engines.openai_engine:OpenAIEngine",
}


EXTRA_ENGINES_VARIABLE = "FOLIO_EXTRA_ENGINES"


def engine_paths() -> dict[str, str]:
    """The built-in engines and any added through ``FOLIO_EXTRA_ENGINES``."""
    paths = dict(ENGINE_PATHS)
    for entry in os.environ.get(EXTRA_ENGINES_VARIABLE, "").split(","):
        if not entry.strip():
            continue
        name, sep, path = (part.strip() for part in entry.partition("="))
        if not sep or not name or ":" not in path:
            raise ValueError(
                f"{EXTRA_ENGINES_VARIABLE}: {entry.strip()!r} is not name=package.module:Class"
            )
        if name in ENGINE_PATHS:
            raise ValueError(f"{EXTRA_ENGINES_VARIABLE}: {name!r} is a built-in engine")
        paths[name] = path
    return paths


class UnknownEngine(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown engine {self.name!r}; known engines: {', '.join(engine_names())}"


def engine_names() -> list[str]:
    return sorted(engine_paths())


def engine_class(name: str) -> type[Engine]:
    try:
        module_name, _, attribute = engine_paths()[name].partition(":")
    except KeyError:
        raise UnknownEngine(name) from None
    return getattr(importlib.import_module(module_name), attribute)


@cache
def load_engine(name: str) -> Engine:
    """The process-wide instance of an engine, built on first use and kept."""
    return engine_class(name)()
