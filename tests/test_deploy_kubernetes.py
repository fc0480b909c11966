"""The Kubernetes manifests as a cluster would get them: each overlay rendered by
`kubectl kustomize`, every object validated offline against its schema
(tests/kubernetes_schemas.py), and what matters to an operator read from the rendered
objects: probes, drains, the migration step, autoscaling, budgets, TLS, the network policies
(tests/network_policy.py says how they are read), and the alerts docs/DEPLOY.md lists."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import kubernetes_schemas
from tests.network_policy import Address, Pod, allowed

REPOSITORY = Path(__file__).resolve().parents[1]
KUBERNETES = REPOSITORY / "deploy" / "kubernetes"
OVERLAYS = ("production", "cpu-only")
NAMESPACE = "folio"
PAGE_TIME_LIMIT = 330  # FOLIO_PAGE_TIME_LIMIT's default


def render(folder: Path) -> list[dict]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed here (it renders the kustomizations)")
    result = subprocess.run(
        ["kubectl", "kustomize", str(folder)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module")
def production() -> list[dict]:
    return render(KUBERNETES / "overlays" / "production")


def of_kind(docs: list[dict], kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == kind}


def pod_spec(workload: dict) -> dict:
    return workload["spec"]["template"]["spec"]


def container(workload: dict) -> dict:
    [main] = pod_spec(workload)["containers"]
    return main


def env_of(workload: dict) -> dict[str, str]:
    return {item["name"]: item.get("value") for item in container(workload).get("env", [])}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_rendered_object_is_valid_for_its_kind(overlay):
    docs = render(KUBERNETES / "overlays" / overlay)
    kinds = {doc["kind"] for doc in docs}
    assert {"ScaledObject", "ServiceMonitor", "PrometheusRule", "NetworkPolicy"} <= kinds
    for doc in docs:
        kubernetes_schemas.validate(doc)


def test_the_validation_refuses_an_unknown_field_in_built_in_and_custom_kinds(production):
    deployment = copy.deepcopy(of_kind(production, "Deployment")["folio-web"])
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {}
    with pytest.raises(Exception, match="httpGett"):
        kubernetes_schemas.validate(deployment)
    scaler = copy.deepcopy(of_kind(production, "ScaledObject")["folio-worker"])
    scaler["spec"]["triggers"][0]["authRef"] = {"name": "folio-redis"}
    with pytest.raises(ValueError, match="authRef"):
        kubernetes_schemas.validate(scaler)
    scaler["spec"]["triggers"][0].pop("authRef")
    scaler["spec"]["minReplicaCount"] = "none"
    with pytest.raises(Exception, match="minReplicaCount"):
        kubernetes_schemas.validate(scaler)


def test_web_is_in_rotation_only_when_ready_and_drains_before_it_stops(production):
    web = of_kind(production, "Deployment")["folio-web"]
    main = container(web)
    # Its database and broker (not a live worker: the pools scale from zero).
    assert main["readinessProbe"]["httpGet"]["path"] == "/readyz/web"
    assert main["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert main["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    pause = int(main["lifecycle"]["preStop"]["exec"]["command"][1])
    # The pause, then the Reader's longest wait (180 s), inside the grace period.
    assert pause + 180 < pod_spec(web)["terminationGracePeriodSeconds"]
    # Prometheus scrapes the pod's address: it is an allowed host.
    assert "$(POD_IP)" in env_of(web)["FOLIO_ALLOWED_HOSTS"]
    assert [e["name"] for e in main["env"]].index("POD_IP") < [
        e["name"] for e in main["env"]
    ].index("FOLIO_ALLOWED_HOSTS")


def test_workers_drain_and_outlast_the_page_limit(production):
    deployments = of_kind(production, "Deployment")
    for name in ("folio-worker", "folio-gpu-worker"):
        worker = deployments[name]
        assert container(worker)["lifecycle"]["preStop"]["exec"]["command"] == [
            "/app/deploy/drain.sh"
        ]
        assert pod_spec(worker)["terminationGracePeriodSeconds"] > PAGE_TIME_LIMIT
    assert (REPOSITORY / "deploy" / "drain.sh").stat().st_mode & 0o111
    dockerfiles = [(REPOSITORY / f).read_text() for f in ("Dockerfile", "Dockerfile.gpu")]
    assert all("deploy/drain.sh" in text for text in dockerfiles)


def test_migrations_run_once_per_release_and_the_pods_wait_for_them(tmp_path, production):
    [job] = of_kind(production, "Job").values()
    assert job["metadata"]["name"] == "folio-migrate-1.0.0"
    assert job["spec"]["ttlSecondsAfterFinished"] > 0
    assert container(job)["args"] == ["migrate"]
    for name, deployment in of_kind(production, "Deployment").items():
        [wait] = pod_spec(deployment)["initContainers"]
        assert "migrate --check" in " ".join(wait["command"]), name
        assert wait["image"] == container(deployment)["image"], name

    # The next release: a new tag is a new Job, so applying it runs its migrations.
    overlay = tmp_path / "next"
    overlay.mkdir()
    text = (KUBERNETES / "overlays" / "production" / "kustomization.yaml").read_text()
    base = os.path.relpath(KUBERNETES / "base", overlay)  # kustomize takes no absolute path
    text = text.replace("newTag: 1.0.0", "newTag: 1.1.0").replace("../../base", base)
    (overlay / "kustomization.yaml").write_text(text)
    [next_job] = of_kind(render(overlay), "Job").values()
    assert next_job["metadata"]["name"] == "folio-migrate-1.1.0"


def test_each_worker_pool_scales_from_zero_on_its_own_queue_with_credentials(production):
    from webapp.jobs.queueing import engine_queue

    deployments = of_kind(production, "Deployment")
    auths = of_kind(production, "TriggerAuthentication")
    scalers = of_kind(production, "ScaledObject")
    assert {s["spec"]["scaleTargetRef"]["name"] for s in scalers.values()} == {
        "folio-worker",
        "folio-gpu-worker",
    }
    for scaler in scalers.values():
        spec = scaler["spec"]
        target = deployments[spec["scaleTargetRef"]["name"]]
        assert "replicas" not in target["spec"]  # KEDA owns the count
        assert spec["minReplicaCount"] == 0 < spec["maxReplicaCount"]
        [trigger] = spec["triggers"]
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["listName"] == env_of(target)["FOLIO_WORKER_QUEUES"]
        assert trigger["metadata"]["listName"] in {
            engine_queue("local"),
            engine_queue("jina-ocr-v1"),
        }
        assert int(trigger["metadata"]["listLength"]) > 0
        auth = auths[trigger["authenticationRef"]["name"]]
        [secret] = auth["spec"]["secretTargetRef"]
        assert secret == {"parameter": "password", "name": "folio", "key": "redis-password"}
    # A pool at zero serves no engine: submissions must queue, not be refused.
    [config] = of_kind(production, "ConfigMap").values()
    assert config["data"]["FOLIO_REFUSE_UNSERVED_ENGINES"] == "0"


def test_web_scales_on_cpu_and_every_pool_keeps_pods_through_disruptions(production):
    deployments = of_kind(production, "Deployment")
    [hpa] = of_kind(production, "HorizontalPodAutoscaler").values()
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "folio-web",
    }
    assert 2 <= hpa["spec"]["minReplicas"] < hpa["spec"]["maxReplicas"]
    budgets = of_kind(production, "PodDisruptionBudget")
    covered = set()
    for budget in budgets.values():
        selected = [
            name
            for name, d in deployments.items()
            if budget["spec"]["selector"]["matchLabels"].items()
            <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert len(selected) == 1, budget["metadata"]["name"]
        covered |= set(selected)
    assert covered == {"folio-web", "folio-worker", "folio-gpu-worker"}


def test_the_ingress_terminates_tls_for_its_host_in_front_of_web(production):
    [ingress] = of_kind(production, "Ingress").values()
    [tls] = ingress["spec"]["tls"]
    [rule] = ingress["spec"]["rules"]
    assert rule["host"] in tls["hosts"] and tls["secretName"]
    [path] = rule["http"]["paths"]
    service = of_kind(production, "Service")[path["backend"]["service"]["name"]]
    ports = {port["name"] for port in service["spec"]["ports"]}
    assert path["backend"]["service"]["port"]["name"] in ports
    [config] = of_kind(production, "ConfigMap").values()
    assert config["data"]["FOLIO_PUBLIC_URL"] == f"https://{rule['host']}"
    assert config["data"]["FOLIO_HTTPS"] == "1"


def _pods(production) -> dict[str, Pod]:
    workloads = {**of_kind(production, "Deployment"), **of_kind(production, "Job")}
    pods = {
        name.removeprefix("folio-").split("-1.")[0]: Pod(
            NAMESPACE, doc["spec"]["template"]["metadata"]["labels"]
        )
        for name, doc in workloads.items()
    }
    services = {"postgresql": "postgresql", "redis": "redis", "minio": "minio"}
    for name, label in services.items():
        pods[name] = Pod(NAMESPACE, {"app.kubernetes.io/name": label})
    pods["other-app"] = Pod(NAMESPACE, {"app.kubernetes.io/name": "something-else"})
    pods["ingress-controller"] = Pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"})
    pods["prometheus"] = Pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
    pods["keda"] = Pod("keda", {"app": "keda-operator"})
    pods["dns"] = Pod("kube-system", {"k8s-app": "kube-dns"})
    return pods


def test_network_policies_let_folio_reach_its_services_and_nothing_else(production):
    policies = [
        {**p, "metadata": {**p["metadata"], "namespace": p["metadata"].get("namespace", NAMESPACE)}}
        for p in of_kind(production, "NetworkPolicy").values()
    ]
    pods = _pods(production)
    services = {"postgresql": 5432, "redis": 6379, "minio": 9000}
    folio = ("web", "worker", "gpu-worker", "beat", "migrate")

    def can(source: str, target: str | Address, port: int, protocol: str = "TCP") -> bool:
        receiver = target if isinstance(target, Address) else pods[target]
        return allowed(policies, pods[source], receiver, port, protocol)

    for name in folio:
        for service, port in services.items():
            assert can(name, service, port), (name, service)
            assert not can(name, service, port + 1), (name, service, port + 1)
        assert can(name, "dns", 53, "UDP"), name
        # Folio's pods do not talk to each other, nor to anything else in the cluster.
        for other in folio:
            assert not can(name, other, 8000), (name, other)
        assert not can(name, "other-app", 80), name
    for service, port in services.items():
        assert not can("other-app", service, port), service
        assert not can("ingress-controller", service, port), service
    assert can("keda", "redis", 6379)
    # Into web: the ingress controller and Prometheus only, on the HTTP port.
    assert can("ingress-controller", "web", 8000) and can("prometheus", "web", 8000)
    assert not can("ingress-controller", "worker", 8000)
    assert not can("other-app", "web", 8000)
    assert can("prometheus", "gpu-worker", 9400) and not can("other-app", "gpu-worker", 9400)
    # Out to the internet: web's URL fetches and beat's webhooks, HTTP(S), public addresses.
    public, private = Address("93.184.216.34"), Address("10.1.2.3")
    for name in ("web", "beat"):
        assert can(name, public, 443) and can(name, public, 80), name
        assert not can(name, private, 443) and not can(name, public, 25), name
    for name in ("worker", "gpu-worker", "migrate"):
        assert not can(name, public, 443), name


def test_the_scrapes_and_the_alerts_cover_the_metrics_the_runbook_names(production):
    services = of_kind(production, "Service")
    monitors = of_kind(production, "ServiceMonitor")
    for monitor in monitors.values():
        selected = [
            s
            for s in services.values()
            if monitor["spec"]["selector"]["matchLabels"].items() <= s["metadata"]["labels"].items()
        ]
        assert selected, monitor["metadata"]["name"]
        ports = {p["name"] for s in selected for p in s["spec"]["ports"]}
        assert {e["port"] for e in monitor["spec"]["endpoints"]} <= ports
    assert monitors["folio-web"]["spec"]["endpoints"][0]["path"] == "/metrics"

    [rules] = of_kind(production, "PrometheusRule").values()
    expressions = " ".join(r["expr"] for g in rules["spec"]["groups"] for r in g["rules"])
    deploy = (REPOSITORY / "docs" / "DEPLOY.md").read_text()
    table = deploy.split("## Metrics to alert on")[1].split("\n\n| alert")[1].split("\n\n")[0]
    named = set(re.findall(r"`((?:folio|vllm)[_:][a-z_]*[a-z])[`{]", table))
    assert named, "docs/DEPLOY.md's alert table names no metric"
    for metric in named:
        assert metric in expressions, f"no alert reads {metric} (docs/DEPLOY.md's table)"


def _mebibytes(quantity: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)([A-Za-z]*)", quantity).groups()
    return float(number) * {"Mi": 1, "Gi": 1024, "m": 1, "g": 1024}[unit]


def test_worker_memory_comes_from_the_measured_peak_in_compose_and_kubernetes(production):
    """docs/DEPLOY.md's measured peak per OCR process (bench/memory.py) times the worker's
    processes, plus its main process, fits in what Kubernetes requests and Compose reserves."""
    deploy = (REPOSITORY / "docs" / "DEPLOY.md").read_text()
    peak = float(re.search(r"\*\*([\d,]+) MiB per OCR process\*\*", deploy)[1].replace(",", ""))
    main_process = 256
    worker = of_kind(production, "Deployment")["folio-worker"]
    processes = int(env_of(worker)["FOLIO_WORKER_CONCURRENCY"])
    resources = container(worker)["resources"]
    needed = processes * peak + main_process
    assert _mebibytes(resources["requests"]["memory"]) >= needed
    assert _mebibytes(resources["limits"]["memory"]) > _mebibytes(resources["requests"]["memory"])
    compose = yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())["services"]
    assert compose["worker"]["environment"]["FOLIO_WORKER_CONCURRENCY"] == str(processes)
    assert _mebibytes(compose["worker"]["mem_reservation"]) == _mebibytes(
        resources["requests"]["memory"]
    )
    assert _mebibytes(compose["worker"]["mem_limit"]) == _mebibytes(resources["limits"]["memory"])


@pytest.mark.parametrize(
    ("service", "deployment"),
    [("web", "folio-web"), ("worker", "folio-worker"), ("beat", "folio-beat"),
     ("gpu-worker", "folio-gpu-worker")],
)  # fmt: skip
def test_compose_reserves_and_limits_the_memory_kubernetes_requests_and_limits(
    production, service, deployment
):
    """One sizing per role (docs/DEPLOY.md, "Sizing") in both: Compose's reservation is the
    pod's request and its limit the pod's limit."""
    compose = yaml.safe_load((REPOSITORY / "docker-compose.yml").read_text())["services"]
    resources = container(of_kind(production, "Deployment")[deployment])["resources"]
    assert _mebibytes(compose[service]["mem_reservation"]) == _mebibytes(
        resources["requests"]["memory"]
    ), service
    assert _mebibytes(compose[service]["mem_limit"]) == _mebibytes(resources["limits"]["memory"])
