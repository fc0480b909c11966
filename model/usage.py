"""A job's engine figures, aggregated from its pages' ``PageResult.extra`` (any engine:
those that report nothing simply add no figures)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def job_usage(pages: Iterable[dict[str, Any]], *, wall_seconds: float) -> dict[str, Any]:
    """A job's figures from its pages' ``extra`` and output tokens.

    ``pages`` holds one dict per finished page: its ``extra`` plus ``output_tokens``.
    """
    pages = list(pages)
    output_tokens = sum(int(p.get("output_tokens") or 0) for p in pages)
    ttfts = [p["ttft_seconds"] for p in pages if p.get("ttft_seconds")]
    steps = accepted = draft_tokens = 0
    for page in pages:
        spec = page.get("spec_decode") or {}
        steps += int(spec.get("num_spec_steps") or 0)
        accepted += int(spec.get("num_accepted_draft_tokens") or 0)
        draft_tokens += int(spec.get("num_draft_tokens") or 0)
    usage: dict[str, Any] = {
        "pages": len(pages),
        "output_tokens": output_tokens,
        "pages_per_second": len(pages) / wall_seconds if wall_seconds > 0 else None,
        "output_tokens_per_second": output_tokens / wall_seconds if wall_seconds > 0 else None,
        "mean_ttft_seconds": sum(ttfts) / len(ttfts) if ttfts else None,
        "repetition_retries": sum(1 for p in pages if (p.get("repetition") or {}).get("retried")),
    }
    if draft_tokens:
        usage["acceptance_rate"] = accepted / draft_tokens
        usage["mean_acceptance_length"] = 1 + accepted / steps if steps else 1.0
    return usage
