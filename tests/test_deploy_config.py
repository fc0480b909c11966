"""Deployment configuration that can be checked without starting processes: the storage
settings, the compose file read as Compose reads it, the images' locks, retention's deletion
of stored folders, and the reaper's handling of a lost worker node. The Kubernetes manifests
are tests/test_deploy_kubernetes.py's; the wheelhouses, tests/test_deploy_images.py's."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from model.config import ConfigError
from webapp.storage_config import default_storage_config

REPOSITORY = Path(__file__).resolve().parents[1]


@pytest.fixture
def storage_env():
    def configure(**values: str) -> dict:
        return default_storage_config(media_root=Path("/srv/media"), environ=values)

    return configure


def test_without_settings_files_go_to_the_media_folder(storage_env):
    config = storage_env()
    assert config["BACKEND"].endswith("FileSystemStorage")
    assert config["OPTIONS"]["location"] == "/srv/media"


def test_a_bucket_alone_still_means_s3(storage_env):
    config = storage_env(FOLIO_S3_BUCKET="folio")
    assert config["BACKEND"] == "storages.backends.s3.S3Storage"
    assert config["OPTIONS"]["bucket_name"] == "folio"
    assert config["OPTIONS"]["access_key"] is None  # the host's role, found by boto3


def test_s3_takes_its_secret_from_a_file(storage_env, tmp_path):
    secret = tmp_path / "s3_secret_key"
    secret.write_text("from-the-file\n")
    config = storage_env(
        FOLIO_STORAGE="s3",
        FOLIO_S3_BUCKET="folio",
        FOLIO_S3_ACCESS_KEY="folio",
        FOLIO_S3_SECRET_KEY_FILE=str(secret),
        FOLIO_S3_ENDPOINT_URL="http://minio:9000",
        FOLIO_S3_ADDRESSING_STYLE="path",
    )
    options = config["OPTIONS"]
    assert options["secret_key"] == "from-the-file"
    assert options["endpoint_url"] == "http://minio:9000"
    assert options["addressing_style"] == "path"
    assert options["file_overwrite"] is False


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"FOLIO_STORAGE": "s3"}, "FOLIO_S3_BUCKET"),
        ({"FOLIO_STORAGE": "S3 "}, "FOLIO_S3_BUCKET"),
        ({"FOLIO_STORAGE": "nfs"}, "FOLIO_STORAGE"),
        ({"FOLIO_S3_BUCKET": "b", "FOLIO_S3_ACCESS_KEY": "k"}, "FOLIO_S3_SECRET_KEY"),
        ({"FOLIO_S3_BUCKET": "b", "FOLIO_S3_SECRET_KEY": "s"}, "FOLIO_S3_ACCESS_KEY"),
        ({"FOLIO_S3_BUCKET": "b", "FOLIO_S3_SECRET_KEY_FILE": "/nowhere"}, "FOLIO_S3_SECRET_KEY"),
        ({"FOLIO_S3_BUCKET": "b", "FOLIO_S3_ENDPOINT_URL": "minio:9000"}, "FOLIO_S3_ENDPOINT_URL"),
        ({"FOLIO_S3_BUCKET": "b", "FOLIO_S3_ADDRESSING_STYLE": "dns"}, "FOLIO_S3_ADDRESSING"),
    ],
)
def test_a_missing_or_malformed_storage_setting_is_refused_naming_it(storage_env, values, named):
    with pytest.raises(ConfigError, match=named):
        storage_env(**values)


# --- docker-compose.yml ----------------------------------------------------------------------


def compose() -> dict:
    return yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())


def built_here(services: dict) -> dict:
    return {name: service for name, service in services.items() if "build" in service}


def test_compose_validates_as_compose_reads_it(tmp_path):
    """`docker compose config` (or docker-compose's) when a client is installed: the file's
    schema, interpolation and merges, offline. CI installs docker-compose for this."""
    if shutil.which("docker-compose"):
        command = ["docker-compose"]
    elif subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        command = ["docker", "compose"]
    else:
        pytest.skip("no Compose client here (apt-get install docker-compose)")
    # The compose file alone, with the secret files it names (Compose checks they exist).
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(REPOSITORY / "docker-compose.yml", project)
    (project / ".secrets").mkdir()
    for secret in compose()["secrets"]:
        (project / ".secrets" / secret).write_text("x" * 48)
    (project / "deploy").mkdir()
    shutil.copy(REPOSITORY / "deploy" / "Caddyfile", project / "deploy")
    profiles = sorted({p for s in compose()["services"].values() for p in s.get("profiles", [])})
    result = subprocess.run(
        [*command, *(f"--profile={p}" for p in profiles), "config", "-q"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_every_service_that_touches_files_has_the_storage_settings_and_the_media_volume():
    services = compose()["services"]
    folio = built_here(services)
    assert set(folio) >= {"migrate", "web", "worker", "beat", "gpu-worker"}
    for name, service in folio.items():
        env = service["environment"]
        for variable in ("FOLIO_STORAGE", "FOLIO_S3_BUCKET", "FOLIO_S3_ENDPOINT_URL"):
            assert variable in env, (name, variable)
        assert env["FOLIO_MEDIA_ROOT"] == "/app/var/media"
        assert "media:/app/var/media" in service["volumes"], name
        assert {"folio_secret_key", "s3_secret_key"} <= set(service["secrets"]), name
    assert folio["migrate"]["environment"]["FOLIO_S3_CREATE_BUCKET"] == "1"


def test_compose_takes_the_public_name_from_the_environment_behind_a_tls_proxy():
    from tests.topology import interpolate

    services = compose()["services"]
    env = built_here(services)["web"]["environment"]
    for variable in ("FOLIO_ALLOWED_HOSTS", "FOLIO_PUBLIC_URL"):
        assert "${FOLIO_PUBLIC_HOST" in env[variable], variable
    named = {"FOLIO_PUBLIC_HOST": "ocr.example.org"}
    assert interpolate(env["FOLIO_PUBLIC_URL"], named) == "https://ocr.example.org"
    assert "ocr.example.org" in interpolate(env["FOLIO_ALLOWED_HOSTS"], named).split(",")
    assert env["FOLIO_HTTPS"] == "1" and env["FOLIO_TRUSTED_PROXIES"] == "1"
    # Web is reached through the proxy only; the proxy publishes HTTPS.
    assert "ports" not in services["web"]
    proxy = services["proxy"]
    assert "443:443" in proxy["ports"]
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    caddyfile = (REPOSITORY / "deploy" / "Caddyfile").read_text()
    assert "{$FOLIO_PUBLIC_HOST:localhost}" in caddyfile and "reverse_proxy web:8000" in caddyfile


def test_the_caddyfile_is_valid_for_caddy(tmp_path):
    """`caddy validate` (Debian's caddy, installed by .ci/run): the proxy's configuration
    adapts and provisions, TLS included, without serving."""
    if shutil.which("caddy") is None:
        pytest.skip("caddy is not installed here (apt-get install caddy)")
    result = subprocess.run(
        ["caddy", "validate", "--adapter", "caddyfile", "--config",
         str(REPOSITORY / "deploy" / "Caddyfile")],
        capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path),
             "XDG_CONFIG_HOME": str(tmp_path), "FOLIO_PUBLIC_HOST": "ocr.example.org"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Valid configuration" in result.stdout + result.stderr


def test_every_image_is_pinned_by_digest():
    """Pulled images by digest, as docs/DEPLOY.md's "Pinned images" says (vLLM's image is
    only Dockerfile.gpu's base, pinned by tag and saying so there)."""
    for name, service in compose()["services"].items():
        if "image" not in service:
            continue
        assert re.fullmatch(r"[\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", service["image"]), name


def test_minio_is_health_checked_and_redis_never_evicts():
    services = compose()["services"]
    assert services["minio"]["healthcheck"]["test"] == ["CMD", "mc", "ready", "local"]
    assert services["migrate"]["depends_on"]["minio"] == {"condition": "service_healthy"}
    command = services["redis"]["command"]
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert command[command.index("--appendonly") + 1] == "yes"


def test_flower_is_a_profile_behind_basic_authentication():
    flower = compose()["services"]["flower"]
    assert flower["profiles"] == ["flower"]
    assert "flower_password" in flower["secrets"]
    command = " ".join(flower["command"])
    assert "FLOWER_BASIC_AUTH=" in command and "/run/secrets/flower_password" in command
    assert flower["ports"] == ["127.0.0.1:5555:5555"]  # this host only


def test_every_dependency_condition_can_be_met():
    services = compose()["services"]
    for name, service in services.items():
        for dependency, rule in (service.get("depends_on") or {}).items():
            assert dependency in services, (name, dependency)
            condition = rule["condition"]
            if condition == "service_healthy":
                assert "healthcheck" in services[dependency], (name, dependency)
            if condition == "service_completed_successfully":
                assert services[dependency].get("restart") == "no", (name, dependency)


def test_the_images_run_as_a_non_root_user_with_a_health_check():
    for dockerfile in ("Dockerfile", "Dockerfile.gpu"):
        text = (REPOSITORY / dockerfile).read_text()
        users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
        assert users and users[-1] == "folio", dockerfile
        assert "HEALTHCHECK" in text and "deploy/healthcheck.sh" in text, dockerfile
        assert 'ENTRYPOINT ["/app/deploy/entrypoint.sh"]' in text, dockerfile


def test_the_server_image_installs_the_libreoffice_the_legacy_formats_ask_for():
    """The packages the image installs are those the refusal names (and .ci/run installs),
    so the compose deployment reads DOC, XLS, PPT and RTF and draws Office pages."""
    from model.formats.libreoffice import INSTALL_HINT

    packages = set(re.findall(r"libreoffice-[a-z]+-nogui", INSTALL_HINT))
    dockerfile = (REPOSITORY / "Dockerfile").read_text()
    install = re.search(r"ARG LIBREOFFICE=1\nRUN (.*?)\n\n", dockerfile, flags=re.DOTALL)

    assert install and "apt-get install" in install[1], "the image installs no LibreOffice"
    assert packages == set(re.findall(r"libreoffice-[a-z]+-nogui", install[1])) != set()
    assert packages <= set(
        re.findall(r"libreoffice-[a-z]+-nogui", (REPOSITORY / ".ci/run").read_text())
    )
    # Before the wheelhouse's step: a change of dependencies does not install it again.
    assert dockerfile.index("ARG LIBREOFFICE=1") < dockerfile.index("source=wheels")


def test_the_secrets_folder_is_kept_out_of_git():
    result = subprocess.run(
        ["git", "check-ignore", "-q", ".secrets/folio_secret_key"], cwd=REPOSITORY
    )
    assert result.returncode == 0


def _lock(path: Path) -> dict[str, str]:
    lock = {}
    for line in path.read_text().splitlines():
        if match := re.match(r"^([a-z0-9-]+)==(\S+) \\$", line):
            lock[match[1]] = match[2]
    assert path.read_text().count("--hash=sha256:") == len(lock), path
    return lock


@pytest.mark.parametrize("target", ["amd64", "arm64", "gpu"])
def test_each_image_lock_pins_exactly_the_versions_pyproject_asks_for(target):
    from deploy.platforms import TARGETS

    platform = TARGETS[target]
    lock = _lock(platform.lock)
    with (REPOSITORY / "pyproject.toml").open("rb") as handle:
        project = tomllib.load(handle)["project"]
    dependencies = project["dependencies"] + [
        r for extra in platform.extras for r in project["optional-dependencies"][extra]
    ]
    for requirement in dependencies:
        name, version = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==(\S+)$", requirement).groups()
        name = re.sub(r"[-_.]+", "-", name).lower()
        if name in platform.leave_out:
            assert name not in lock, (target, name)
            continue
        assert lock.get(name) == version, (
            f"{requirement} is not in {platform.lock.name}: run `python deploy/lock.py {target}`"
        )
    header = platform.lock.read_text().splitlines()[1]
    assert f"CPython {platform.python}" in header and platform.machine in header


def test_the_server_image_installs_the_lock_of_its_own_platform():
    """One lock per platform the Dockerfile can be built for, chosen by BuildKit's
    TARGETARCH, from a wheelhouse that is mounted and not copied into a layer."""
    from deploy.platforms import TARGETS

    dockerfile = (REPOSITORY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}$", dockerfile, re.M)
    assert "ENV PYTHON_VERSION" not in dockerfile  # the base image's own, as the lock's
    assert 'lock="deploy/requirements-$TARGETARCH.lock"' in dockerfile
    for name in ("amd64", "arm64"):
        assert f"deploy/requirements-{name}.lock" in dockerfile
        assert TARGETS[name].python == "3.11.16"  # python:3.11-slim-bookworm at that digest
    assert "COPY wheels" not in dockerfile and "--mount=type=bind,source=wheels" in dockerfile
    gpu = (REPOSITORY / "Dockerfile.gpu").read_text()
    assert "--require-hashes" in gpu and "--no-index" in gpu and "requirements-gpu.lock" in gpu


# --- retention's folder deletion and the reaper's lost nodes ---------------------------------


def test_a_stored_folder_is_deleted_with_everything_under_it(settings, tmp_path):
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from webapp.core.storage import tree_delete

    job = uuid.uuid4()
    for name in ("figures/page-0001-figure-1.png", "pages/page-0001.png", "pages/page-0002.png"):
        default_storage.save(f"results/{job}/{name}", ContentFile(b"bytes"))
    default_storage.save("results/another-job/figures/x.png", ContentFile(b"kept"))

    assert tree_delete(f"results/{job}") == 3

    assert not (Path(settings.MEDIA_ROOT) / "results" / str(job)).exists()
    assert default_storage.exists("results/another-job/figures/x.png")
    assert tree_delete(f"results/{job}") == 0


@pytest.mark.django_db
def test_a_node_missing_from_pings_long_enough_loses_its_pages_to_the_others(api, settings):
    from django.core.cache import cache

    from tests import documents
    from tests.test_lifecycle import post_job
    from webapp.jobs import liveness, services
    from webapp.jobs.models import Page

    settings.FOLIO_WORKER_LOST_SECONDS = 30
    cache.delete_many([f"node-missing:worker@{host}" for host in ("gone", "alive")])
    job_id = post_job(api, documents.born_digital_pdf(), "report.pdf").json()["id"]
    first, second, third = Page.objects.filter(job_id=job_id).order_by("number")
    services.page_claim(page_id=first.pk, task_id=str(first.task_id), worker="worker@gone:7")
    services.page_claim(page_id=second.pk, task_id=str(second.task_id), worker="worker@alive:8")
    live = {"worker@alive", "beat@beat-1"}

    assert liveness.lost_nodes(live=live, now=1000.0) == set()  # one missed round
    assert liveness.lost_nodes(live=live, now=1020.0) == set()
    assert liveness.lost_nodes(live=live, now=1031.0) == {"worker@gone"}
    assert liveness.lost_nodes(live=set(), now=1031.0) == set()  # nobody answered: no verdict

    reaped = services.pages_reap(
        stuck_after=timedelta(hours=1), unsent_after=timedelta(hours=1), lost_nodes={"worker@gone"}
    )

    assert reaped == 1
    old_task_id = first.task_id
    first.refresh_from_db()
    second.refresh_from_db()
    third.refresh_from_db()
    assert first.status == Page.Status.QUEUED and first.task_id != old_task_id
    assert second.status == Page.Status.RUNNING  # its node answers
    assert third.status == Page.Status.QUEUED


def test_no_service_serves_jina_ocr_v1_through_stock_vllm_serve():
    """Stock ``vllm serve`` with ``method: mtp`` refuses a DeepSeek-OCR checkpoint (docs/GPU.md
    says where in vLLM): jina-ocr-v1 is served by the gpu-worker, with Folio's registration."""
    for name, service in compose()["services"].items():
        assert not service.get("image", "").startswith("vllm/"), name
        assert "vllm-serve" not in service.get("profiles", []), name
