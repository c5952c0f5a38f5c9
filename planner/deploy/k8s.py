"""Kubernetes manifests for the replicas of one option: a Deployment + Service, or a
LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) when one replica spans several nodes; checked
against the Kubernetes API schemas with ``kubernetes-validate`` (optional extra ``deploy``)."""

from __future__ import annotations

import re
from typing import Any

from planner.errors import PlannerError

K8S_VERSION = "1.33.0"
LWS_API = "leaderworkerset.x-k8s.io/v1"
SHM_GIB = 16


def _name(text: str) -> str:
    """A DNS-1123 name (lower case, digits, '-'), at most 50 characters."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (s[:50].rstrip("-")) or "planner"


def _container(name: str, image: str, gpus: int, vendor: str, health: str, port: int,
               command: list[str]) -> dict[str, Any]:  # fmt: skip
    res = "amd.com/gpu" if vendor == "amd" else "nvidia.com/gpu"
    probe = {"httpGet": {"path": health, "port": port}, "periodSeconds": 10}
    return {
        "name": name,
        "image": image,
        "command": command,
        "env": [{"name": "PORT", "value": str(port)}],
        "ports": [{"containerPort": port, "name": "http"}],
        "resources": {"limits": {res: gpus}, "requests": {res: gpus}},
        "readinessProbe": {**probe, "initialDelaySeconds": 60, "failureThreshold": 3},
        "livenessProbe": {**probe, "initialDelaySeconds": 600, "failureThreshold": 6},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "serve", "mountPath": "/planner"},
        ],
    }


def _volumes(config_map: str) -> list[dict[str, Any]]:
    return [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{SHM_GIB}Gi"}},
        {"name": "serve", "configMap": {"name": config_map, "defaultMode": 0o755}},
    ]


def manifests(
    name: str,
    replicas: int,
    gpus_per_replica: int,
    nodes: int,
    vendor: str,
    image: str,
    health: str,
    port: int,
    files: dict[str, str],
    worker_command: list[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The manifests (file name -> object) of ``replicas`` replicas.

    ``files`` (serve.sh and its YAML) go into a ConfigMap mounted at ``/planner``; the
    container runs ``/planner/serve.sh``. With ``nodes > 1`` a LeaderWorkerSet of ``nodes``
    pods per replica, ``gpus_per_replica / nodes`` GPUs each; ``worker_command`` runs on
    the workers."""
    n = _name(name)
    labels = {"app.kubernetes.io/name": n, "app.kubernetes.io/managed-by": "planner"}
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{n}-serve", "labels": labels},
        "data": dict(files),
    }
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": n, "labels": labels},
        "spec": {
            "selector": labels if nodes == 1 else {**labels, "role": "leader"},
            "ports": [{"name": "http", "port": port, "targetPort": port}],
        },
    }
    out = {"configmap.yaml": cm, "service.yaml": svc}
    if nodes == 1:
        c = _container("engine", image, gpus_per_replica, vendor, health, port,
                       ["/planner/serve.sh"])  # fmt: skip
        out["deployment.yaml"] = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": n, "labels": labels},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [c], "volumes": _volumes(f"{n}-serve")},
                },
            },
        }
        return out
    if gpus_per_replica % nodes:
        raise PlannerError(
            f"{name}: {gpus_per_replica} GPUs do not split evenly over {nodes} nodes"
        )
    per = gpus_per_replica // nodes
    lead = _container("leader", image, per, vendor, health, port, ["/planner/serve.sh"])
    work = _container("worker", image, per, vendor, health, port,
                      worker_command or ["/planner/worker.sh"])  # fmt: skip
    for k in ("readinessProbe", "livenessProbe", "ports"):
        work.pop(k)
    out["leaderworkerset.yaml"] = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": n, "labels": labels},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": {**labels, "role": "leader"}},
                    "spec": {"containers": [lead], "volumes": _volumes(f"{n}-serve")},
                },
                "workerTemplate": {
                    "metadata": {"labels": {**labels, "role": "worker"}},
                    "spec": {"containers": [work], "volumes": _volumes(f"{n}-serve")},
                },
            },
        },
    }
    return out


def validate(obj: dict[str, Any], where: str) -> None:
    """Check one manifest against the Kubernetes API schemas (strict: no unknown field).

    A LeaderWorkerSet (no schema in kubernetes-validate) is checked structurally and its two
    pod templates as ``PodTemplateSpec``.

    Raises
    ------
    PlannerError
        kubernetes-validate missing (pip install 'planner[deploy]') or an invalid manifest.
    """
    try:
        import kubernetes_validate
    except ImportError:
        raise PlannerError(
            "checking manifests needs kubernetes-validate: pip install 'planner[deploy]'"
        ) from None
    docs = [obj]
    if obj.get("kind") == "LeaderWorkerSet":
        spec = obj.get("spec") or {}
        lwt = spec.get("leaderWorkerTemplate") or {}
        if obj.get("apiVersion") != LWS_API or not isinstance(lwt.get("size"), int):
            raise PlannerError(f"{where}: LeaderWorkerSet without {LWS_API} or an integer size")
        docs = []
        for key in ("leaderTemplate", "workerTemplate"):
            docs.append({"apiVersion": "v1", "kind": "PodTemplate",
                         "metadata": {"name": f"{key.lower()}"}, "template": lwt[key]})  # fmt: skip
    for d in docs:
        try:
            kubernetes_validate.validate(d, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            raise PlannerError(f"{where}: {path}: {e.message}") from None
