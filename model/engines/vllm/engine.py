"""``jina-ocr-v1``: the checkpoint on vLLM, loaded once in the worker process.

One ``AsyncLLM`` runs on an event loop of its own thread; every page task of the worker's
threads pool submits its request there and waits, so up to ``pages_in_flight`` pages are
decoded together and vLLM batches them continuously. vLLM starts its engine-core process
itself (spawned, never forked), so load this engine in a threads or solo pool: prefork
children are daemonic and may not start processes.

Before vLLM starts, ``launch.plan_launch`` decides the preset, the glue that serves the
checkpoint's FastMTP draft head and the memory plan; a plan that cannot work stops the worker
with the reason and the numbers (the worker's start-up turns the error into an exit).

Runaway repetition: vLLM refuses DeepSeek-OCR's n-gram logits processor while speculative
decoding is on, so each page is checked after decoding (``model.repetition``, with the
end-of-sequence id that vLLM keeps in ``token_ids`` stripped first). A runaway page is trimmed
to one copy of its loop and flagged (the quality report marks it for review). A page that ran
away under speculation also asks to be handed over (``model.engines.handoff``): the worker sends
it to a worker of this engine started without speculation, on the engine's no-speculation
queue, when one is live, and that worker decodes it with DeepSeek-OCR's n-gram processor.
Decoding it again in this process instead is opt-in (``FOLIO_VLLM_REPETITION_FALLBACK=on``): a
second engine, which needs its own share of GPU memory.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, ClassVar

from PIL import Image

from model import gundam, repetition
from model.documents import DocumentError
from model.engines import handoff
from model.engines.base import (
    EngineError,
    EngineOptions,
    PageInput,
    PageResult,
    TransientEngineError,
)
from model.engines.vllm import checkpoint, metrics
from model.engines.vllm.config import (
    NGRAM_WHITELIST_TOKENS,
    VLLM_MAX_TILES,
    Speculation,
    VllmConfig,
)
from model.engines.vllm.launch import plan_launch, runtime_problems
from model.engines.vllm.prompt import IMAGE_TOKEN
from model.layout import page_size_points
from model.layout.grounding import grounded_layout
from model.pages import PageSelectionError
from model.postprocess import figure_reports, vlm_markdown
from model.rendering import DEFAULT_LONG_SIDE, open_page_image

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decoded:
    """One finished request, as much of it as the page needs."""

    text: str
    token_ids: list[int]
    finish_reason: str | None
    prompt_tokens: int
    placeholders: int
    seconds: float
    ttft: float | None
    spec: dict[str, Any] | None


class VllmEngine:
    name: ClassVar[str] = "jina-ocr-v1"
    version: ClassVar[str] = "jina-ocr-v1-vllm-1"
    max_pages_in_flight: ClassVar[int] = 32
    # Holds an accelerator and starts processes: a worker serving it takes no other queue,
    # and runs a threads or solo pool.
    exclusive_worker: ClassVar[bool] = True

    def __init__(self, config: VllmConfig | None = None) -> None:
        self._config = config
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._main: Any = None
        self._fallback: Any = None
        self._image_token_id: int | None = None
        self._stop_ids: set[int] = set()
        self._prompt = ""
        self._whitelist: list[int] = []
        self._ids = itertools.count()
        self._load_lock = threading.Lock()
        self.status: dict[str, Any] = {"loaded": False}

    @property
    def config(self) -> VllmConfig:
        if self._config is None:
            self._config = VllmConfig.from_env()
        return self._config

    # --- start and stop ----------------------------------------------------------------------

    def load(self) -> None:
        with self._load_lock:
            if self._main is not None:
                return
            self._load()

    def _load(self) -> None:
        problems = runtime_problems()
        if problems:
            raise EngineError("vLLM cannot serve this checkpoint here: " + "; ".join(problems))
        launch = plan_launch(self.config)
        # The settings as resolved for this checkpoint (the output cap within its positions).
        config = self._config = launch.config
        launch.memory.check()
        for line in launch.memory.lines():
            logger.info("memory plan: %s", line)
        # Always: the glue also keeps the draft tensors out of the main model's weights.
        glue = checkpoint.register_glue()
        speculation = launch.speculation
        self._prompt = launch.prompt
        self._start_loop()
        # Without speculation the main engine runs DeepSeek-OCR's n-gram blocker itself.
        self._main = self._call(_start_engine(launch.engine_args, ngram=self._blocker(speculation)))
        guarded = config.repetition_fallback and not config.fixed_output_tokens
        if speculation.method is not None and guarded:
            self._fallback = self._call(_start_engine(config.fallback_args(), ngram=True))
        tokenizer = self._call(_tokenizer(self._main))
        self._image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
        self._stop_ids = {t for t in [tokenizer.eos_token_id] if isinstance(t, int)}
        self._whitelist = [
            token_id
            for token_id in (tokenizer.convert_tokens_to_ids(t) for t in NGRAM_WHITELIST_TOKENS)
            if isinstance(token_id, int) and token_id >= 0
        ]
        self.status = {
            "loaded": True,
            "model": config.model,
            "architecture": launch.checkpoint.architecture,
            "draft_head": launch.checkpoint.draft.layout or "none",
            "draft_glue": launch.route or "none",
            "registered_glue": glue,
            "speculation": speculation.name,
            "speculation_method": speculation.method,
            "speculation_reason": launch.speculation_reason,
            "ngram_blocker": self._blocker(speculation),
            "repetition_fallback": self._fallback is not None,
            "pages_in_flight": config.pages_in_flight,
            "max_model_len": launch.engine_args.get("max_model_len"),
            "memory_plan_fits_pages": launch.memory.pages_that_fit,
        }
        metrics.engine_info(self.status)
        logger.info("vLLM engine ready: %s", self.status)

    def close(self) -> None:
        for engine in (self._fallback, self._main):
            if engine is not None:
                engine.shutdown()
        self._main = self._fallback = None
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._loop = None
        self.status = {"loaded": False}

    def _start_loop(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="vllm-engine-loop", daemon=True
        )
        self._thread.start()

    def _submit(self, coroutine: Any) -> Future[Any]:
        """Run ``coroutine`` on the engine's event loop thread (vLLM's engine is asyncio)."""
        if self._loop is None:
            raise EngineError("the vLLM engine is not loaded (the worker calls load() at start)")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def _call(self, coroutine: Any, timeout: float | None = None) -> Any:
        return self._submit(coroutine).result(timeout)

    # --- one page ----------------------------------------------------------------------------

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        if self._main is None:
            raise EngineError("the vLLM engine is not loaded (the worker calls load() at start)")
        started = time.perf_counter()
        try:
            image = open_page_image(
                page.data, page.mime_type, page.page_number, long_side=DEFAULT_LONG_SIDE
            )
        except (DocumentError, PageSelectionError) as exc:
            raise EngineError(f"page {page.page_number} cannot be read: {exc}") from exc
        rendered = time.perf_counter()

        first = self._decode(self._main, image, ngram=self._blocked)
        kept, guard = first, self._guard(first)
        if self.config.fixed_output_tokens:
            guard = {"runaway": False, "reason": "fixed-output-benchmark", "retried": False}
        if guard["runaway"] and self._fallback is not None:
            retry = self._decode(self._fallback, image, ngram=True)
            again = self._verdict(retry)
            guard.update(retried=True, retry_reason=again.reason, retry_tokens=len(retry.token_ids))
            kept = retry
            metrics.repetition_retry()
        text = kept.text
        verdict = self._verdict(kept)
        if verdict.runaway and not self.config.fixed_output_tokens:
            keep = repetition.trimmed_length(kept.token_ids, verdict.tail)
            if keep < len(kept.token_ids):
                text = self._call(_detokenize(self._main, kept.token_ids[:keep]))
                guard["trimmed_to"] = keep
        done = time.perf_counter()

        markdown, figures = vlm_markdown(
            text,
            page_size=image.size,
            page_number=page.page_number,
            figures=bool(options.figures),
        )
        grid = gundam.choose_grid(*image.size, max_tiles=VLLM_MAX_TILES)
        result = PageResult(
            markdown=markdown,
            input_tokens=kept.prompt_tokens,
            output_tokens=len(kept.token_ids),
            render_seconds=rendered - started,
            engine_seconds=done - rendered,
            method="vlm",
        )
        result.extra.update(
            engine=self.name,
            speculation=self.status.get("speculation"),
            image_size=list(image.size),
            grid=[grid.columns, grid.rows],
            placeholders=first.placeholders,
            expected_placeholders=gundam.placeholder_count(grid),
            ttft_seconds=first.ttft,
            decode_seconds=first.seconds,
            finish_reason=first.finish_reason,
            generated_tokens=len(first.token_ids) + (guard.get("retry_tokens") or 0),
            repetition=guard,
        )
        if first.spec:
            result.extra["spec_decode"] = first.spec
        if guard["runaway"] and not guard["retried"] and not self._spec_off:
            # Only an engine without speculation may run the n-gram processor on it.
            handoff.ask_plain(result.extra, f"runaway repetition ({guard['reason']})")
        if figures:
            result.extra["figures"] = figure_reports(image, figures)
        result.layout = grounded_layout(
            text, page_size_points(page.data, page.mime_type, page.page_number)
        )
        metrics.page_done(result.extra, output_tokens=len(kept.token_ids))
        # One structured line per page in the worker's log, beside the copy of ``extra`` that
        # the page row keeps: the log is where an operator follows a GPU worker live.
        logger.info("page figures %s", json.dumps(_loggable(result), sort_keys=True))
        return result

    @property
    def _spec_off(self) -> bool:
        """The main engine decodes without speculation (``off`` or ``off-eager``)."""
        return bool(self.status.get("loaded")) and self.status.get("speculation_method") is None

    def _blocker(self, speculation: Speculation) -> bool:
        """Whether the main engine decodes with DeepSeek-OCR's n-gram blocker
        (``VllmConfig.blocks_ngrams``)."""
        return self.config.blocks_ngrams(speculation)

    @property
    def _blocked(self) -> bool:
        return bool(self.status.get("ngram_blocker"))

    def _verdict(self, decoded: Decoded) -> repetition.Verdict:
        return repetition.check(decoded.token_ids, decoded.finish_reason, stop_ids=self._stop_ids)

    def _guard(self, decoded: Decoded) -> dict[str, Any]:
        verdict = self._verdict(decoded)
        return {"runaway": verdict.runaway, "reason": verdict.reason, "retried": False}

    def _decode(self, engine: Any, image: Image.Image, *, ngram: bool) -> Decoded:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        extra_args = self.config.ngram_args(self._whitelist) if ngram else None
        fixed = self.config.fixed_output_tokens
        length: dict[str, Any] = (
            {"max_tokens": fixed, "min_tokens": fixed, "ignore_eos": True}
            if fixed
            else {"max_tokens": self.config.output_cap}
        )
        params = SamplingParams(
            temperature=0.0,
            **length,
            skip_special_tokens=False,
            output_kind=RequestOutputKind.FINAL_ONLY,
            extra_args=extra_args,
        )
        request_id = f"page-{next(self._ids)}"
        future = self._submit(_generate(engine, image, params, request_id, self._prompt))
        try:
            output, seconds = future.result(self.config.page_timeout)
        except FutureTimeout:
            future.cancel()  # cancelling the generator aborts the request in vLLM
            raise TransientEngineError(
                f"the page took longer than {self.config.page_timeout:.0f} s to decode"
            ) from None
        except (EngineError, ValueError) as exc:
            raise EngineError(f"vLLM refused the page: {exc}") from exc
        completion = output.outputs[0]
        prompt_ids = list(output.prompt_token_ids or [])
        stats = output.metrics
        spec = getattr(completion, "spec_decode_metrics", None)
        return Decoded(
            text=completion.text,
            token_ids=list(completion.token_ids),
            finish_reason=completion.finish_reason,
            prompt_tokens=len(prompt_ids),
            placeholders=sum(1 for t in prompt_ids if t == self._image_token_id),
            seconds=seconds,
            ttft=getattr(stats, "first_token_latency", None) or None,
            spec=spec.to_dict() if spec is not None else None,
        )


def _loggable(result: PageResult) -> dict[str, Any]:
    extra = {k: v for k, v in result.extra.items() if k != "figures"}
    extra["figures"] = len(result.extra.get("figures") or [])
    return {**extra, "input_tokens": result.input_tokens, "output_tokens": result.output_tokens}


# --- coroutines run on the engine's loop ----------------------------------------------------


async def _start_engine(args: dict[str, Any], *, ngram: bool) -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    if ngram:
        from vllm.model_executor.models.deepseek_ocr import NGramPerReqLogitsProcessor

        args = {**args, "logits_processors": [NGramPerReqLogitsProcessor]}
    logger.info("starting vLLM engine: %s", {k: v for k, v in args.items() if k != "model"})
    return AsyncLLM.from_engine_args(AsyncEngineArgs(**args))


async def _tokenizer(engine: Any) -> Any:
    tokenizer = engine.get_tokenizer()
    return await tokenizer if asyncio.iscoroutine(tokenizer) else tokenizer


async def _detokenize(engine: Any, token_ids: list[int]) -> str:
    tokenizer = await _tokenizer(engine)
    text: str = tokenizer.decode(token_ids, skip_special_tokens=False)
    return text


async def _generate(
    engine: Any, image: Image.Image, params: Any, request_id: str, text: str
) -> Any:
    started = time.perf_counter()
    final = None
    prompt = {"prompt": text, "multi_modal_data": {"image": image}}
    async for output in engine.generate(prompt, params, request_id):
        final = output
    if final is None:
        raise EngineError("vLLM returned no output for the page")
    return final, time.perf_counter() - started
