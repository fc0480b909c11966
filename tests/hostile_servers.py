"""HTTP servers that misbehave on purpose, for the outbound deadline and size caps
(``tests/test_hostile_input.py``): real sockets on 127.0.0.1, each in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class HostileServer:
    url: str
    sent: int = 0  # bytes written to the client so far
    # Set when the client hung up while this server still had more to send: it gave up.
    hung_up: threading.Event = field(default_factory=threading.Event)


@contextmanager
def hostile_server(behaviour: str, *, seconds: float = 30.0) -> Iterator[HostileServer]:
    """A server that, to every request:

    - ``trickle``: sends a status line, then one header line every 0.5 s (each read arrives
      well within any per-read timeout), for ``seconds``;
    - ``huge``: answers 200 with a 1.5 GB Content-Length and streams zeros until the client
      hangs up (``sent`` says how much it managed to write)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    server = HostileServer(url=f"http://127.0.0.1:{listener.getsockname()[1]}/hook")
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(65536)  # the request head (and some of the body): enough to answer
                if behaviour == "trickle":
                    conn.sendall(b"HTTP/1.1 200 OK\r\n")
                    ends = time.monotonic() + seconds
                    while not stop.is_set() and time.monotonic() < ends:
                        conn.sendall(b"X-Slow: a\r\n")
                        time.sleep(0.5)
                else:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: 1500000000\r\n\r\n"
                    )
                    block = b"0" * 65536
                    while not stop.is_set() and server.sent < 1_500_000_000:
                        conn.sendall(block)
                        server.sent += len(block)
            except OSError:
                if not stop.is_set():
                    server.hung_up.set()  # the client hung up: what this server is here to see

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@dataclass
class RecordingServer:
    url: str  # http://127.0.0.1:PORT
    requests: list[str]  # "METHOD PATH" of every request it was sent, in order


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    """A listener on 127.0.0.1 that answers every request 404 and notes it: the documents of
    ``tests/hostile_office.py`` point at it, and it must hear nothing."""
    import http.server

    server = RecordingServer(url="", requests=[])

    class Handler(http.server.BaseHTTPRequestHandler):
        def _note(self) -> None:
            server.requests.append(f"{self.command} {self.path}")
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_HEAD = do_POST = do_OPTIONS = do_PROPFIND = _note

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
