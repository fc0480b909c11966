from model.engines.base import (
    Engine,
    EngineError,
    EngineOptions,
    PageInput,
    PageResult,
    TransientEngineError,
)
from model.engines.registry import (
    EngineSpec,
    UnknownEngine,
    engine_class,
    engine_names,
    engine_spec,
    load_engine,
)

__all__ = [
    "Engine",
    "EngineError",
    "EngineOptions",
    "EngineSpec",
    "PageInput",
    "PageResult",
    "TransientEngineError",
    "UnknownEngine",
    "engine_class",
    "engine_names",
    "engine_spec",
    "load_engine",
]
