"""A real HTTP server in the test process that records what it receives and answers from a
script (e.g. 500, 500, then 200), as a webhook receiver would."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    path: str


@dataclass
class Receiver:
    # One (status, headers) per request in order; the last one repeats.
    script: list[tuple[int, dict[str, str]]] = field(default_factory=lambda: [(200, {})])
    received: list[Received] = field(default_factory=list)
    # Answer a verification event with its challenge, as an endpoint that passes it does.
    echo_challenge: bool = False
    # The address it listens on (the multi-host test's is on its own network).
    host: str = "127.0.0.1"
    # Called with each request as it arrives (the multi-host test verifies signatures then).
    on_receive: Callable[[Received], None] | None = None

    def __post_init__(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length)
                arrived = Received(dict(self.headers), body, self.path)
                if receiver.on_receive is not None:
                    receiver.on_receive(arrived)
                with receiver.lock:
                    receiver.received.append(arrived)
                    index = min(len(receiver.received), len(receiver.script)) - 1
                status, headers = receiver.script[index]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                answer = b"ok"
                if receiver.echo_challenge:
                    answer = json.loads(body).get("data", {}).get("challenge", "").encode()
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):  # keep the test output quiet
                pass

        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((self.host, 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}/hooks/folio"

    def wait_for(self, count: int, *, timeout: float = 60) -> list[Received]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.received) >= count:
                    return list(self.received)
            time.sleep(0.1)
        raise TimeoutError(f"{len(self.received)} of {count} requests after {timeout} s")

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
