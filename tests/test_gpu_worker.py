"""How a worker holding the GPU engine must be started: its queue alone, a threads or solo pool."""

from __future__ import annotations

import pytest

from ocr_worker.engines import WorkerConfigurationError, check_worker_layout, pool_name


def test_the_gpu_engine_runs_in_a_threads_pool_on_its_own_queue():
    check_worker_layout(engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1"}, pool="threads")
    check_worker_layout(engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1"}, pool="solo")


def test_a_gpu_worker_that_also_takes_other_queues_is_refused():
    with pytest.raises(WorkerConfigurationError, match="consumes only ocr.jina-ocr-v1"):
        check_worker_layout(
            engines=["jina-ocr-v1", "local"],
            queues={"ocr.jina-ocr-v1", "ocr.local"},
            pool="threads",
        )


def test_the_gpu_engine_in_a_prefork_pool_is_refused():
    with pytest.raises(WorkerConfigurationError, match="threads or solo pool"):
        check_worker_layout(engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1"}, pool="prefork")


def test_cpu_engines_keep_sharing_a_prefork_worker():
    check_worker_layout(engines=["local"], queues={"ocr.local", "folio"}, pool="prefork")


def test_pool_names_are_read_from_aliases_and_classes():
    from celery.concurrency.prefork import TaskPool as PreforkPool
    from celery.concurrency.thread import TaskPool as ThreadPool

    assert [pool_name(p) for p in ("threads", "solo", "prefork")] == ["threads", "solo", "prefork"]
    assert pool_name(ThreadPool) == "threads"
    assert pool_name(PreforkPool) == "prefork"
