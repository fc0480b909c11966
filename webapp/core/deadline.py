"""One wall-clock deadline for a whole outbound HTTP exchange, enforced on the socket.

httpx's timeouts apply to each read and write: a server that trickles a header line every two
seconds never trips a 30-second read timeout, and holds the worker for as long as it likes.
Here every socket operation waits at most the time left before the deadline, so connecting,
TLS, the redirects and the body all share one budget."""

from __future__ import annotations

import time

import httpcore


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every wait ends by ``deadline`` (``time.monotonic()``)."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: float):
        self.stream = stream
        self.deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, within(self.deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, within(self.deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> DeadlineStream:
        timeout = within(self.deadline, timeout, httpcore.ConnectTimeout)
        return DeadlineStream(
            self.stream.start_tls(ssl_context, server_hostname, timeout), self.deadline
        )

    def get_extra_info(self, info: str):
        return self.stream.get_extra_info(info)


def within(deadline: float | None, timeout: float | None, error: type[Exception]) -> float | None:
    """The shorter of ``timeout`` and the time left; ``error`` once the deadline has passed."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the exchange's overall deadline passed")
    return left if timeout is None else min(timeout, left)
