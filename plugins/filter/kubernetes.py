# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Filters for the containerd and Kubernetes roles: TOML rendering, kubeadm v1beta4
argument lists, taints, version arithmetic and CIDR overlap checks (netaddr)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: to_toml
short_description: Render a mapping as TOML (containerd configuration and hosts.toml)
version_added: 0.1.0
description:
  - Renders nested mappings as TOML tables with quoted dotted keys where needed, so that
    containerd drop-ins are built as data. Scalars, lists of scalars and nested mappings
    are supported; a list of mappings is rendered as an array of tables.
  - The same plugin file also provides C(kubeadm_args), C(kube_taints), C(kube_minor),
    C(kube_minor_skew) and C(cidr_overlaps), described in their docstrings and in
    docs/kubernetes.md.
options:
  _input:
    description: The mapping to render.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Render a containerd drop-in
  ansible.builtin.copy:
    content: "{{ {'version': 2, 'plugins': {'io.containerd.grpc.v1.cri': {'sandbox_image': 'registry.k8s.io/pause:3.10'}}} | clusterdos.cluster.to_toml }}"
    dest: /etc/containerd/conf.d/10-example.toml
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The TOML text, ending with a newline.
  type: str
"""

import json
import re
from typing import Any, Iterable, Mapping

try:
    import netaddr

    HAS_NETADDR = True
except ImportError:  # pragma: no cover - reported when the filter is used
    HAS_NETADDR = False

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterdos.cluster.plugins.module_utils import host_values

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TAINT = re.compile(r"^(?P<key>[A-Za-z0-9./_-]+)(=(?P<value>[A-Za-z0-9._-]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$")
_VERSION = re.compile(r"^v?(?P<major>\d+)\.(?P<minor>\d+)(\.(?P<patch>\d+))?([-+].*)?$")


# --- TOML --------------------------------------------------------------------------------

def _toml_key(key: Any) -> str:
    text = str(key)
    return text if _BARE_KEY.match(text) else json.dumps(text)


def _toml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes.
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, Mapping) for v in value):
            raise AnsibleFilterError("to_toml: a list mixing tables and values cannot be rendered inline")
        return "[" + ", ".join(_toml_scalar(v) for v in value) + "]"
    if value is None:
        raise AnsibleFilterError("to_toml: TOML has no null; drop the key or give it a value")
    raise AnsibleFilterError(f"to_toml: cannot render a value of type {type(value).__name__}")


def _is_table_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(isinstance(v, Mapping) for v in value)


def _toml_table(data: Mapping[str, Any], path: list[str], out: list[str]) -> None:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, Mapping) and not _is_table_list(v)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, Mapping)]
    arrays = [(k, v) for k, v in data.items() if _is_table_list(v)]
    for key, value in scalars:
        out.append(f"{_toml_key(key)} = {_toml_scalar(value)}")
    for key, value in tables:
        sub = path + [_toml_key(key)]
        out.append("")
        out.append("[" + ".".join(sub) + "]")
        _toml_table(value, sub, out)
    for key, items in arrays:
        sub = path + [_toml_key(key)]
        for item in items:
            out.append("")
            out.append("[[" + ".".join(sub) + "]]")
            _toml_table(item, sub, out)


def to_toml(data: Mapping[str, Any]) -> str:
    """Render a mapping as TOML text."""
    if not isinstance(data, Mapping):
        raise AnsibleFilterError("to_toml expects a mapping")
    out: list[str] = []
    _toml_table(data, [], out)
    return "\n".join(out).lstrip("\n") + "\n"


# --- kubeadm -----------------------------------------------------------------------------

def kubeadm_args(args: Mapping[str, Any] | Iterable[Mapping[str, Any]] | None) -> list[dict[str, str]]:
    """kubeadm v1beta4 `extraArgs`/`kubeletExtraArgs`: a list of {name, value}.

    Accepts a mapping (the inventory-friendly form; sorted by name so the rendered config
    is stable) or a list already in v1beta4 form (kept in order: repeated names are legal).
    """
    if not args:
        return []
    if isinstance(args, Mapping):
        return [{"name": str(k), "value": _arg_value(v)} for k, v in sorted(args.items())]
    result = []
    for item in args:
        if not isinstance(item, Mapping) or "name" not in item or "value" not in item:
            raise AnsibleFilterError(f"kubeadm_args: each list item needs name and value, got {item!r}")
        result.append({"name": str(item["name"]), "value": _arg_value(item["value"])})
    return result


def _arg_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def kube_taints(taints: Iterable[Any] | None) -> list[dict[str, str]]:
    """Taints from `key=value:Effect` / `key:Effect` strings (or mappings) to Node taints."""
    result = []
    for taint in taints or []:
        if isinstance(taint, Mapping):
            if "key" not in taint or taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise AnsibleFilterError(f"kube_taints: {taint!r} needs key and effect NoSchedule, PreferNoSchedule or NoExecute")
            entry = {"key": str(taint["key"]), "effect": str(taint["effect"])}
            if taint.get("value") not in (None, ""):
                entry["value"] = str(taint["value"])
            result.append(entry)
            continue
        m = _TAINT.match(str(taint))
        if not m:
            raise AnsibleFilterError(
                f"kube_taints: {taint!r} is not KEY[=VALUE]:EFFECT with EFFECT one of NoSchedule, PreferNoSchedule, NoExecute")
        entry = {"key": m["key"], "effect": m["effect"]}
        if m["value"]:
            entry["value"] = m["value"]
        result.append(entry)
    return result


# --- versions ----------------------------------------------------------------------------

def _parse_version(version: Any) -> tuple[int, int, int]:
    m = _VERSION.match(str(version).strip())
    if not m:
        raise AnsibleFilterError(f"not a Kubernetes version: {version!r} (expected like 1.34.1)")
    return int(m["major"]), int(m["minor"]), int(m["patch"] or 0)


def kube_minor(version: Any) -> str:
    """'v1.34.1' -> '1.34' (the pkgs.k8s.io repository and the upgrade unit)."""
    major, minor = _parse_version(version)[:2]
    return f"{major}.{minor}"


def kube_minor_skew(current: Any, target: Any) -> int:
    """How many minor versions `target` is ahead of `current` (negative: a downgrade)."""
    c, t = _parse_version(current), _parse_version(target)
    if c[0] != t[0]:
        raise AnsibleFilterError(f"kube_minor_skew: cannot compare major versions {current} and {target}")
    return t[1] - c[1]


def kube_version_in_range(version: Any, minimum: Any, maximum: Any) -> bool:
    """True when the minor of `version` lies within [minimum, maximum] (minors, inclusive)."""
    v, lo, hi = _parse_version(version)[:2], _parse_version(minimum)[:2], _parse_version(maximum)[:2]
    return lo <= v <= hi


# --- networks ----------------------------------------------------------------------------

def cidr_overlaps(networks: Mapping[str, Any]) -> list[str]:
    """Every overlapping pair among named CIDRs (a name may hold a list), as messages.

    Empty and missing values are skipped; an invalid CIDR is reported as a problem too.
    """
    if not HAS_NETADDR:
        raise AnsibleFilterError("cidr_overlaps needs the Python library netaddr on the controller (pip install netaddr)")
    parsed: list[tuple[str, Any]] = []
    problems: list[str] = []
    for name, value in networks.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for cidr in values:
            if cidr in (None, ""):
                continue
            try:
                parsed.append((f"{name} {cidr}", netaddr.IPNetwork(str(cidr))))
            except (netaddr.AddrFormatError, ValueError, TypeError):
                problems.append(f"{name} {cidr} is not a valid CIDR")
    for i, (name_a, net_a) in enumerate(parsed):
        for name_b, net_b in parsed[i + 1:]:
            if name_a.split(" ")[0] == name_b.split(" ")[0]:
                continue
            if net_a.version == net_b.version and (net_a.first <= net_b.last and net_b.first <= net_a.last):
                problems.append(f"{name_a} overlaps {name_b}")
    return problems


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def bad_image_archives(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """Entries of containerd_image_archives that are not {file, sha256, images}."""
    bad = []
    for entry in entries or []:
        ok = (isinstance(entry, Mapping)
              and isinstance(entry.get("file"), str) and entry["file"] and "/" not in entry["file"]
              and isinstance(entry.get("sha256"), str) and _SHA256.match(entry["sha256"])
              and isinstance(entry.get("images"), (list, tuple)) and len(entry["images"]) > 0
              and all(isinstance(i, str) and i for i in entry["images"]))
        if not ok:
            bad.append(dict(entry) if isinstance(entry, Mapping) else {"file": str(entry)})
    return bad


def image_archives_to_load(entries: Iterable[Mapping[str, Any]], present: Iterable[str]) -> list[Mapping[str, Any]]:
    """The image archive entries ({file, sha256, images}) with an image not in `present`
    (the references `ctr images list --quiet` prints)."""
    have = set(present or [])
    return [e for e in entries or [] if any(ref not in have for ref in e.get("images") or [])]


def archive_mismatches(results: Iterable[Mapping[str, Any]]) -> list[str]:
    """From a looped stat (checksum_algorithm sha256) over {file, sha256} items: the
    archives missing, not regular files, or whose sha256 differs, one line each."""
    out = []
    for res in results or []:
        item = res.get("item") or {}
        stat = res.get("stat") or {}
        name = item.get("file", "?")
        if not stat.get("exists"):
            out.append(f"{name}: missing")
        elif not stat.get("isreg"):
            out.append(f"{name}: not a regular file")
        elif stat.get("checksum") != item.get("sha256"):
            out.append(f"{name}: sha256 {stat.get('checksum')} (expected {item.get('sha256')})")
    return out


def kube_binary_version_mismatches(results: Iterable[Mapping[str, Any]], version: Any) -> list[str]:
    """From a looped command over {name, args} items (kubeadm version -o short, kubelet
    --version, kubectl version --client -o json): one line per binary that does not
    report `version` (kubectl: not within one minor), or that could not run."""
    want = _parse_version(version)
    out = []
    for res in results or []:
        name = (res.get("item") or {}).get("name", "?")
        if res.get("rc") != 0:
            detail = (res.get("stderr") or res.get("msg") or "").strip().splitlines()
            out.append(f"{name} did not run ({detail[-1] if detail else 'rc ' + str(res.get('rc'))})")
            continue
        found = _reported_version(res)
        try:
            got = _parse_version(found)
        except AnsibleFilterError:
            out.append(f"{name} reports {(res.get('stdout') or '').strip()!r}, no version")
            continue
        if name == "kubectl":
            if got[0] != want[0] or abs(got[1] - want[1]) > 1:
                out.append(f"kubectl is {found}, more than one minor from v{version}")
        elif got != want:
            out.append(f"{name} is {found}, not v{version}")
    return out


def kube_nodes_not_ready(items: Iterable[Mapping[str, Any]], names: Iterable[str]) -> list[str]:
    """Of the wanted node names, those missing from the Node objects (`kubectl get nodes
    -o json`'s items) or whose Ready condition is not True, as 'name (reason)'."""
    state: dict[str, str] = {}
    for node in items or []:
        name = (node.get("metadata") or {}).get("name")
        ready = [c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"]
        if name:
            state[name] = ready[0].get("status", "Unknown") if ready else "Unknown"
            if ready and ready[0].get("status") != "True":
                state[name] += f": {ready[0].get('message') or ready[0].get('reason') or ''}".rstrip(": ")
    out = []
    for name in names or []:
        if name not in state:
            out.append(f"{name} (not registered)")
        elif state[name] != "True":
            out.append(f"{name} (Ready {state[name]})")
    return out


def _reported_version(res: Mapping[str, Any]) -> str:
    """The version a probe (kubeadm version -o short, kubelet --version, kubectl version
    --client -o json) printed, or '' when it did not run."""
    if res.get("rc") != 0 or res.get("skipped"):
        return ""
    text = (res.get("stdout") or "").strip()
    if (res.get("item") or {}).get("name") == "kubectl":
        try:
            text = json.loads(text).get("clientVersion", {}).get("gitVersion", "")
        except ValueError:
            return ""
    return text.split()[-1] if text else ""


def kube_binaries_to_copy(names: Iterable[str], wanted: Iterable[Mapping[str, Any]],
                          installed: Iterable[Mapping[str, Any]]) -> list[str]:
    """Of `names`, those whose installed version (a probe on the host) differs from the
    controller's copy (the same probe there), or that are not installed."""
    want = {(r.get("item") or {}).get("name"): _reported_version(r) for r in wanted or []}
    have = {(r.get("item") or {}).get("name"): _reported_version(r) for r in installed or []}
    return [n for n in names or [] if not have.get(n) or have.get(n) != want.get(n)]


def differing_vars(names: Iterable[str], hosts: Iterable[str], hostvars: Mapping[str, Any]) -> list[str]:
    """Of the inventory variables `names`, those not the same on every host (unset counts
    as a value of its own): for settings that must be cluster-wide."""
    return list(host_values.differing(names, hosts, hostvars))


class FilterModule:
    """clusterdos.cluster Kubernetes and containerd filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "to_toml": to_toml,
            "kubeadm_args": kubeadm_args,
            "kube_taints": kube_taints,
            "kube_minor": kube_minor,
            "kube_minor_skew": kube_minor_skew,
            "kube_version_in_range": kube_version_in_range,
            "cidr_overlaps": cidr_overlaps,
            "bad_image_archives": bad_image_archives,
            "archive_mismatches": archive_mismatches,
            "image_archives_to_load": image_archives_to_load,
            "kube_binary_version_mismatches": kube_binary_version_mismatches,
            "kube_nodes_not_ready": kube_nodes_not_ready,
            "kube_binaries_to_copy": kube_binaries_to_copy,
            "differing_vars": differing_vars,
        }
