"""Accounts: sign-up, log-in, password change, an admin from the environment, API keys, and
per-user quotas and rate limits (a 429 with Retry-After, nothing queued)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings

from tests import documents
from tests.conftest import client_for
from tests.test_jobs_api import submit
from tests.test_lifecycle import post_job
from webapp.accounts.models import AccountLimits
from webapp.jobs.models import Job, Page

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-enough-passphrase-42"
REPOSITORY = Path(__file__).resolve().parents[1]


@override_settings(FOLIO_SIGNUP="open")
def test_a_visitor_signs_up_and_is_logged_in(client):
    response = client.post(
        "/account/signup/",
        {"username": "dora", "password1": PASSWORD, "password2": PASSWORD},
    )

    assert response.status_code == 302
    assert client.get("/account/").status_code == 200
    assert get_user_model().objects.filter(username="dora").exists()


@override_settings(FOLIO_SIGNUP="closed")
def test_sign_up_can_be_switched_off(client):
    assert client.get("/account/signup/").status_code == 404


def test_a_user_logs_in_changes_the_password_and_logs_out(client, django_user_model):
    django_user_model.objects.create_user(username="erin", password=PASSWORD)

    assert (
        client.post("/account/login/", {"username": "erin", "password": PASSWORD}).status_code
        == 302
    )
    changed = client.post(
        "/account/password/",
        {
            "old_password": PASSWORD,
            "new_password1": PASSWORD + "!",
            "new_password2": PASSWORD + "!",
        },
    )
    assert changed.status_code == 302
    assert client.post("/account/logout/").status_code == 302
    assert client.get("/account/").status_code == 302  # to the log-in page again
    assert client.login(username="erin", password=PASSWORD + "!")


def test_an_admin_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("FOLIO_ADMIN_USERNAME", "root")
    monkeypatch.setenv("FOLIO_ADMIN_PASSWORD", PASSWORD)

    call_command("ensureadmin")
    call_command("ensureadmin")  # idempotent, so it can run at every start

    admin = get_user_model().objects.get(username="root")
    assert admin.is_staff and admin.is_superuser and admin.check_password(PASSWORD)


def test_a_new_key_is_shown_once_then_listed_by_prefix_with_its_last_use(api):
    created = api.post("/v1/keys", {"name": "ci"}, format="json")
    assert created.status_code == 201
    key = created.json()["key"]
    assert key.startswith(created.json()["prefix"])

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    listed = api.get("/v1/keys").json()["results"]

    ci = next(item for item in listed if item["name"] == "ci")
    assert "key" not in ci
    assert ci["last_used_at"] is not None
    assert all(key not in str(item) for item in listed)


def test_a_revoked_key_is_a_401_in_the_error_shape(api):
    issued = api.post("/v1/keys", {"name": "temporary"}, format="json").json()
    assert api.delete(f"/v1/keys/{issued['id']}").status_code == 204

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued['key']}")
    response = api.get("/v1/jobs")

    assert response.status_code == 401
    assert response.json()["status"] == 40103
    assert response.json()["data"] is None


def limited(user, **limits) -> None:
    AccountLimits.objects.update_or_create(user=user, defaults=limits)


def test_over_the_rate_limit_is_a_429_with_retry_after_and_nothing_queued(make_user):
    user = make_user("fay")
    limited(user, requests_per_minute=2)
    client = client_for(user)
    with time_machine.travel(datetime(2030, 1, 1, 12, 0, 10, tzinfo=UTC), tick=False):
        for _ in range(2):
            assert submit(client, documents.png_page(), "p.png").status_code == 202

        refused = submit(client, documents.png_page(), "p.png")

    assert refused.status_code == 429
    assert refused.json()["status"] == 42903
    assert refused["Retry-After"] == "50"
    assert "2 requests per minute" in refused.json()["message"]
    assert Job.objects.count() == 2
    with time_machine.travel(datetime(2030, 1, 1, 12, 1, 0, tzinfo=UTC), tick=False):
        assert submit(client, documents.png_page(), "p.png").status_code == 202


def test_over_the_daily_page_quota_is_a_429_until_midnight_and_nothing_queued(make_user):
    user = make_user("gus")
    limited(user, pages_per_day=4)
    client = client_for(user)
    with time_machine.travel(datetime(2030, 1, 1, 23, 0, 0, tzinfo=UTC), tick=False):
        assert submit(client, documents.born_digital_pdf(), "r.pdf").status_code == 202

        refused = submit(client, documents.born_digital_pdf(), "r.pdf", pages="1-2")

    assert refused.status_code == 429
    assert refused["Retry-After"] == "3600"
    assert "3 of 4 pages" in refused.json()["message"]
    assert (Job.objects.count(), Page.objects.count()) == (1, 3)
    with time_machine.travel(datetime(2030, 1, 2, 0, 0, 1, tzinfo=UTC), tick=False):
        assert submit(client, documents.born_digital_pdf(), "r.pdf").status_code == 202


def test_a_job_larger_than_the_whole_daily_quota_says_to_select_fewer_pages(make_user):
    user = make_user("hal")
    limited(user, pages_per_day=2)

    response = submit(client_for(user), documents.born_digital_pdf(), "r.pdf")

    assert response.status_code == 413
    assert "select fewer pages" in response.json()["message"]
    assert not Job.objects.exists()


@pytest.mark.usefixtures("one_rate_window")
def test_an_idempotent_replay_does_not_count_against_the_rate_limit(make_user):
    user = make_user("ivy")
    limited(user, requests_per_minute=1)
    client = client_for(user)

    first = post_job(client, documents.png_page(), "p.png", key="k1")
    again = post_job(client, documents.png_page(), "p.png", key="k1")

    assert (first.status_code, again.status_code) == (202, 202)
    assert again.json()["id"] == first.json()["id"]


# --- log-in throttling and sign-up modes -------------------------------------------------------


@pytest.fixture
def fresh_login_counts():
    """The counts live in the shared cache, which outlives the test database."""
    from django.core.cache import cache

    def clear():
        cache.delete_many(
            [f"login-failures:account:{name}" for name in ("fay", "gus", "hal")]
            + [
                f"login-failures:address:{address}"
                for address in ("198.51.100.60", "198.51.100.61")
            ]
        )

    clear()
    yield
    clear()


@override_settings(FOLIO_LOGIN_FAILURES=3, FOLIO_LOGIN_FAILURES_PER_ADDRESS=5)
def test_failed_log_ins_lock_the_account_and_then_the_address(
    client, django_user_model, fresh_login_counts
):
    for name in ("fay", "gus", "hal"):
        django_user_model.objects.create_user(username=name, password=PASSWORD)

    def log_in(name, password, address="198.51.100.60"):
        return client.post(
            "/account/login/", {"username": name, "password": password}, REMOTE_ADDR=address
        ).status_code

    wrong = [log_in("fay", "guess") for _ in range(3)]
    # Locked: even the right password is refused, from anywhere, and says so.
    assert (wrong, log_in("fay", PASSWORD), log_in("fay", PASSWORD, "198.51.100.61")) == (
        [200, 200, 200],
        429,
        429,
    )
    # Two more failures on another account reach the address's limit: its third account is
    # refused from there, and still welcome elsewhere.
    assert [log_in("gus", "guess") for _ in range(2)] == [200, 200]
    assert log_in("hal", PASSWORD) == 429
    assert log_in("hal", PASSWORD, "198.51.100.61") == 302


def test_sign_up_is_by_invitation_by_default(client):
    from webapp.accounts.invites import invite_make

    refused = client.get("/account/signup/")
    invited = client.post(
        f"/account/signup/?invite={invite_make(username='ivy')}",
        {"username": "someone-else", "password1": PASSWORD, "password2": PASSWORD},
    )
    forged = client.get("/account/signup/?invite=ivy:forged")

    # Without an invitation the page says how to get one, not that nothing is there.
    assert refused.status_code == 403 and forged.status_code == 403
    assert "Sign-up is by invitation" in refused.text
    assert "manage.py invite USERNAME" in refused.text
    assert "This invitation link does not work" in forged.text
    assert invited.status_code == 302
    assert get_user_model().objects.filter(username="ivy").exists()  # the invited name only
    assert not get_user_model().objects.filter(username="someone-else").exists()


@override_settings(FOLIO_SIGNUP="closed")
def test_closed_sign_up_takes_no_invitation_either_and_is_not_offered(client):
    from webapp.accounts.invites import invite_make

    assert client.get(f"/account/signup/?invite={invite_make(username='ivy')}").status_code == 404
    login = client.get("/account/login/")
    assert 'href="/account/signup/"' not in login.text  # neither in the navigation nor below


def test_an_invite_only_server_says_on_the_log_in_page_how_accounts_are_made(client):
    login = client.get("/account/login/")

    assert "accounts from an invitation link" in login.text
    assert 'href="/account/signup/"' in login.text  # the navigation's link explains it


def manage(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip


def test_an_invitation_links_to_the_port_make_run_serves_on_or_to_the_public_url(tmp_path):
    from webapp.public_url import public_url_record

    # A shell beside `make run` (PORT=9000 make run): neither PORT nor FOLIO_PUBLIC_URL set.
    env = {k: v for k, v in os.environ.items() if k not in ("PORT", "FOLIO_PUBLIC_URL")}
    env.pop("DATABASE_URL", None)  # the embedded mode's SQLite under var/
    env["FOLIO_VAR_DIR"] = str(tmp_path / "var")
    (tmp_path / "var").mkdir()
    public_url_record(var_dir=tmp_path / "var", port="9000")

    beside_make_run = manage("invite", "ivy", env=env)
    deployed = manage("invite", "ivy", env={**env, "FOLIO_PUBLIC_URL": "https://ocr.example.org/"})

    assert beside_make_run.stdout.startswith("http://127.0.0.1:9000/account/signup/?invite=")
    assert "the address `make run` serves on" in beside_make_run.stderr
    assert deployed.stdout.startswith("https://ocr.example.org/account/signup/?invite=")
    assert deployed.stderr == ""
