"""Each pytest-xdist worker gets a Redis database and a file store of its own.

Loaded with ``-p`` (pyproject's addopts), so it runs before pytest-django imports the settings:
xdist names the worker in the environment first. pytest-django already gives each worker a
database of its own (``test_folio_gw1``); without this, rate-limit counters and queues would be
shared between tests running at once. ``tests.stack`` runs serially where the broker is the
embedded one, which has a single database to give.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def worker_index() -> int | None:
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else None


def broker_for_worker(url: str, index: int) -> str:
    """``redis://host:port/15`` for gw0, ``.../14`` for gw1, and so on downwards, never to
    database 0: that is the default of a service that may be running beside the tests."""
    match = re.fullmatch(r"(rediss?://[^/]+)(?:/(\d+))?", url)
    if match is None:
        raise RuntimeError(f"parallel tests need a redis:// broker URL, not {url!r}")
    first = int(match.group(2) or 0)
    database = first - index
    if index and database < 1:
        raise RuntimeError(
            f"test process gw{index} would need Redis database {database}: give the tests a "
            "broker URL with a higher database number, or fewer processes (-n)"
        )
    return f"{match.group(1)}/{database}"


index = worker_index()
if index is not None:
    os.environ["FOLIO_BROKER_URL"] = broker_for_worker(os.environ["FOLIO_BROKER_URL"], index)
    if media := os.environ.get("FOLIO_MEDIA_ROOT"):
        os.environ["FOLIO_MEDIA_ROOT"] = str(Path(media) / f"gw{index}")
