"""The CLI's global options wherever they stand, and where its server and key come from:
``--flag`` > environment > configuration file. Two live servers (real HTTP servers in front
of the live Folio server, each recording what reached it) show which one a command used and
which key it sent; ``folio`` runs in this process through main(argv)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from folio_client.cli import main
from tests import documents
from tests.test_sdk import ScriptedProxy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def servers(live_server):
    """Two live servers, "a" and "b"; each forwards to Folio and records every request."""
    pair = {"a": ScriptedProxy(live_server.url), "b": ScriptedProxy(live_server.url)}
    yield pair
    for server in pair.values():
        server.close()


@pytest.fixture
def keys(make_user) -> dict[str, str]:
    from webapp.accounts.services import api_key_create

    return {name: api_key_create(user=make_user(name)).secret for name in ("alice", "bob")}


@pytest.fixture
def clean_env(monkeypatch, tmp_path) -> Path:
    """No FOLIO_URL or FOLIO_API_KEY, and a configuration file of the test's own (absent
    until a test writes it)."""
    monkeypatch.delenv("FOLIO_URL", raising=False)
    monkeypatch.delenv("FOLIO_API_KEY", raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("FOLIO_CONFIG", str(config))
    return config


def used(servers: dict[str, ScriptedProxy]) -> dict[str, list[str]]:
    """The keys each server received, one per request (``-`` for a request without one)."""
    return {
        name: [
            (seen.headers.get("Authorization") or "-").removeprefix("Bearer ")
            for seen in server.seen
        ]
        for name, server in servers.items()
    }


def command(name: str, tmp_path: Path) -> list[str]:
    """A command that reaches the server (a convert the server refuses: a page past the end
    of a one-page document, so no worker is needed)."""
    if name == "convert":
        source = tmp_path / "paper.pdf"
        source.write_bytes(documents.born_digital_pdf())
        return ["convert", str(source), "--pages", "9", "--quiet"]
    return {"jobs": ["jobs", "list"], "engines": ["engines"], "health": ["health"]}[name]


def placed(options: list[str], argv: list[str], where: str) -> list[str]:
    return [*options, *argv] if where == "before" else [*argv, *options]


COMMANDS = ["convert", "jobs", "engines", "health"]


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("name", COMMANDS)
def test_url_and_key_options_win_over_the_environment_and_the_file_wherever_they_stand(
    servers, keys, clean_env, monkeypatch, tmp_path, capsys, name, where
):
    clean_env.write_text(f'url = "{servers["b"].url}"\napi_key = "{keys["bob"]}"\n')
    monkeypatch.setenv("FOLIO_URL", servers["b"].url)
    monkeypatch.setenv("FOLIO_API_KEY", keys["bob"])
    options = ["--url", servers["a"].url, "--api-key", keys["alice"]]

    main(placed(options, command(name, tmp_path), where))

    seen = used(servers)
    assert seen["a"] and not seen["b"], capsys.readouterr()
    if name != "health":  # the probes are open: health sends the key it has all the same
        assert set(seen["a"]) == {keys["alice"]}


@pytest.mark.parametrize("where", ["before", "after"])
def test_each_option_alone_wins_over_its_variable(
    servers, keys, clean_env, monkeypatch, tmp_path, where
):
    monkeypatch.setenv("FOLIO_URL", servers["b"].url)
    monkeypatch.setenv("FOLIO_API_KEY", keys["bob"])

    assert main(placed(["--url", servers["a"].url], ["jobs", "list"], where)) == 0
    assert main(placed(["--api-key", keys["alice"]], ["jobs", "list"], where)) == 0

    assert used(servers) == {"a": [keys["bob"]], "b": [keys["alice"]]}


def test_the_environment_wins_over_the_file_and_the_file_serves_when_nothing_else_does(
    servers, keys, clean_env, monkeypatch
):
    clean_env.write_text(f'url = "{servers["b"].url}"\napi_key = "{keys["bob"]}"\n')

    assert main(["jobs", "list"]) == 0
    monkeypatch.setenv("FOLIO_URL", servers["a"].url)
    monkeypatch.setenv("FOLIO_API_KEY", keys["alice"])
    assert main(["jobs", "list"]) == 0

    assert used(servers) == {"a": [keys["alice"]], "b": [keys["bob"]]}


def test_an_option_given_before_and_after_the_command_counts_as_given_after(
    servers, keys, clean_env
):
    argv = ["--url", servers["b"].url, "jobs", "list", "--url", servers["a"].url]

    assert main([*argv, "--api-key", keys["alice"]]) == 0

    assert used(servers) == {"a": [keys["alice"]], "b": []}


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_counts_wherever_it_stands(servers, keys, clean_env, where):
    package = logging.getLogger("folio_client")
    options = ["-v", "--url", servers["a"].url, "--api-key", keys["alice"]]

    assert main(placed(options, ["jobs", "list"], where)) == 0
    assert package.level == logging.INFO
    assert main(["--url", servers["a"].url, "--api-key", keys["alice"], "jobs", "list"]) == 0
    assert package.level == logging.WARNING


def test_the_help_states_the_precedence(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "before or after the command" in text
    assert "the option, the environment (FOLIO_URL, FOLIO_API_KEY), the configuration file" in text


@pytest.mark.parametrize("name", ["convert", "jobs", "engines"])
def test_no_key_anywhere_exits_2_before_sending_anything(
    servers, clean_env, tmp_path, capsys, name
):
    code = main([*command(name, tmp_path), "--url", servers["a"].url])

    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "no API key" in err and "--api-key" in err and "FOLIO_API_KEY" in err
    assert str(clean_env) in err  # where the file would be
    assert used(servers) == {"a": [], "b": []}


def test_a_refused_key_exits_2_after_one_request_not_one_failure_per_file(
    servers, clean_env, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("FOLIO_API_KEY", "folio_not-a-key")
    files = []
    for name in ("a.pdf", "b.pdf", "c.pdf"):
        files.append(tmp_path / name)
        files[-1].write_bytes(documents.born_digital_pdf())

    code = main(["convert", *map(str, files), "--concurrency", "1", "--url", servers["a"].url])

    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "refused the API key from $FOLIO_API_KEY" in err
    assert "Authorization: Bearer KEY" in err
    assert used(servers) == {"a": ["folio_not-a-key"], "b": []}
    assert not any(path.with_suffix(".md").exists() for path in files)
