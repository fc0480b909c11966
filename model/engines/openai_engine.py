"""The ``openai`` engine: any OpenAI-compatible vision endpoint (a ``vllm serve`` sidecar
running jina-ocr-v1, or a hosted API) transcribes rendered pages.

Each page is rendered (long side 1600 px, the size Gundam mode suits), sent as a PNG data URL
with jina-ocr-v1's prompt at temperature 0, and its answer goes through the same
post-processing as the in-process vLLM engine. Requests are bounded per process (a semaphore,
so a threads pool of any size never sends more than ``concurrency`` at once), time out, and
are retried with exponential back-off and full jitter on the answers worth retrying
(timeouts, lost connections, 408, 409, 429 with its Retry-After, 5xx). A page that still
fails raises ``TransientEngineError``, so that the worker's own back-off takes over.

Configured by ``OpenAIConfig`` (``model/engines/openai_config.py``): from the environment
(``FOLIO_OPENAI_*``) when the engine loads, or by keyword for tests and scripts.
"""

from __future__ import annotations

import base64
import io
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import ClassVar

import httpx
from PIL import Image

from model.documents import DocumentError
from model.engines.base import (
    EngineError,
    EngineOptions,
    PageInput,
    PageResult,
    TransientEngineError,
)
from model.engines.openai_config import DEFAULT_CONCURRENCY, OpenAIConfig
from model.layout import page_size_points
from model.layout.grounding import grounded_layout
from model.pages import PageSelectionError
from model.postprocess import figure_reports, vlm_markdown
from model.rendering import open_page_image

logger = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# A Retry-After longer than this is not waited out inside a page: the worker's back-off is.
MAX_RETRY_AFTER = 60.0


class OpenAIEngine:
    name: ClassVar[str] = "openai"
    version: ClassVar[str] = "openai-1"
    # The default; FOLIO_OPENAI_CONCURRENCY sets the requests one process keeps in flight
    # (config.concurrency), read when the engine loads, never at import.
    max_pages_in_flight: ClassVar[int] = DEFAULT_CONCURRENCY

    def __init__(self, config: OpenAIConfig | None = None) -> None:
        self._config = config
        self._client: httpx.Client | None = None
        self._slots: threading.BoundedSemaphore | None = None
        self._lock = threading.Lock()
        self._sleep = time.sleep  # replaced in tests that count back-offs

    @property
    def config(self) -> OpenAIConfig:
        if self._config is None:
            self._config = OpenAIConfig.from_env()
        return self._config

    def load(self) -> None:
        # No model to load; check the configuration now so that a bad one fails the worker.
        self._http()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        started = time.perf_counter()
        try:
            image = open_page_image(
                page.data, page.mime_type, page.page_number, long_side=self.config.long_side
            )
        except (DocumentError, PageSelectionError) as exc:
            raise EngineError(f"page {page.page_number} cannot be read: {exc}") from exc
        rendered = time.perf_counter()
        answer, attempts = self._complete(_png_data_url(image))
        done = time.perf_counter()
        figures_wanted = bool(options.figures)
        markdown, figures = vlm_markdown(
            answer.text, page_size=image.size, page_number=page.page_number, figures=figures_wanted
        )
        result = PageResult(
            markdown=markdown,
            input_tokens=answer.prompt_tokens,
            output_tokens=answer.completion_tokens,
            render_seconds=rendered - started,
            engine_seconds=done - rendered,
            method="vlm",
        )
        result.extra.update(
            engine="openai",
            model=self.config.model,
            finish_reason=answer.finish_reason,
            attempts=attempts,
            image_size=list(image.size),
        )
        if answer.finish_reason not in ("stop", None):
            # No end-of-sequence: the page was cut at max_tokens, likely a repetition loop.
            result.extra["truncated"] = True
        if figures:
            result.extra["figures"] = figure_reports(image, figures)
        result.layout = grounded_layout(
            answer.text, page_size_points(page.data, page.mime_type, page.page_number)
        )
        return result

    # --- HTTP ---------------------------------------------------------------------------------

    def _http(self) -> tuple[httpx.Client, threading.BoundedSemaphore]:
        with self._lock:
            if self._client is None:
                config = self.config
                headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
                self._client = httpx.Client(
                    base_url=config.base_url.rstrip("/") + "/",
                    headers=headers,
                    timeout=httpx.Timeout(config.timeout, connect=config.connect_timeout),
                    limits=httpx.Limits(max_connections=config.concurrency),
                )
                self._slots = threading.BoundedSemaphore(config.concurrency)
            assert self._slots is not None  # made with the client, above
            return self._client, self._slots

    def _complete(self, image_url: str) -> tuple[_Answer, int]:
        config = self.config
        client, slots = self._http()
        body = {
            "model": config.model,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": image_url}},
                        {"type": "text", "text": config.prompt},
                    ],
                }
            ],
            "temperature": 0,
            "max_tokens": config.max_tokens,
            **config.extra_body,
        }
        attempt = 0
        while True:
            attempt += 1
            try:
                with slots:
                    response = client.post("chat/completions", json=body)
            except httpx.TimeoutException as exc:
                failure, retry_after = f"the endpoint did not answer in time ({exc})", None
            except httpx.TransportError as exc:
                failure, retry_after = f"the endpoint is unreachable ({exc})", None
            else:
                if response.status_code == 200:
                    return _answer(response), attempt
                if response.status_code not in RETRYABLE_STATUS:
                    raise EngineError(
                        f"the endpoint refused the page: HTTP {response.status_code} "
                        f"{_error_text(response)}"
                    )
                failure = f"HTTP {response.status_code} {_error_text(response)}"
                retry_after = _retry_after(response)
            if attempt > config.max_retries:
                raise TransientEngineError(
                    f"{failure} (after {attempt} attempts to {config.base_url})"
                )
            delay = self._backoff(attempt, retry_after)
            logger.warning("openai engine: %s; retrying in %.1f s", failure, delay)
            self._sleep(delay)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        ceiling = min(self.config.max_backoff, self.config.backoff * 2 ** (attempt - 1))
        return random.uniform(0, ceiling)  # full jitter: retries of many pages spread out


@dataclass(frozen=True)
class _Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None


def _answer(response: httpx.Response) -> _Answer:
    try:
        payload = response.json()
        choice = payload["choices"][0]
        text = choice["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise TransientEngineError(
            f"the endpoint's answer is not a chat completion: {exc}"
        ) from exc
    usage = payload.get("usage") or {}
    return _Answer(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
    )


def _retry_after(response: httpx.Response) -> float | None:
    raw = response.headers.get("Retry-After", "").strip()
    try:
        return max(0.0, float(raw)) if raw else None
    except ValueError:
        return None  # an HTTP date: rare for these endpoints, and back-off covers it


def _error_text(response: httpx.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return text[:300]


def _png_data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
