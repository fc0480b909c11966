"""The ``openai`` engine against a real local HTTP server speaking OpenAI's chat completions.

The server is a stub at the network boundary (Folio's own /v1/chat/completions is tested in
its own file): these tests are about the client's retries, back-off, concurrency bound,
timeouts and post-processing.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from PIL import Image

from model.config import ConfigError
from model.engines.base import EngineError, EngineOptions, PageInput, TransientEngineError
from model.engines.openai_engine import OpenAIConfig, OpenAIEngine
from model.engines.vllm.prompt import JINA_OCR_PROMPT

GROUNDED = (
    "<|ref|>title<|/ref|><|det|>[[10, 10, 990, 60]]<|/det|>\n# Invoice 4721\n\n"
    "<|ref|>image<|/ref|><|det|>[[0, 500, 499, 999]]<|/det|>\n\n"
    "<table><tr><td>Total</td><td>380</td></tr></table>\n"
)


def completion(text: str = GROUNDED, finish_reason: str = "stop") -> dict:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 921, "completion_tokens": 37, "total_tokens": 958},
    }


class Stub:
    """Answers each POST with the next scripted reply; records requests and concurrency."""

    def __init__(self, replies: list[Callable[[], tuple[int, dict, dict | str]]]):
        self.replies = replies
        self.requests: list[dict] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.lock = threading.Lock()

    def next_reply(self, body: dict) -> tuple[int, dict, dict | str]:
        with self.lock:
            self.requests.append(body)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        try:
            return reply()
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture
def serve() -> Iterator[Callable[[Stub], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(stub: Stub) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                body["_path"] = self.path
                body["_auth"] = self.headers.get("Authorization")
                status, headers, payload = stub.next_reply(body)
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def ok(text: str = GROUNDED, finish_reason: str = "stop"):
    return lambda: (200, {}, completion(text, finish_reason))


def status(code: int, headers: dict | None = None):
    return lambda: (code, headers or {}, {"error": {"message": f"status {code}"}})


def engine_for(url: str, **config) -> tuple[OpenAIEngine, list[float]]:
    engine = OpenAIEngine(OpenAIConfig(base_url=url, model="jina-ocr-v1", **config))
    sleeps: list[float] = []
    engine._sleep = sleeps.append  # back-offs are counted, not waited out
    return engine, sleeps


def png_page(size: tuple[int, int] = (800, 1000)) -> PageInput:
    buffer = io.BytesIO()
    Image.new("RGB", size, "white").save(buffer, format="PNG")
    return PageInput(buffer.getvalue(), "image/png", 1)


def test_a_page_is_sent_as_an_image_with_the_prompt_and_comes_back_clean(serve):
    stub = Stub([ok()])
    engine, _ = engine_for(serve(stub), api_key="sk-test")

    result = engine.transcribe(png_page(), EngineOptions())

    request = stub.requests[0]
    assert request["_path"] == "/v1/chat/completions"
    assert request["_auth"] == "Bearer sk-test"
    assert request["temperature"] == 0
    content = request["messages"][0]["content"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert content[1] == {"type": "text", "text": JINA_OCR_PROMPT}
    sent = Image.open(io.BytesIO(base64.b64decode(content[0]["image_url"]["url"].split(",")[1])))
    assert sent.size == (800, 1000)
    assert result.markdown == (
        "# Invoice 4721\n\n<table><tr><td>Total</td><td>380</td></tr></table>\n"
    )
    assert (result.input_tokens, result.output_tokens) == (921, 37)
    assert result.method == "vlm"
    assert result.extra["attempts"] == 1


def test_figures_asked_for_come_back_as_crops_linked_from_the_markdown(serve):
    engine, _ = engine_for(serve(Stub([ok()])))

    result = engine.transcribe(png_page(), EngineOptions(figures=True))

    assert "![](figures/page-0001-figure-1.png)" in result.markdown
    [figure] = result.extra["figures"]
    crop = Image.open(io.BytesIO(base64.b64decode(figure["png_base64"])))
    assert crop.size == (figure["box"][2] - figure["box"][0], figure["box"][3] - figure["box"][1])


def test_busy_answers_are_retried_with_growing_jittered_back_off(serve):
    stub = Stub([status(503), status(502), ok()])
    engine, sleeps = engine_for(serve(stub), backoff=1.0, max_retries=3)

    result = engine.transcribe(png_page(), EngineOptions())

    assert len(stub.requests) == 3
    assert result.extra["attempts"] == 3
    assert len(sleeps) == 2
    assert 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0


def test_a_rate_limit_is_waited_out_for_as_long_as_retry_after_says(serve):
    stub = Stub([status(429, {"Retry-After": "7"}), ok()])
    engine, sleeps = engine_for(serve(stub))

    engine.transcribe(png_page(), EngineOptions())

    assert sleeps == [7.0]


def test_an_endpoint_still_failing_after_the_retries_is_a_transient_error(serve):
    stub = Stub([status(503)])
    engine, sleeps = engine_for(serve(stub), max_retries=2)

    with pytest.raises(TransientEngineError, match="after 3 attempts"):
        engine.transcribe(png_page(), EngineOptions())
    assert len(stub.requests) == 3
    assert len(sleeps) == 2


def test_a_refused_request_is_not_retried(serve):
    stub = Stub([status(400)])
    engine, sleeps = engine_for(serve(stub))

    with pytest.raises(EngineError, match="HTTP 400") as raised:
        engine.transcribe(png_page(), EngineOptions())
    assert not isinstance(raised.value, TransientEngineError)
    assert len(stub.requests) == 1 and sleeps == []


def test_a_slow_endpoint_times_out_and_is_retried(serve):
    def slow():
        time.sleep(1.0)
        return 200, {}, completion()

    stub = Stub([slow, ok()])
    engine, sleeps = engine_for(serve(stub), timeout=0.3)

    result = engine.transcribe(png_page(), EngineOptions())

    assert result.extra["attempts"] == 2
    assert len(sleeps) == 1


def test_an_unreachable_endpoint_is_a_transient_error():
    with socket_closed_port() as port:
        engine, _ = engine_for(f"http://127.0.0.1:{port}/v1", max_retries=1)
        with pytest.raises(TransientEngineError, match="unreachable"):
            engine.transcribe(png_page(), EngineOptions())


def test_no_more_requests_than_the_concurrency_bound_are_in_flight(serve):
    def slowish():
        time.sleep(0.2)
        return 200, {}, completion()

    stub = Stub([slowish])
    engine, _ = engine_for(serve(stub), concurrency=2)
    page = png_page((300, 300))
    threads = [
        threading.Thread(target=engine.transcribe, args=(page, EngineOptions())) for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(stub.requests) == 6
    assert stub.most_in_flight == 2


def test_a_page_cut_at_the_token_cap_is_marked_truncated(serve):
    engine, _ = engine_for(serve(Stub([ok("la la la", finish_reason="length")])))

    result = engine.transcribe(png_page(), EngineOptions())

    assert result.extra["truncated"] is True
    assert result.extra["finish_reason"] == "length"


def test_an_answer_that_is_not_a_chat_completion_is_a_transient_error(serve):
    engine, _ = engine_for(serve(Stub([lambda: (200, {}, "{}")])), max_retries=0)

    with pytest.raises(TransientEngineError, match="not a chat completion"):
        engine.transcribe(png_page(), EngineOptions())


def test_without_an_endpoint_the_engine_refuses_to_load(monkeypatch):
    monkeypatch.delenv("FOLIO_OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="FOLIO_OPENAI_BASE_URL is not set"):
        OpenAIEngine().load()


class socket_closed_port:
    """A port nothing listens on: bound, then closed."""

    def __enter__(self) -> int:
        import socket

        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = probe.getsockname()[1]
        probe.close()
        return self.port

    def __exit__(self, *exc) -> None:
        pass
