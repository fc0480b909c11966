"""What a set of rendered NetworkPolicies lets through, read the way the API documents them
(kubernetes.io, "Network Policies"): a pod selected by no policy of a direction is open in
that direction; a selected pod takes only what one of the selecting policies' rules allows;
a connection needs the sender's egress and the receiver's ingress both. Enough of the rules
for the policies here: pod and namespace selectors (matchLabels, matchExpressions), ipBlock
with its exceptions for addresses outside the cluster, numbered ports and protocols."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Address:
    """Somewhere outside the cluster."""

    ip: str


def _matches(selector: dict | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def _namespace_labels(namespace: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": namespace}


def _peer_matches(peer: dict, policy_namespace: str, other: Pod | Address) -> bool:
    if "ipBlock" in peer:
        if not isinstance(other, Address):
            return False  # cluster pods are not the internet here
        block = peer["ipBlock"]
        ip = ipaddress.ip_address(other.ip)
        if ip not in ipaddress.ip_network(block["cidr"]):
            return False
        return not any(ip in ipaddress.ip_network(e) for e in block.get("except") or [])
    if isinstance(other, Address):
        return False
    if "namespaceSelector" in peer:
        if not _matches(peer["namespaceSelector"], _namespace_labels(other.namespace)):
            return False
    elif other.namespace != policy_namespace:
        return False
    return "podSelector" not in peer or _matches(peer["podSelector"], other.labels)


def _port_matches(ports: list[dict] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    return any(
        p.get("protocol", "TCP") == protocol and ("port" not in p or p["port"] == port)
        for p in ports
    )


def _selecting(policies: list[dict], pod: Pod, direction: str) -> list[dict]:
    return [
        policy
        for policy in policies
        if policy["metadata"].get("namespace", pod.namespace) == pod.namespace
        and _matches(policy["spec"]["podSelector"], pod.labels)  # {} selects every pod
        and direction in policy["spec"].get("policyTypes", ["Ingress"])
    ]


def _side_allows(policies, pod: Pod, other, port: int, protocol: str, direction: str) -> bool:
    selecting = _selecting(policies, pod, direction)
    if not selecting:
        return True
    rules_key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    for policy in selecting:
        namespace = policy["metadata"].get("namespace", pod.namespace)
        for rule in policy["spec"].get(rules_key) or []:
            peers = rule.get(peers_key)
            if peers and not any(_peer_matches(p, namespace, other) for p in peers):
                continue
            if _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def allowed(
    policies: list[dict], source: Pod, target: Pod | Address, port: int, protocol: str = "TCP"
) -> bool:
    """Whether ``source`` may open a connection to ``target`` on ``port``."""
    if not _side_allows(policies, source, target, port, protocol, "Egress"):
        return False
    if isinstance(target, Address):
        return True
    return _side_allows(policies, target, source, port, protocol, "Ingress")
