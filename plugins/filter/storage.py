# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Filters for shared storage: Lustre NIDs, mounts and packages, LNet config, storage classes."""

from __future__ import annotations

DOCUMENTATION = r"""
name: lustre_mount_problems
short_description: What is wrong with a list of Lustre mounts, in words
version_added: 0.1.0
description:
  - Checks each mount (C(fsname), C(mgs_nids), C(path)) and returns one message per
    problem; an empty list means the mounts are well formed.
  - C(mgs_nids) lists the MGS nodes in failover order; each entry is a NID or a list of
    NIDs of the same node. A NID is C(ADDRESS@NET) with an IPv4 address and an LNet
    network C(tcp), C(o2ib), C(kfi) or C(gni) with an optional number (C(tcp0), C(o2ib1)).
  - The plugin file also provides C(lnet_nid_problems), C(lnet_network_problems), C(lustre_mount_source),
    C(lustre_client_packages), C(lnet_import_config) and C(storage_class_problems).
options:
  _input:
    description: Lustre mounts.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Refuse malformed Lustre mounts before any change
  ansible.builtin.assert:
    that: lustre_client_mounts | clusterdos.cluster.lustre_mount_problems | length == 0
    fail_msg: "{{ lustre_client_mounts | clusterdos.cluster.lustre_mount_problems | join('; ') }}"

- name: The mount source of one filesystem (10.0.0.1@tcp,10.1.0.1@o2ib:10.0.0.2@tcp:/scratch)
  ansible.builtin.debug:
    msg: "{{ {'fsname': 'scratch', 'mgs_nids': [['10.0.0.1@tcp', '10.1.0.1@o2ib'], '10.0.0.2@tcp']} | clusterdos.cluster.lustre_mount_source }}"
"""

RETURN = r"""
_value:
  description: One message per problem, naming the mount and the value to fix.
  type: list
  elements: str
"""

import ipaddress
import re
from typing import Any, Iterable, Mapping

from ansible_collections.clusterdos.cluster.plugins.module_utils.storage_classes import storage_class_problems

# LNet network types a client can be configured with here, and their NID address kind.
LNET_TYPES = ("tcp", "o2ib", "kfi", "gni")
_NET_RE = re.compile(r"^(?P<type>[a-z0-9]+?)(?P<num>[0-9]*)$")
_FSNAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,8}$")


def lnet_network_problem(net: Any) -> str | None:
    """Why NET is not an LNet network name like tcp, tcp0 or o2ib1 (None when it is)."""
    m = _NET_RE.match(str(net))
    if not m or m.group("type") not in LNET_TYPES:
        return f"'{net}' is not an LNet network (one of {', '.join(LNET_TYPES)}, optionally numbered: tcp0, o2ib1)"
    if m.group("num") and (len(m.group("num")) > 1 and m.group("num").startswith("0")):
        return f"'{net}' has a network number with a leading zero"
    return None


def nid_problem(nid: Any) -> str | None:
    """Why NID is malformed (None when it is a valid ADDRESS@NET)."""
    text = str(nid)
    if text.count("@") != 1:
        return f"NID '{text}' must be ADDRESS@NET (e.g. 10.0.0.1@tcp, 192.168.1.2@o2ib)"
    address, net = text.split("@")
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        return f"NID '{text}': '{address}' is not an IPv4 address"
    problem = lnet_network_problem(net)
    return f"NID '{text}': {problem}" if problem else None


def lnet_nid_problems(nids: Iterable[Any]) -> list[str]:
    """One message per malformed NID."""
    return [p for p in (nid_problem(n) for n in nids) if p]


def _mgs_groups(mount: Mapping[str, Any]) -> list[list[Any]]:
    groups = mount.get("mgs_nids") or []
    if isinstance(groups, str):
        groups = [groups]
    return [list(g) if isinstance(g, (list, tuple)) else [g] for g in groups]


