"""A page's reading kept aside while the page waits for a second one: an ``auto`` job's
page holds its local reading in ``Page.escalation["local"]`` until a VLM engine has read it
too (model.engines.auto), as plain JSON."""

from __future__ import annotations

from typing import Any

from model.engines.base import PageResult
from model.layout.schema import PageLayout


def reading_kept_aside(result: PageResult, *, engine_version: str) -> dict[str, Any]:
    """What ``reading_back`` needs to give the same ``PageResult`` again (its quality report
    included, in ``extra["quality"]``)."""
    extra = {key: value for key, value in result.extra.items() if key != "figures"}
    return {
        "markdown": result.markdown,
        "layout": result.layout.to_dict() if result.layout is not None else None,
        "method": result.method,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "render_seconds": result.render_seconds,
        "engine_seconds": result.engine_seconds,
        "extra": extra,
        "engine_version": engine_version,
    }


def reading_back(kept: dict[str, Any]) -> PageResult:
    layout = kept.get("layout")
    return PageResult(
        markdown=kept["markdown"],
        input_tokens=int(kept.get("input_tokens") or 0),
        output_tokens=int(kept.get("output_tokens") or 0),
        render_seconds=float(kept.get("render_seconds") or 0.0),
        engine_seconds=float(kept.get("engine_seconds") or 0.0),
        method=kept.get("method") or "",
        extra=dict(kept.get("extra") or {}),
        layout=PageLayout.from_dict(layout) if layout else None,
    )
