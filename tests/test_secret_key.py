"""The secret key: a deployment's own or none at all, a random one per embedded install, an
empty key an error; and Django's deployment checks clean in the compose configuration."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys

import pytest

from model.config import ConfigError
from tests.topology import service_environment
from webapp.secret_key import secret_key

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_an_embedded_install_makes_a_private_random_key_once(tmp_path):
    first = secret_key(var_dir=tmp_path, embedded=True, environ={})
    again = secret_key(var_dir=tmp_path, embedded=True, environ={})
    other_install = secret_key(var_dir=tmp_path / "other", embedded=True, environ={})

    assert first == again and len(first) >= 50
    assert other_install != first
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600


def test_a_deployment_without_a_key_refuses_to_start(tmp_path):
    with pytest.raises(ConfigError, match="FOLIO_SECRET_KEY"):
        secret_key(var_dir=tmp_path, embedded=False, environ={})


@pytest.mark.parametrize("content", ["", "\n", "too-short"])
def test_an_empty_or_weak_key_file_is_an_error_not_a_fallback(tmp_path, content):
    key_file = tmp_path / "key"
    key_file.write_text(content)

    for embedded in (True, False):
        with pytest.raises(ConfigError, match="FOLIO_SECRET_KEY_FILE"):
            secret_key(
                var_dir=tmp_path,
                embedded=embedded,
                environ={"FOLIO_SECRET_KEY_FILE": str(key_file)},
            )
    (tmp_path / "secret_key").write_text(content)
    with pytest.raises(ConfigError, match="secret_key"):
        secret_key(var_dir=tmp_path, embedded=True, environ={})


def run_manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    keep = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPOSITORY,
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_settings_refuse_a_deployment_without_a_key(tmp_path):
    result = run_manage(
        "check", env={"DATABASE_URL": "postgres://u@localhost/db", "FOLIO_VAR_DIR": str(tmp_path)}
    )

    assert result.returncode != 0
    assert "FOLIO_SECRET_KEY" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "clean"),
    [
        ({}, True),  # as composed: behind the compose proxy's TLS, and saying so
        ({"FOLIO_HTTPS": "1", "FOLIO_PUBLIC_URL": "https://ocr.example.org"}, True),
        # TLS in front, but not said so (compose says so: FOLIO_HTTPS is taken back here)
        ({"FOLIO_HTTPS": "0", "FOLIO_PUBLIC_URL": "https://ocr.example.org"}, False),
    ],
    ids=["compose", "behind TLS", "TLS not declared"],
)
def test_check_deploy_is_clean_in_the_compose_configuration(tmp_path, extra, clean):
    for name in ("folio_secret_key", "s3_secret_key"):
        (tmp_path / name).write_text(secrets.token_urlsafe(48))
    env = service_environment(
        "web",
        replace={
            "@postgres:": "@localhost:",
            "//redis:": "//localhost:",
            "//minio:": "//localhost:",
            "/run/secrets/": f"{tmp_path}/",
        },
    )

    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=env | extra)

    assert (result.returncode == 0) == clean, result.stdout + result.stderr
    if not clean:
        assert "folio.W010" in result.stderr
