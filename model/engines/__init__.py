from model.engines.base import (
    Engine,
    EngineError,
    EngineOptions,
    PageInput,
    PageResult,
    TransientEngineError,
)
from model.engines.registry import UnknownEngine, engine_class, engine_names, load_engine

__all__ = [
    "Engine",
    "EngineError",
    "EngineOptions",
    "PageInput",
    "PageResult",
    "TransientEngineError",
    "UnknownEngine",
    "engine_class",
    "engine_names",
    "load_engine",
]
