# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Node labels and taints as data, for the kubernetes_cluster role's nodes.yml: what each
node should carry (the inventory's labels and taints, and labels from the discovered
hardware fact clusterdos_hw), and what differs from the Node objects the API returned."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kube_node_changes
short_description: The label and taint changes that bring Kubernetes nodes to their wanted state
version_added: 0.1.0
description:
  - Compares the Node objects read from the API (C(kubernetes.core.k8s_info)'s C(resources))
    with what each node should carry (C(kube_node_wanted)) and returns one entry per
    registered node that needs a change, C({node, labels, taints}) - C(labels) a merge patch
    (a value, or null to remove a label the collection owns), C(taints) the taints to add or
    whose value differs. Nodes not registered yet are left out. Unlisted labels and taints
    are never touched.
  - The same plugin file also provides C(kube_node_wanted) (the wanted labels and taints of
    each node, from the inventory and the hardware fact), C(kube_hw_labels) (the labels one
    host's C(clusterdos_hw) gives), C(kube_label_changes) and C(kube_taint_changes) (one
    node's), and C(kube_nodes_off_version_step) (nodes an upgrade to a version would take
    more than one minor, or down), described in their docstrings and in docs/kubernetes.md.
options:
  _input:
    description: The Node objects (each with C(metadata.name), C(metadata.labels), C(spec.taints)).
    type: list
    elements: dict
    required: true
  wanted:
    description: Node name to C({labels, taints}) as C(kube_node_wanted) returns it.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Set node labels that differ from the inventory and the hardware found
  kubernetes.core.k8s:
    kubeconfig: /etc/kubernetes/admin.conf
    state: patched
    kind: Node
    name: "{{ item.node }}"
    definition:
      metadata:
        labels: "{{ item.labels }}"
  loop: "{{ __nodes.resources | clusterdos.cluster.kube_node_changes(__wanted) | selectattr('labels') | list }}"
"""

RETURN = r"""
_value:
  description: One entry per node needing a change, sorted by node name.
  type: list
  elements: dict
  contains:
    node: {description: The node name., type: str}
    labels: {description: Labels to set (string values) or remove (null)., type: dict}
    taints:
      description: Taints to add or update, each a mapping with C(key), C(value) and C(effect).
      type: list
      elements: dict
"""

import re
from typing import Any, Iterable, Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterdos.cluster.plugins.filter.kubernetes import kube_minor_skew, kube_taints

# Labels the collection derives from clusterdos_hw. They are owned: a key among these that
# the hardware no longer gives (an unknown architecture, say) is removed from the node.
HW_LABEL_PREFIX = "clusterdos.io"
HW_LABEL_KEYS = ("gpu.vendor", "gpu.count", "gpu.type", "gpu.architecture", "rdma.ib", "rdma.roce")

# A label value: at most 63 characters, alphanumerics with - _ . inside.
_LABEL_VALUE_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def _label_value(value: Any) -> str | None:
    """A discovered value made a valid label value, or None when nothing is left."""
    if value is None:
        return None
    text = _LABEL_VALUE_BAD.sub("-", str(value).strip().lower())[:63].strip("-_.")
    return text or None


def kube_hw_labels(hw: Mapping[str, Any] | None, prefix: str = HW_LABEL_PREFIX) -> dict[str, str | None]:
    """The labels one host's clusterdos_hw gives (docs/gpu.md, docs/rdma.md):

    from `gpus` (when discovered): PREFIX/gpu.vendor (nvidia, amd, mixed, none),
    PREFIX/gpu.count, PREFIX/gpu.type and PREFIX/gpu.architecture (None - remove - when
    unknown); from `rdma` (when discovered): PREFIX/rdma.ib and PREFIX/rdma.roce, "true"
    when an InfiniBand or an Ethernet (RoCE) port of an RDMA device is ACTIVE, else "false".
    A part of the fact that was not discovered gives no label at all (nothing is removed).
    """
    if hw is None:
        return {}
    if not isinstance(hw, Mapping):
        raise AnsibleFilterError(f"kube_hw_labels: clusterdos_hw must be a mapping, got {type(hw).__name__}")
    out: dict[str, str | None] = {}
    gpus = hw.get("gpus")
    if isinstance(gpus, Mapping):
        count = int(gpus.get("count") or 0)
        out[f"{prefix}/gpu.vendor"] = _label_value(gpus.get("vendor") if count else "none") or "none"
        out[f"{prefix}/gpu.count"] = str(count)
        out[f"{prefix}/gpu.type"] = _label_value(gpus.get("type")) if count else None
        arch = gpus.get("architecture")
        out[f"{prefix}/gpu.architecture"] = _label_value(arch) if count and arch != "unknown" else None
    rdma = hw.get("rdma")
    if isinstance(rdma, Mapping):
        out[f"{prefix}/rdma.ib"] = "true" if int(rdma.get("active_infiniband_ports") or 0) > 0 else "false"
        out[f"{prefix}/rdma.roce"] = "true" if int(rdma.get("active_ethernet_ports") or 0) > 0 else "false"
    return out


def _host_get(hostvars: Mapping[str, Any], host: str, name: str, default: Any) -> Any:
    """hostvars[host][name] or default (hostvars hold inventory and facts, not role defaults)."""
    try:
        host_vars = hostvars[host]
    except KeyError:
        return default
    value = host_vars.get(name, default) if hasattr(host_vars, "get") else default
    return default if value is None else value


def kube_node_wanted(nodes: Iterable[str], hostvars: Mapping[str, Any], control_planes: Iterable[str],
                     control_plane_taints: Iterable[Any] | None = None, hardware_labels: bool = True,
                     prefix: str = HW_LABEL_PREFIX) -> dict[str, dict[str, Any]]:
    """Each node's wanted {labels, taints}.

    labels: the hardware labels of its clusterdos_hw fact (when hardware_labels), with its
    kubernetes_cluster_node_labels laid over them (the inventory names a label on purpose:
    it wins); values become strings. taints: kubernetes_cluster_control_plane_taints for
    control-plane members (the host's own, else control_plane_taints), else its
    kubernetes_cluster_node_taints, as Node taints ({key, effect[, value]}).
    """
    cps = set(control_planes or [])
    out: dict[str, dict[str, Any]] = {}
    for node in nodes or []:
        labels: dict[str, str | None] = {}
        if hardware_labels:
            facts = _host_get(hostvars, node, "ansible_facts", {}) or {}
            labels.update(kube_hw_labels(facts.get("clusterdos_hw") if isinstance(facts, Mapping) else None, prefix))
        declared = _host_get(hostvars, node, "kubernetes_cluster_node_labels", {})
        if not isinstance(declared, Mapping):
            raise AnsibleFilterError(f"kube_node_wanted: kubernetes_cluster_node_labels of {node} must be a mapping")
        labels.update({str(k): _string(v) for k, v in declared.items()})
        if node in cps:
            spec = _host_get(hostvars, node, "kubernetes_cluster_control_plane_taints", list(control_plane_taints or []))
        else:
            spec = _host_get(hostvars, node, "kubernetes_cluster_node_taints", [])
        out[node] = {"labels": labels, "taints": kube_taints(spec)}
    return out


def _string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def kube_label_changes(present: Mapping[str, str] | None, wanted: Mapping[str, str | None]) -> dict[str, str | None]:
    """The merge patch bringing `present` labels to `wanted`: keys whose value differs, and
    None for keys wanted absent (None) that are present. Other labels are left alone."""
    present = present or {}
    out: dict[str, str | None] = {}
    for key, value in (wanted or {}).items():
        if value is None:
            if key in present:
                out[key] = None
        elif present.get(key) != value:
            out[key] = value
    return out


def kube_taint_changes(present: Iterable[Mapping[str, Any]] | None,
                       wanted: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Of the wanted taints, those missing from `present` or there with another value (a
    taint is one key and effect; k8s_taint replaces the value). Others are left alone."""
    have = {(t.get("key"), t.get("effect")): t.get("value") or "" for t in present or []}
    out = []
    for taint in wanted or []:
        current = have.get((taint["key"], taint["effect"]))
        if current is None or current != (taint.get("value") or ""):
            out.append(dict(taint))
    return out


def kube_node_changes(items: Iterable[Mapping[str, Any]] | None,
                      wanted: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per registered node, the label patch and the taints that bring it to `wanted`;
    only nodes with a change, sorted by name (see DOCUMENTATION)."""
    objects = {}
    for node in items or []:
        name = (node.get("metadata") or {}).get("name")
        if name:
            objects[name] = node
    out = []
    for name in sorted(wanted or {}):
        if name not in objects:
            continue
        node = objects[name]
        labels = kube_label_changes((node.get("metadata") or {}).get("labels"), wanted[name].get("labels") or {})
        taints = kube_taint_changes((node.get("spec") or {}).get("taints"), wanted[name].get("taints") or [])
        if labels or taints:
            out.append({"node": name, "labels": labels, "taints": taints})
    return out


def kube_nodes_off_version_step(items: Iterable[Mapping[str, Any]] | None, version: Any) -> list[str]:
    """Of the Node objects, those whose kubelet is not on `version`'s minor or the one
    before, as 'name=kubeletVersion' (kubeadm upgrades one minor at a time and never
    down). A node that reports no version yet is left out."""
    out = []
    for node in items or []:
        name = (node.get("metadata") or {}).get("name")
        running = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion")
        if name and running and kube_minor_skew(running, version) not in (0, 1):
            out.append(f"{name}={running}")
    return out


class FilterModule:
    """clusterdos.cluster node label and taint filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "kube_hw_labels": kube_hw_labels,
            "kube_node_wanted": kube_node_wanted,
            "kube_label_changes": kube_label_changes,
            "kube_taint_changes": kube_taint_changes,
            "kube_node_changes": kube_node_changes,
            "kube_nodes_off_version_step": kube_nodes_off_version_step,
        }
