"""The suite does not depend on the host it runs on: reserved names never reach the host's
resolver (``tests/conftest.py``), and ``tests/stack.py`` says where its database and broker
come from."""

from __future__ import annotations

import socket

import pytest

from tests import stack


@pytest.mark.parametrize("name", ["hooks.example", "EXAMPLE.COM", "a.b.example.org.", "x.test"])
def test_a_reserved_name_does_not_resolve_whatever_the_host_resolver_says(name):
    with pytest.raises(socket.gaierror, match="reserved name"):
        socket.getaddrinfo(name, 443)


def test_other_names_still_reach_the_resolver():
    assert socket.getaddrinfo("127.0.0.1", 80)[0][4][0] == "127.0.0.1"


@pytest.mark.parametrize(
    ("running", "said"),
    [(True, "PostgreSQL found running on 127.0.0.1:5432"), (False, "embedded SQLite")],
)
def test_the_runner_says_whether_it_found_the_database_running_or_embedded(
    monkeypatch, capsys, running, said
):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("FOLIO_BROKER_URL", "redis://127.0.0.1:1/15")
    monkeypatch.setattr(stack, "reachable", lambda address: running)
    monkeypatch.setattr(stack.subprocess, "call", lambda *args, **kwargs: 0)

    assert stack.main(["--version"]) == 0

    line = capsys.readouterr().out
    assert f"({said}" in line, line
    assert "broker redis://127.0.0.1:1/15 (as given in the environment)" in line, line
