"""Which engine reads a Reader or chat request."""

from __future__ import annotations

from django.conf import settings

from model.engines.auto import AUTO, reading_engine
from webapp.core.errors import bad_parameter
from webapp.core.workers import serving_engines


def engine_for_model(model: str | None) -> str:
    """The default engine for no model; else the engine serving ``model`` now: a worker that
    runs it, or the `openai` engine when it is configured to call an endpoint with it.
    ``auto`` is served wherever ``local`` is (with no VLM engine served, it reads like it)."""
    if model is None:
        return settings.FOLIO_DEFAULT_ENGINE
    serving = engines_serving_now()
    if model in serving or (model == AUTO and reading_engine(AUTO) in serving):
        return model
    if "openai" in serving and settings.FOLIO_OPENAI_MODEL.rsplit("/", 1)[-1] == model:
        return "openai"
    if model == AUTO:
        raise bad_parameter(
            f"auto reads every page with the {reading_engine(AUTO)} engine first, and no worker "
            f"serves it now. Engines available now: {', '.join(sorted(serving)) or 'none'}"
        )
    raise bad_parameter(
        f"{model} is not available on this server: no GPU worker serves it and no "
        f"OpenAI-compatible endpoint is configured for it. Engines available now: "
        f"{', '.join(sorted(serving)) or 'none'}"
    )


def engines_serving_now() -> set[str]:
    try:
        return serving_engines()
    except Exception:  # the broker is down: nothing is served, and the answer says so
        return set()
