"""One page through an engine and what follows it: the same steps in the worker and in the
quality harness, so that what the harness measures is what the service returns."""

from __future__ import annotations

import logging
import time

from model.engines.base import Engine, EngineOptions, PageInput, PageResult
from model.quality.signals import quality_report
from model.textnorm import normalize_markdown
from model.tokens import count_tokens

logger = logging.getLogger(__name__)


def transcribe_page(engine: Engine, page: PageInput, options: EngineOptions) -> PageResult:
    """The engine's transcription, normalised as the options ask, with its quality report in
    ``extra["quality"]`` (signals, ``needs_review``, reasons)."""
    result = engine.transcribe(page, options)
    return finish_page(page, result, options)


def finish_page(page: PageInput, result: PageResult, options: EngineOptions) -> PageResult:
    if options.normalize:
        normalized = normalize_markdown(result.markdown, options.normalize)
        if normalized != result.markdown:
            result.markdown = normalized
            if result.output_tokens and engine_counts_approximately(result):
                result.output_tokens = count_tokens(normalized)
    started = time.perf_counter()
    try:
        quality = quality_report(page, result)
    except Exception:  # a signal's bug must not fail a page that was transcribed
        logger.exception("page %s: quality signals failed", page.page_number)
        quality = {"needs_review": False, "reasons": [], "signals": {}, "error": True}
    quality["seconds"] = round(time.perf_counter() - started, 4)
    result.extra["quality"] = quality
    return result


def engine_counts_approximately(result: PageResult) -> bool:
    """Engines that bill the tokens they decoded keep that count; the local engine's count is
    an approximation of its Markdown, so it follows the Markdown."""
    return result.method in ("text-layer", "ocr")
