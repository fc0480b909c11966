"""Job and page ids on every log line written while a page is worked on, so that the JSON
logs of many workers can be filtered down to one job."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

_context: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "folio_log_context", default=None
)


@contextmanager
def log_context(**fields) -> Iterator[None]:
    token = _context.set({**(_context.get() or {}), **{k: str(v) for k, v in fields.items()}})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in (_context.get() or {}).items():
            setattr(record, key, value)
        return True