def lustre_mount_problems(mounts: Iterable[Mapping[str, Any]]) -> list[str]:
    problems: list[str] = []
    seen_paths: set[str] = set()
    for index, mount in enumerate(mounts):
        if not isinstance(mount, Mapping):
            problems.append(f"lustre mount #{index + 1} is not a mapping with fsname, mgs_nids and path")
            continue
        label = f"lustre mount {mount.get('fsname', '#' + str(index + 1))}"
        fsname = str(mount.get("fsname", ""))
        if not _FSNAME_RE.match(fsname):
            problems.append(f"{label}: fsname '{fsname}' must be 1-8 letters, digits, '_' or '-'")
        groups = _mgs_groups(mount)
        if not groups or any(not g for g in groups):
            problems.append(f"{label}: mgs_nids must list at least one MGS NID (e.g. ['10.0.0.1@tcp'])")
        for group in groups:
            problems.extend(f"{label}: {p}" for p in lnet_nid_problems(group))
        path = str(mount.get("path", ""))
        if not path.startswith("/") or path == "/":
            problems.append(f"{label}: path '{path}' must be an absolute directory other than /")
        elif path.rstrip("/") in seen_paths:
            problems.append(f"{label}: path '{path}' is already used by another Lustre mount")
        seen_paths.add(path.rstrip("/"))
    return problems


def lustre_mount_source(mount: Mapping[str, Any]) -> str:
    """NID[,NID]:NID[,NID]:/fsname: NIDs of one MGS node by comma, failover nodes by colon."""
    return ":".join(",".join(str(n) for n in group) for group in _mgs_groups(mount)) + ":/" + str(mount["fsname"])


def lustre_client_packages(os_family: str, kernel: str, module_type: str, kmod_kernels: Iterable[str]) -> dict[str, Any]:
    """The Lustre client packages for this host: prebuilt kmod packages when the repository
    has them for the running kernel (or when asked), else DKMS with the kernel's headers.

    Returns {"module_type": "kmod"|"dkms", "packages": [...]}.
    """
    if module_type not in ("auto", "kmod", "dkms"):
        raise ValueError(f"module type must be auto, kmod or dkms, not {module_type!r}")
    chosen = module_type
    if module_type == "auto":
        chosen = "kmod" if kernel in set(kmod_kernels) else "dkms"
    if os_family == "RedHat":
        packages = {"kmod": ["kmod-lustre-client", "lustre-client"],
                    "dkms": ["lustre-client-dkms", "lustre-client", f"kernel-devel-{kernel}"]}[chosen]
    elif os_family == "Debian":
        packages = {"kmod": [f"lustre-client-modules-{kernel}", "lustre-client-utils"],
                    "dkms": ["lustre-client-modules-dkms", "lustre-client-utils", f"linux-headers-{kernel}"]}[chosen]
    else:
        raise ValueError(f"no Lustre client packages known for OS family {os_family!r}")
    return {"module_type": chosen, "packages": packages}


def lnet_network_problems(networks: Iterable[Any]) -> list[str]:
    """One message per malformed entry of [{net: tcp0, interfaces: [eth0]}, ...]."""
    problems: list[str] = []
    seen: set[str] = set()
    for index, network in enumerate(networks):
        if not isinstance(network, Mapping):
            problems.append(f"LNet network #{index + 1} is not a mapping with net and interfaces")
            continue
        problem = lnet_network_problem(network.get("net", ""))
        if problem:
            problems.append(problem)
        interfaces = network.get("interfaces")
        if not isinstance(interfaces, (list, tuple)) or not interfaces:
            problems.append(f"LNet network '{network.get('net', '')}' needs interfaces, a list like [eth0]")
        net = str(network.get("net", ""))
        canonical = net if net[-1:].isdigit() else net + "0"
        if canonical in seen:
            problems.append(f"LNet network '{net}' is listed twice (tcp and tcp0 are the same network)")
        seen.add(canonical)
    return problems


def lnet_import_config(networks: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The data `lnetctl import` reads (/etc/lnet.conf) for networks given as
    [{net: tcp0, interfaces: [eth0]}, {net: o2ib, interfaces: [ib0, ib1]}]."""
    nets = []
    for network in networks:
        problem = lnet_network_problem(network.get("net", ""))
        if problem:
            raise ValueError(problem)
        interfaces = list(network.get("interfaces") or [])
        if not interfaces:
            raise ValueError(f"LNet network {network.get('net')} lists no interfaces")
        nets.append({"net type": str(network["net"]),
                     "local NI(s)": [{"interfaces": {i: str(name)}} for i, name in enumerate(interfaces)]})
    return {"net": nets}


class FilterModule:
    """clusterdos.cluster storage filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "lnet_nid_problems": lnet_nid_problems,
            "lnet_network_problems": lnet_network_problems,
            "lustre_mount_problems": lustre_mount_problems,
            "lustre_mount_source": lustre_mount_source,
            "lustre_client_packages": lustre_client_packages,
            "lnet_import_config": lnet_import_config,
            "storage_class_problems": storage_class_problems,
        }
