"""The vLLM glue for the checkpoint's FastMTP draft head, run in every vLLM process.

It must run in the worker (which builds vLLM's configuration, where the draft is mapped) and in
the engine-core process that vLLM spawns (where the draft model is built). The worker calls
``register_glue`` before it starts the engine; Folio's ``vllm.general_plugins`` entry point
(``plugin``) runs the same in each process vLLM starts (vLLM loads every installed general
plugin at start-up, vllm/plugins/__init__.py).

Which glue (``model.engines.vllm.draft.route``):
- ``FOLIO_VLLM_PLUGIN=module:function`` names glue to call instead of Folio's (the checkpoint's
  own ``register()``, installed as a module); it is imported and called, and a failure stops
  the worker with the reason;
- otherwise Folio's own registration (``model.engines.vllm.fastmtp_vllm.register``).
"""

from __future__ import annotations

import importlib
import logging

from model.engines.vllm.draft import DraftRouteError, named_plugin

logger = logging.getLogger(__name__)

_done: set[str] = set()


def register_glue() -> str:
    """Run the glue once in this process; answers which (``plugin:module:function`` or
    ``folio``). Imports vLLM."""
    named = named_plugin()
    label = f"plugin:{named}" if named else "folio"
    if label in _done:
        return label
    if named:
        module_name, _, function = named.partition(":")
        try:
            glue = getattr(importlib.import_module(module_name), function)
        except (ImportError, AttributeError) as exc:
            raise DraftRouteError(f"FOLIO_VLLM_PLUGIN={named!r} cannot be loaded: {exc}") from exc
        glue()
    else:
        from model.engines.vllm import fastmtp_vllm

        fastmtp_vllm.register()
    _done.add(label)
    logger.info("vLLM draft glue registered: %s", label)
    return label


def plugin() -> None:
    """vLLM general plugin: the same glue in each process vLLM starts."""
    register_glue()
