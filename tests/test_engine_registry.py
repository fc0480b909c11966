"""Engines described without being imported: the specs, their classes, their configuration,
and a web process that never imports an engine module."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model import gundam
from model.config import ConfigError
from model.engines.local_config import LocalConfig
from model.engines.openai_config import OpenAIConfig
from model.engines.registry import ENGINES, UnknownEngine, engine_spec
from tests import FASTMTP_EXTRA

ROOT = Path(__file__).resolve().parent.parent

# What a web process does with engines: start as gunicorn starts it (webapp.wsgi), import the
# whole URL tree (every view), open a PDF as an upload's check does, check a submission's
# engine and token budget, look up the result cache's engine version; then list the modules
# it imported.
WEB_PROCESS = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
import webapp.wsgi
import webapp.urls
from django.urls import get_resolver
get_resolver().url_patterns  # every view module
from model.documents import inspect_document
from tests.documents import born_digital_pdf
inspect_document(born_digital_pdf())
from model.engines.registry import ENGINES, engine_names, engine_spec
from webapp.results.services import engine_version
for name in engine_names():
    engine_version(name), engine_spec(name).min_input_tokens_per_page
print(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))
"""


@pytest.mark.slow
def test_importing_the_web_app_imports_no_engine_module():
    completed = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules = set(json.loads(completed.stdout.strip().splitlines()[-1]))
    engine_modules = {spec.import_path.partition(":")[0] for spec in ENGINES.values()}
    assert "webapp.ui.views" in modules  # the probe did import the web app
    assert not modules & engine_modules
    # ... nor what those engines would pull in: no inference runtime, nor PyMuPDF's layout
    # model, which PyMuPDF would load at import (model/runtimes.py).
    runtimes = {"torch", "transformers", "vllm", "rapidocr", "onnxruntime"}
    assert not modules & (runtimes | {"pymupdf4llm", "pymupdf.layout"})
    assert "pymupdf" in modules  # it opened the PDF


# Importing the transformers engine imports PyTorch: tens of seconds, the slow tier's.
SPEC_CASES = [
    pytest.param(name, marks=pytest.mark.slow) if name == "transformers" else name
    for name in sorted(ENGINES)
]


@pytest.mark.parametrize("name", SPEC_CASES)
def test_each_spec_says_what_its_engine_class_says(name):
    if name == "transformers":
        pytest.importorskip("torch", reason=FASTMTP_EXTRA)
    spec = ENGINES[name]
    engine = spec.engine_class()
    assert (engine.name, engine.version) == (spec.name, spec.version)
    assert engine.max_pages_in_flight == spec.pages_in_flight
    assert getattr(engine, "exclusive_worker", False) == spec.exclusive_worker


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_configuration_class_reads_the_environment_without_heavy_imports(name):
    spec = ENGINES[name]
    if spec.config_path is None:
        pytest.skip(f"the {name} engine has no configuration class yet")
    config = spec.config_class()
    assert callable(config.from_env)
    module = spec.config_path.partition(":")[0]
    probe = f"import sys, {module}; print(sorted(m for m in ('torch', 'vllm', 'httpx', "
    probe += "'rapidocr', 'onnxruntime', 'pymupdf', 'django') if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_vlm_token_floor_is_the_global_view_alone():
    floor = gundam.placeholder_count(gundam.NO_TILES)
    assert ENGINES["jina-ocr-v1"].min_input_tokens_per_page == floor


def test_an_unknown_engine_is_named_with_the_known_ones():
    with pytest.raises(UnknownEngine, match="known engines: .*local"):
        engine_spec("no-such-engine")


def test_an_extra_engine_gets_its_spec_from_its_class(monkeypatch):
    monkeypatch.setenv("FOLIO_EXTRA_ENGINES", "fault-refuse=tests.fault_engines:RefusingEngine")
    spec = engine_spec("fault-refuse")
    assert (spec.version, spec.pages_in_flight, spec.exclusive_worker) == ("fault-1", 1, False)


def test_the_openai_configuration_from_an_environment(tmp_path):
    secret = tmp_path / "key"
    secret.write_text("sk-from-file\n")
    config = OpenAIConfig.from_env(
        {
            "FOLIO_OPENAI_BASE_URL": "http://vllm:8000/v1",
            "FOLIO_OPENAI_API_KEY_FILE": str(secret),
            "FOLIO_OPENAI_CONCURRENCY": "16",
            "FOLIO_OPENAI_TIMEOUT": "2.5",
        }
    )
    assert (config.base_url, config.api_key, config.concurrency, config.timeout) == (
        "http://vllm:8000/v1",
        "sk-from-file",
        16,
        2.5,
    )
    assert (config.model, config.max_retries, config.max_tokens) == ("jinaai/jina-ocr-v1", 3, 8192)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "FOLIO_OPENAI_BASE_URL is not set"),
        ({"FOLIO_OPENAI_CONCURRENCY": "eight"}, "FOLIO_OPENAI_CONCURRENCY='eight' is not an"),
        ({"FOLIO_OPENAI_CONCURRENCY": "0"}, "FOLIO_OPENAI_CONCURRENCY=0 is below the minimum"),
        ({"FOLIO_OPENAI_TIMEOUT": "soon"}, "FOLIO_OPENAI_TIMEOUT='soon' is not a number"),
        ({"FOLIO_OPENAI_API_KEY_FILE": "/nonexistent/key"}, "FOLIO_OPENAI_API_KEY_FILE="),
    ],
)
def test_a_malformed_openai_setting_is_refused_by_name(environ, message):
    base = {} if not environ else {"FOLIO_OPENAI_BASE_URL": "http://vllm:8000/v1"}
    with pytest.raises(ConfigError, match=message):
        OpenAIConfig.from_env({**base, **environ})


def test_the_local_engine_reads_no_settings():
    assert LocalConfig.from_env({"FOLIO_ANYTHING": "1"}) == LocalConfig()


@pytest.mark.django_db
def test_a_token_budget_below_the_engines_floor_is_refused_up_front(make_user):
    from tests import documents
    from webapp.jobs import services
    from webapp.jobs.models import Job

    owner = make_user("budget")
    pdf = documents.born_digital_pdf()  # several pages
    with pytest.raises(services.SubmissionError, match="take at least") as refused:
        services.job_submit(
            owner=owner,
            data=pdf,
            filename="paper.pdf",
            engine="jina-ocr-v1",
            options=services.JobOptions.parse(token_budget=273),
        )
    assert refused.value.kind == "over_budget"
    assert not Job.objects.filter(owner=owner).exists()
