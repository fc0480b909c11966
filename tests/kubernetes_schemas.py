"""Offline validation of rendered Kubernetes objects: the built-in kinds against the API's
OpenAPI schemas (kubernetes-validate, strict: an unknown field is an error), and the custom
resources of KEDA and the Prometheus Operator against models generated from their CRDs
(cloudcoil's packages: KEDA 2.16.1, Prometheus Operator 0.80.1), with unknown fields
refused as a strict ``kubectl apply --validate=strict`` would."""

from __future__ import annotations

import typing

import pydantic


def _custom_models() -> dict[tuple[str, str], type[pydantic.BaseModel]]:
    from cloudcoil.models.keda import v1alpha1 as keda
    from cloudcoil.models.prometheus_operator import v1 as prometheus

    return {
        ("keda.sh/v1alpha1", "ScaledObject"): keda.ScaledObject,
        ("keda.sh/v1alpha1", "TriggerAuthentication"): keda.TriggerAuthentication,
        ("monitoring.coreos.com/v1", "ServiceMonitor"): prometheus.ServiceMonitor,
        ("monitoring.coreos.com/v1", "PrometheusRule"): prometheus.PrometheusRule,
    }


def _models_in(annotation) -> list[type[pydantic.BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def unknown_fields(model: type[pydantic.BaseModel], data: object, path: str = "") -> list[str]:
    """The keys of ``data`` (recursively) that the model has no field for: the generated
    models accept extra keys, the API server's structural schema would drop them."""
    if not isinstance(data, dict):
        return []
    fields = {(info.alias or name): info for name, info in model.model_fields.items()}
    unknown = []
    for key, value in data.items():
        if key not in fields:
            unknown.append(f"{path}.{key}")
            continue
        candidates = _models_in(fields[key].annotation)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and candidates:
                # A union of models: the item belongs to the one that knows most of its keys.
                unknown += min(
                    (unknown_fields(m, item, f"{path}.{key}") for m in candidates), key=len
                )
    return unknown


def validate(document: dict, kubernetes_version: str = "1.33.0") -> None:
    """Raises with the reason when the object is not valid for its kind."""
    import kubernetes_validate

    model = _custom_models().get((document["apiVersion"], document["kind"]))
    if model is None:
        kubernetes_validate.validate(document, kubernetes_version, strict=True)
        return
    model.model_validate(document)
    unknown = unknown_fields(model, document)
    if unknown:
        name = document["metadata"]["name"]
        raise ValueError(f"{document['kind']} {name}: unknown fields {unknown}")
