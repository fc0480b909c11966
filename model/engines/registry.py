"""Every engine described without being imported: one ``EngineSpec`` per engine.

The web process reads specs only (names, versions for the result cache, token floors for
budgets): asking about the ``transformers`` engine must not pull in torch. A worker imports
the one engine it runs, through ``engine_class`` / ``load_engine``, when it loads it.
``tests/test_engine_registry.py`` holds each spec to its engine class, and checks that
importing the web app imports no engine module.

Test and extension hook: ``FOLIO_EXTRA_ENGINES="name=package.module:Class,..."`` adds engines
to the built-in ones, read at each lookup. The fault tests set it (``tests/fault_engines.py``:
engines that raise, hang or loop on purpose) in the test process and in the worker processes
they start; a deployment sets it only to plug in an engine of its own. A built-in name cannot
be replaced this way. Such an engine has no spec written down, so its spec is read from its
class: the one case where a lookup imports an engine.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from model.engines.auto import AUTO

if TYPE_CHECKING:
    from model.engines.base import Engine

EXTRA_ENGINES_VARIABLE = "FOLIO_EXTRA_ENGINES"


@dataclass(frozen=True)
class Setting:
    """An environment variable and the values of it that give one behaviour; the first is
    the one to set where it is unset."""

    variable: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class EngineSpec:
    """What the service needs to know about an engine without loading it."""

    name: str
    # Part of the result cache key: bump it (here and on the class) when the same input would
    # give other output.
    version: str
    # "package.module:Class" of the engine; imported only by a worker that runs it.
    import_path: str
    # "package.module:Class" of its configuration (``Class.from_env()``), in a module that
    # imports nothing heavy; None for an engine that reads no settings of its own yet.
    config_path: str | None = None
    # Pages one worker process keeps in flight at once by default (its configuration may
    # change it: FOLIO_OPENAI_CONCURRENCY, FOLIO_VLLM_PAGES_IN_FLIGHT).
    pages_in_flight: int = 1
    # Holds an accelerator: its worker consumes its queue only, in a threads or solo pool.
    exclusive_worker: bool = False
    # Input tokens a page costs at least (engines that see a page through a fixed number of
    # visual tokens); token budgets refuse up front what the page count proves too small.
    min_input_tokens_per_page: int = 0
    # The setting that runs it without speculative decoding, which a worker on its
    # no-speculation queue (``model.engines.handoff``) runs with. None for an engine that never
    # hands a page over.
    without_speculation: Setting | None = None

    def engine_class(self) -> type[Engine]:
        return cast("type[Engine]", _import(self.import_path))

    def config_class(self) -> type[Any] | None:
        return None if self.config_path is None else _import(self.config_path)


ENGINES: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        EngineSpec(
            name="local",
            version="local-15",
            import_path="model.engines.local:LocalEngine",
            config_path="model.engines.local_config:LocalConfig",
        ),
        EngineSpec(
            name="transformers",
            version="transformers-2",
            import_path="model.engines.transformers_engine:TransformersEngine",
            config_path="model.engines.transformers_config:TransformersConfig",
        ),
        EngineSpec(
            name="jina-ocr-v1",
            version="jina-ocr-v1-vllm-1",
            import_path="model.engines.vllm.engine:VllmEngine",
            config_path="model.engines.vllm.config:VllmConfig",
            pages_in_flight=32,
            exclusive_worker=True,
            # The global view alone, with vLLM's newline and separator tokens:
            # model.gundam.placeholder_count(NO_TILES) (the test holds the two together).
            min_input_tokens_per_page=273,
            without_speculation=Setting("FOLIO_VLLM_SPECULATION", ("off", "off-eager")),
        ),
        EngineSpec(
            name="openai",
            version="openai-1",
            import_path="model.engines.openai_engine:OpenAIEngine",
            config_path="model.engines.openai_config:OpenAIConfig",
            pages_in_flight=8,
        ),
    )
}
# The import paths alone, by name (kept for callers that only need where an engine lives).
ENGINE_PATHS: dict[str, str] = {name: spec.import_path for name, spec in ENGINES.items()}


def _import(path: str) -> Any:
    module_name, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


def _extra_engine_paths() -> dict[str, str]:
    paths = {}
    for entry in os.environ.get(EXTRA_ENGINES_VARIABLE, "").split(","):
        if not entry.strip():
            continue
        name, sep, path = (part.strip() for part in entry.partition("="))
        if not sep or not name or ":" not in path:
            raise ValueError(
                f"{EXTRA_ENGINES_VARIABLE}: {entry.strip()!r} is not name=package.module:Class"
            )
        if name in ENGINES:
            raise ValueError(f"{EXTRA_ENGINES_VARIABLE}: {name!r} is a built-in engine")
        paths[name] = path
    return paths


def engine_paths() -> dict[str, str]:
    """The built-in engines and any added through ``FOLIO_EXTRA_ENGINES``."""
    return {**ENGINE_PATHS, **_extra_engine_paths()}


class UnknownEngine(KeyError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown engine {self.name!r}; known engines: {', '.join(engine_names())}"


def engine_names() -> list[str]:
    return sorted(engine_paths())


def job_engine_names() -> list[str]:
    """What a job may ask for: every engine, and ``auto`` (``local`` first, a VLM engine for
    the pages it reads badly: ``model.engines.auto``)."""
    return sorted([*engine_paths(), AUTO])


def engine_spec(name: str) -> EngineSpec:
    """An engine's spec; for a built-in engine nothing is imported."""
    spec = ENGINES.get(name)
    if spec is not None:
        return spec
    path = _extra_engine_paths().get(name)
    if path is None:
        raise UnknownEngine(name)
    return _spec_of_class(name, path)


@cache
def _spec_of_class(name: str, path: str) -> EngineSpec:
    engine = _import(path)
    return EngineSpec(
        name=name,
        version=engine.version,
        import_path=path,
        pages_in_flight=getattr(engine, "max_pages_in_flight", 1),
        exclusive_worker=getattr(engine, "exclusive_worker", False),
        min_input_tokens_per_page=getattr(engine, "min_input_tokens_per_page", 0),
        without_speculation=getattr(engine, "without_speculation", None),
    )


def engine_class(name: str) -> type[Engine]:
    """The engine's class: this imports its module (and whatever that imports)."""
    try:
        path = engine_paths()[name]
    except KeyError:
        raise UnknownEngine(name) from None
    return cast("type[Engine]", _import(path))


@cache
def load_engine(name: str) -> Engine:
    """The process-wide instance of an engine, built on first use and kept."""
    return engine_class(name)()
