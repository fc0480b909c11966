"""The ``local`` engine's configuration, read when a worker loads the engine.

- ``FOLIO_LOCAL_OCR_THREADS`` (default 1): the threads ONNX Runtime gives each OCR model in
  one worker process. A worker runs one process per CPU by default (Celery's concurrency),
  so one thread each keeps the cores busy without oversubscribing them; ONNX Runtime's own
  default, a thread per core in every process, spent 23 s of CPU where one thread spent
  16 s for the same three scans on the shared two-core machine (bench/scan_speed.py). A
  worker started with one process (``FOLIO_WORKER_CONCURRENCY=1``) on a larger machine can
  raise it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from model.config import env_int


@dataclass(frozen=True)
class LocalConfig:
    ocr_threads: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LocalConfig:
        return cls(ocr_threads=env_int("FOLIO_LOCAL_OCR_THREADS", 1, minimum=1, environ=environ))
