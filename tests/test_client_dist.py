"""The client installs on its own: a fresh virtualenv with only ``pip install ./folio_client``
gets the ``folio`` command (httpx and rich, nothing of the service), which converts a file
against a live server."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

from tests import documents

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ("django", "celery", "pymupdf", "onnxruntime", "rapidocr", "folio")


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("client-venv")
    venv.create(where, with_pip=True)
    # A registry is needed for httpx and rich, as for any pip install; where there is none the
    # install fails and says so.
    subprocess.run(
        [where / "bin" / "python", "-m", "pip", "install", "--quiet", str(ROOT / "folio_client")],
        check=True,
        timeout=600,
    )
    return where


def test_the_client_venv_holds_the_client_and_its_two_libraries_only(client_venv):
    listed = subprocess.run(
        [client_venv / "bin" / "python", "-m", "pip", "list", "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert {"folio-client", "httpx", "rich"} <= names
    assert not names & set(SERVICE)
    helped = subprocess.run(
        [client_venv / "bin" / "folio", "--help"], capture_output=True, text=True, check=True
    )
    assert "convert" in helped.stdout


def test_the_installed_client_converts_a_file_against_a_live_server(
    client_venv, live_server, make_user, worker, tmp_path
):
    from webapp.accounts.services import api_key_create

    key = api_key_create(user=make_user("clientonly")).secret
    source = tmp_path / "page.png"
    source.write_bytes(documents.png_page())
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "FOLIO_URL": live_server.url,
        "FOLIO_API_KEY": key,
    }

    done = subprocess.run(
        [client_venv / "bin" / "folio", "convert", str(source), "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["converted"] == 1
    assert "invoice" in (tmp_path / "page.md").read_text().lower()
