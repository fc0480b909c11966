"""The services of docker-compose.yml as server processes of their own, each on its host of the
test network (tests/netns.py), under the compose service's name and port:

- ``postgres``: Debian's PostgreSQL binaries, a cluster made by initdb for this run (the
  compose file's user, password and database), listening on the host's address only;
- ``redis``: redis-server with the compose service's own command (its persistence and
  eviction settings), on the host's address;
- ``minio``: an S3-compatible server that checks credentials: moto's server with its IAM
  enforcement (after the first three unauthenticated calls, which make the user, its key and
  its policy, every request must be signed with a key it issued).

None of them is the machine's own PostgreSQL or Redis.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.netns import Network
from tests.topology import compose_services


def postgres_binaries() -> Path | None:
    """Debian's PostgreSQL server binaries (the newest installed), if any."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def missing_programs() -> str | None:
    if postgres_binaries() is None:
        return "no PostgreSQL server binaries (apt-get install postgresql)"
    if shutil.which("redis-server") is None:
        return "no redis-server (apt-get install redis-server)"
    return None


def wait_for_port(address: str, port: int, *, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((address, port), 0.5):
            return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {address}:{port} after {timeout} s")


class Server:
    """One server process on one host, in a process group of its own."""

    name = ""
    port = 0

    def __init__(self, net: Network, log_dir: Path):
        self.net = net
        self.host = net.add(self.name)
        self.log_path = log_dir / f"{self.name}.log"
        self.process: subprocess.Popen | None = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    def prepare(self) -> None:
        """What must exist before the server starts."""

    def ready(self) -> None:
        """What the server needs once it listens."""

    def start(self, env: dict[str, str] | None = None) -> None:
        self.prepare()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            self.net.command(self.name, self.argv()), env=env or dict(os.environ),
            stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            wait_for_port(self.host.address, self.port)
        except TimeoutError as exc:
            log = self.log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{exc}: {log}") from None
        self.ready()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


class PostgresServer(Server):
    name, port = "postgres", 5432

    def __init__(self, net: Network, log_dir: Path):
        super().__init__(net, log_dir)
        env = compose_services()["postgres"]["environment"]
        self.user, self.password = env["POSTGRES_USER"], env["POSTGRES_PASSWORD"]
        self.database = env["POSTGRES_DB"]
        # Owned by the postgres user, who must reach it: not under pytest's private folders.
        self.data = Path(tempfile.mkdtemp(prefix="folio-topology-pg-"))
        self.url = f"postgres://{self.user}:{self.password}@{self.name}:{self.port}/{self.database}"

    def _as_postgres(self, *argv: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv]

    def prepare(self) -> None:
        binaries = postgres_binaries()
        shutil.chown(self.data, "postgres", "postgres")
        password_file = self.data / "password"
        password_file.write_text(self.password + "\n")
        shutil.chown(password_file, "postgres", "postgres")
        cluster = self.data / "cluster"
        subprocess.run(
            self._as_postgres(str(binaries / "initdb"), "-D", str(cluster), "-U", self.user,
                              "--pwfile", str(password_file), "--auth=scram-sha-256"),
            check=True, capture_output=True,
        )  # fmt: skip
        with (cluster / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.net.subnet} scram-sha-256\n")

    def argv(self) -> list[str]:
        return self._as_postgres(
            str(postgres_binaries() / "postgres"), "-D", str(self.data / "cluster"),
            "-c", f"listen_addresses={self.host.address}", "-p", str(self.port),
            "-c", f"unix_socket_directories={self.data}", "-c", "max_connections=200",
        )  # fmt: skip

    def ready(self) -> None:
        import psycopg

        url = self.url.replace(f"@{self.name}:", f"@{self.host.address}:")
        deadline = time.monotonic() + 60
        while True:  # it listens before it accepts ("the database system is starting up")
            try:
                conn = psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True)
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        with conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')

    def stop(self) -> None:
        super().stop()
        shutil.rmtree(self.data, ignore_errors=True)


class RedisServer(Server):
    name, port = "redis", 6379

    def __init__(self, net: Network, log_dir: Path, scratch: Path):
        super().__init__(net, log_dir)
        self.folder = scratch / "redis-data"

    def argv(self) -> list[str]:
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [str(part) for part in compose_services()["redis"]["command"]]
        # The official image builds redis-server with protected mode off (its Dockerfile's
        # sed on config.c: docker-library/repo-info, repos/redis), as set here.
        return [*command, "--bind", self.host.address, "--port", str(self.port),
                "--dir", str(self.folder), "--protected-mode", "no"]  # fmt: skip


class S3Server(Server):
    """moto's server on minio:9000, enforcing IAM: ``access_key``/``secret_key`` are the key it
    issued for a user allowed s3:* (boto3's calls with any other key are refused)."""

    name, port = "minio", 9000
    BOOTSTRAP_CALLS = 3  # create_user, create_access_key, put_user_policy

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", self.host.address, "-p", str(self.port)]

    def start(self, env: dict[str, str] | None = None) -> None:
        super().start({**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(self.BOOTSTRAP_CALLS)})

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{self.port}"

    def ready(self) -> None:
        import boto3

        iam = boto3.client(
            "iam", endpoint_url=self.url, region_name="us-east-1",
            aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap",
        )  # fmt: skip
        iam.create_user(UserName="folio")
        key = iam.create_access_key(UserName="folio")["AccessKey"]
        iam.put_user_policy(
            UserName="folio",
            PolicyName="folio-bucket",
            PolicyDocument='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",'
            ' "Action": "s3:*", "Resource": "*"}]}',
        )
        self.access_key, self.secret_key = key["AccessKeyId"], key["SecretAccessKey"]

    def client(self, *, secret_key: str | None = None, region: str = "us-east-1"):
        import boto3

        return boto3.client(
            "s3", endpoint_url=self.url, region_name=region, aws_access_key_id=self.access_key,
            aws_secret_access_key=secret_key or self.secret_key,
        )  # fmt: skip
