"""How a worker holding the GPU engine must be started: its queue alone, a threads or solo pool,
and without speculation on the no-speculation queue."""

from __future__ import annotations

import pytest

from model.engines.vllm.config import PRESETS, VllmConfig
from ocr_worker.engines import (
    WorkerConfigurationError,
    check_worker_layout,
    pool_name,
    settle_no_speculation,
)


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


def test_a_worker_on_the_no_speculation_queue_runs_its_engine_without_speculation():
    environ = {"FOLIO_VLLM_MODEL": "/models/jina-ocr-v1"}

    settle_no_speculation(
        engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1.plain"}, environ=environ
    )

    assert environ["FOLIO_VLLM_SPECULATION"] == "off"
    assert VllmConfig.from_env(environ).speculation == PRESETS["off"]


@pytest.mark.parametrize("preset", ["k1-graphs", "k3-eager", "ngram-k3"])
def test_a_speculation_preset_on_the_no_speculation_queue_stops_the_worker(preset):
    environ = {"FOLIO_VLLM_SPECULATION": preset}

    with pytest.raises(WorkerConfigurationError, match=f"FOLIO_VLLM_SPECULATION={preset}"):
        settle_no_speculation(
            engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1.plain"}, environ=environ
        )


def test_an_eager_worker_on_the_no_speculation_queue_stays_eager():
    environ = {"FOLIO_VLLM_SPECULATION": "off-eager"}

    settle_no_speculation(
        engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1.plain"}, environ=environ
    )

    assert environ["FOLIO_VLLM_SPECULATION"] == "off-eager"


def test_the_engines_own_queue_keeps_its_speculation():
    environ = {"FOLIO_VLLM_SPECULATION": "k3-eager"}

    settle_no_speculation(engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1"}, environ=environ)

    assert environ == {"FOLIO_VLLM_SPECULATION": "k3-eager"}


def test_the_no_speculation_queue_of_an_engine_that_never_hands_over_is_refused():
    with pytest.raises(WorkerConfigurationError, match="consume ocr.local instead"):
        settle_no_speculation(engines=["local"], queues={"ocr.local.plain"}, environ={})


@pytest.mark.slow
def test_a_real_worker_started_with_speculation_on_the_no_speculation_queue_says_why_it_stops(
    django_db_setup,
):
    from tests.workers import WorkerProcess

    worker = WorkerProcess(
        queues="ocr.jina-ocr-v1.plain",
        pool="threads",
        env={"FOLIO_VLLM_MODEL": "/models/jina-ocr-v1", "FOLIO_VLLM_SPECULATION": "k1-graphs"},
    )

    with pytest.raises(RuntimeError, match="exited at start"):
        worker.start(timeout=60)

    assert "FOLIO_VLLM_SPECULATION=k1-graphs" in worker.log_path.read_text()


@pytest.mark.parametrize("setting", [{}, {"FOLIO_VLLM_SPECULATION": "off-eager"}])
def test_a_worker_on_the_no_speculation_queue_decodes_with_the_off_presets_blocker(
    setting, tmp_path
):
    # Through the worker's own path: the queue's setting settled, the settings read, the
    # launch planned on a checkpoint with a draft head (whose default would be MTP).
    from model.engines.vllm import memory
    from model.engines.vllm.launch import plan_launch
    from tests.vllm import tiny_checkpoint

    folder = tiny_checkpoint.write(tmp_path / "tiny")
    gpu = memory.Device("cuda", "a 40 GiB GPU", 40 * memory.GIB)

    def planned(environ: dict) -> tuple[VllmConfig, object]:
        launch = plan_launch(VllmConfig.from_env(environ), device=gpu)
        return launch.config, launch.speculation

    environ = {"FOLIO_VLLM_MODEL": str(folder), **setting}
    settle_no_speculation(
        engines=["jina-ocr-v1"], queues={"ocr.jina-ocr-v1.plain"}, environ=environ
    )
    config, speculation = planned(environ)
    plain_config, plain = planned(
        {"FOLIO_VLLM_MODEL": str(folder), "FOLIO_VLLM_SPECULATION": "off"}
    )

    assert speculation.method is None
    assert config.blocks_ngrams(speculation) and plain_config.blocks_ngrams(plain)
    assert config.ngram_args([9, 10]) == plain_config.ngram_args([9, 10])
    # The queue's own worker, on the same checkpoint, decodes under MTP, without it.
    config, speculation = planned({"FOLIO_VLLM_MODEL": str(folder)})
    assert speculation.method == "mtp" and not config.blocks_ngrams(speculation)
