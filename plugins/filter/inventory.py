# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Filters that read the inventory the same way in every role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_addresses
short_description: The cluster address of each host in a list
version_added: 0.1.0
description:
  - For each host name returns C(name) and C(address), taking the address from
    C(clusterdos_node_ip), then C(ansible_host) when it is an IP address, then the
    gathered default IPv4 address. C(address) is C(None) when none is known.
positional: hostvars
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) mapping.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Hosts with no known address
  ansible.builtin.debug:
    msg: "{{ groups['all'] | clusterdos.cluster.node_addresses(hostvars) | selectattr('address', 'none') | list }}"
"""

RETURN = r"""
_value:
  description: One mapping per host, in input order, with keys C(name) and C(address).
  type: list
  elements: dict
"""

import difflib
import functools
import ipaddress
import re
from pathlib import Path
from typing import Any, Mapping

import yaml
from ansible.errors import AnsibleFilterError
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import node_gpus


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def node_address(hostvars: Mapping[str, Any], name: str) -> str | None:
    hv = hostvars.get(name) or {}
    explicit = hv.get("clusterdos_node_ip")
    if explicit:
        return str(explicit)
    if _is_ip(hv.get("ansible_host", "")):
        return str(hv["ansible_host"])
    facts = hv.get("ansible_facts") or {}
    default = facts.get("default_ipv4") or {}
    return str(default["address"]) if default.get("address") else None


def node_addresses(hosts: list[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": h, "address": node_address(hostvars, h)} for h in hosts]


# --------------------------------------------------------------------------- preflight
# The controller-side preflight (playbooks/preflight.yml) checks every host's variables
# against the roles' argument specs before any host is contacted: types (a list must be
# a list, not a string that a template would loop over character by character),
# choices, ranges, values the config file formats cannot hold, and names with one of
# the collection's prefixes that no role declares (a typo is otherwise ignored).

_ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"

# Collection-wide settings (no role owns them; each role reads them as the default of
# its own variable). Same shape as an argument spec option.
_COLLECTION_VARS: dict[str, dict[str, Any]] = {
    "clusterdos_package_proxy": {"type": "str", "url": "proxy"},
    "clusterdos_package_mirror": {"type": "str", "url": "mirror"},
    "clusterdos_package_security_mirror": {"type": "str", "url": "mirror"},
    "clusterdos_file_mirror": {"type": "str", "url": "mirror"},
    "clusterdos_chart_mirror": {"type": "str", "url": "mirror"},
    "clusterdos_image_archives_dir": {"type": "str"},
    "clusterdos_image_archives_url": {"type": "str", "url": "mirror"},
    "clusterdos_kubernetes_repo_mirror": {"type": "str", "url": "mirror"},
    "clusterdos_registry_mirror": {"type": "str"},
    "clusterdos_kubernetes_version": {"type": "str"},
    "clusterdos_time_servers": {"type": "list", "elements": "str"},
    "clusterdos_time_pools": {"type": "list", "elements": "str"},
    "clusterdos_node_ip": {"type": "str"},
    "clusterdos_node_name": {"type": "str"},
    "clusterdos_node_cidr": {"type": "str"},
    "clusterdos_pod_cidr": {"type": "str"},
    "clusterdos_control_plane_endpoint": {"type": "str"},
    "clusterdos_gpus": {"type": "list", "elements": "dict"},
    "clusterdos_hw": {"type": "raw"},
    "clusterdos_lab": {"type": "dict"},
    "clusterdos_reset_confirm": {"type": "bool"},
    "clusterdos_fast_path": {"type": "bool"},
    "clusterdos_upgrade_batch": {"type": "int", "min": 1},
    "clusterdos_kube_control_plane_group": {"type": "str"},
    "clusterdos_kube_node_group": {"type": "str"},
    "clusterdos_gpu_nvidia_group": {"type": "str"},
    "clusterdos_gpu_amd_group": {"type": "str"},
    "clusterdos_rdma_group": {"type": "str"},
    "clusterdos_storage_server_group": {"type": "str"},
    "clusterdos_nfs_client_group": {"type": "str"},
    "clusterdos_lustre_client_group": {"type": "str"},
    "clusterdos_gvisor_group": {"type": "str"},
    "clusterdos_kata_group": {"type": "str"},
    "clusterdos_login_group": {"type": "str"},
    "clusterdos_zookeeper_group": {"type": "str"},
    "clusterdos_clusterd_master_group": {"type": "str"},
    "clusterdos_clusterd_agent_group": {"type": "str"},
    "clusterdos_clusterd_frameworks_group": {"type": "str"},
}
# Variables that are gone, and what replaces them (named in the preflight's message).
_CILIUM_ONE_SET = "Cilium has one set of knobs, the Kubernetes stage's: set "
_GONE: dict[str, str] = {
    "kubernetes_cluster_cilium_chart_version": "the Cilium chart version is the add-on catalog's cilium entry; pin "
                                               "another with addons_catalog_overrides: {cilium: {version: X}}",
    "kubernetes_cluster_cilium_repo_url": "Cilium's chart comes from addons_chart_mirror (clusterdos_chart_mirror), "
                                          "else its catalog entry's repository",
    "kubernetes_cluster_cilium_chart_path": "set clusterdos_chart_mirror (or addons_chart_mirror) to the directory of "
                                            "chart archives",
    "kubernetes_cluster_registry_mirror": "Cilium's images come from addons_image_registry_mirror "
                                          "(clusterdos_registry_mirror)",
    "addons_cilium_kube_proxy_replacement": _CILIUM_ONE_SET + "kubernetes_cluster_cilium_kube_proxy_replacement",
    "addons_cilium_routing_mode": _CILIUM_ONE_SET + "kubernetes_cluster_cilium_routing_mode",
    "addons_cilium_tunnel_protocol": _CILIUM_ONE_SET + "kubernetes_cluster_cilium_values: {tunnelProtocol: geneve}",
    "addons_cilium_native_routing_cidr": _CILIUM_ONE_SET + "kubernetes_cluster_cilium_native_cidr",
    "addons_cilium_hubble": _CILIUM_ONE_SET + "kubernetes_cluster_cilium_hubble",
    "addons_cilium_api_server_host": _CILIUM_ONE_SET + "kubernetes_cluster_endpoint (Cilium gets the cluster's endpoint)",
    "addons_cilium_api_server_port": _CILIUM_ONE_SET + "kubernetes_cluster_endpoint_port (Cilium gets the cluster's endpoint)",
}
# Read by playbooks (host patterns), not by a role.
_PLAYBOOK_VARS: dict[str, dict[str, Any]] = {
    "addons_hosts": {"type": "raw"},
    "addons_kubeseal_hosts": {"type": "raw"},
}
# Slurm keys whose value is a count or a size: a positive whole number (0 allowed where noted).
_SLURM_POSITIVE = {"RealMemory", "CPUs", "Boards", "Sockets", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore",
                   "DefMemPerCPU", "DefMemPerNode", "MaxMemPerCPU", "MaxMemPerNode", "DefMemPerGPU"}
_SLURM_NON_NEGATIVE = {"TmpDisk", "MemSpecLimit", "CoreSpecCount", "Weight", "JobAcctGatherFrequency"}
# Variables whose values are written into Slurm's key=value files.
_SLURM_FILES = ("slurm_config", "slurm_default_config", "slurm_dbd_config", "slurm_dbd_default_config",
                "slurm_cgroup_config", "slurm_cgroup_default_config", "slurm_node_config")
_SLURM_SCALARS = ("slurm_db_password", "slurm_db_user", "slurm_db_name", "slurm_db_host", "slurm_cluster_name")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._:-]*[A-Za-z0-9])?$")
_PROXY = re.compile(r"^https?://[^/\s]+/?$")
_MIRROR = re.compile(r"^(https?|file)://\S+$")


@functools.lru_cache(maxsize=4)
def _known_variables(roles_dir: str = str(_ROLES_DIR)) -> dict[str, dict[str, Any]]:
    """Every variable a role declares (argument specs), the collection-wide and playbook ones."""
    known: dict[str, dict[str, Any]] = {}
    for spec_file in sorted(Path(roles_dir).glob("*/meta/argument_specs.yml")):
        try:
            data = yaml.safe_load(spec_file.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            # The role itself will not load; its variables are left unchecked here
            # rather than all reported as unknown.
            known[spec_file.parent.parent.name + "_*"] = {"type": "raw"}
            continue
        for entry in (data.get("argument_specs") or {}).values():
            for name, option in ((entry or {}).get("options") or {}).items():
                known.setdefault(name, dict(option, role=spec_file.parent.parent.name))
    for name, option in {**_COLLECTION_VARS, **_PLAYBOOK_VARS}.items():
        known.setdefault(name, option)
    return known


def _prefixes(roles_dir: str = str(_ROLES_DIR)) -> tuple[str, ...]:
    return tuple(sorted({p.name + "_" for p in Path(roles_dir).iterdir() if (p / "meta").is_dir()} | {"clusterdos_"}))


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f"'{value}'"
    return text if len(text) <= 80 else text[:77] + "..."


def _type_problem(value: Any, option: Mapping[str, Any]) -> str | None:
    """Why value does not fit the option's type (strict: no string-to-list guessing), else None."""
    kind = option.get("type", "str")
    if kind in ("raw", None):
        return None
    if kind in ("str", "path"):
        if isinstance(value, bool) or isinstance(value, float) or not isinstance(value, (str, int)):
            hint = " (a YAML number like 22.10 loses its trailing 0: quote it)" if isinstance(value, float) else ""
            return f"must be a string{hint}"
        return None
    if kind == "bool":
        if isinstance(value, bool) or (isinstance(value, str) and value.lower() in ("true", "false", "yes", "no")):
            return None
        return "must be true or false"
    if kind == "int":
        if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value))):
            return "must be a whole number"
        return None
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "must be a number"
        return None
    if kind == "dict":
        return None if isinstance(value, Mapping) else "must be a mapping (key: value)"
    if kind == "list":
        if isinstance(value, str):
            return ("must be a YAML list, not a string (a string is read one character at a time): write "
                    f"[{', '.join(repr(v.strip()) for v in value.split(',') if v.strip())}]")
        if not isinstance(value, (list, tuple)):
            return "must be a YAML list"
        elements = option.get("elements")
        if elements and elements != "raw":
            for item in value:
                problem = _type_problem(item, {"type": elements})
                if problem:
                    return f"must be a list whose items {problem.replace('must be', 'are each', 1)} (item {_show(item)})"
        return None
    return None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    return None


def _port_problem(value: Any) -> str | None:
    """A port or a Slurm port range (6817-6818): 1-65535."""
    parts = str(value).split("-", 1) if isinstance(value, str) and re.fullmatch(r"[0-9]+-[0-9]+", value) else [value]
    for part in parts:
        number = _int(part)
        if number is None or not 1 <= number <= 65535:
            return "must be a TCP port, 1-65535"
    return None


def _value_problems(name: str, value: Any, option: Mapping[str, Any]) -> list[str]:
    """Type, choices, range and file-format problems of one variable's value."""
    problem = _type_problem(value, option)
    if problem:
        return [problem]
    out: list[str] = []
    choices = option.get("choices")
    if choices is not None:
        # A list option's choices apply to each of its items (argument spec semantics).
        items = value if option.get("type") == "list" and isinstance(value, (list, tuple)) else [value]
        bad = [v for v in items if v not in choices and str(v) not in [str(c) for c in choices]]
        if bad and option.get("type") == "list":
            out.append(f"each item must be one of {', '.join(str(c) for c in choices)} (not {', '.join(str(v) for v in bad)})")
        elif bad:
            out.append(f"must be one of {', '.join(str(c) for c in choices)}")
    number = _int(value) if option.get("type") == "int" else None
    if name.endswith("_port") and option.get("type") == "int":
        problem = _port_problem(value)
        if problem:
            out.append(problem)
    elif number is not None and number < option.get("min", 0):
        out.append(f"must be {option.get('min', 0)} or more")
    url = option.get("url")
    if url and isinstance(value, str) and value:
        if url == "proxy" and not _PROXY.match(value):
            out.append("must look like http://HOST:PORT")
        elif url == "mirror" and not _MIRROR.match(value):
            out.append("must be an http://, https:// or file:// URL")
    if name in ("base_time_servers", "base_time_pools", "clusterdos_time_servers", "clusterdos_time_pools"):
        bad = [v for v in value if not _HOSTNAME.match(str(v))]
        if bad:
            out.append(f"items must be single host names or addresses, one per item (chrony.conf gets one line each); bad: {bad}")
    if name in _SLURM_FILES and isinstance(value, Mapping):
        for key, item in value.items():
            if key.endswith("Port") or key == "DbdPort":
                problem = _port_problem(item)
                if problem:
                    out.append(f"{key}={_show(item)} {problem}")
            elif key in _SLURM_POSITIVE or key in _SLURM_NON_NEGATIVE:
                number = _int(item)
                low = 1 if key in _SLURM_POSITIVE else 0
                if number is None or number < low:
                    out.append(f"{key}={_show(item)} must be a whole number, {low} or more")
            text = item if isinstance(item, str) else ""
            if re.search(r"[\s#\"']", text):
                out.append(f"{key}={_show(item)}: Slurm's config files end a value at a space and read '#' as a comment; "
                           "use a value without spaces, '#' or quotes")
    if name in _SLURM_SCALARS and isinstance(value, str) and re.search(r"[\s#\"'\\]", value):
        out.append("is written into slurmdbd.conf, where a space ends the value and '#' starts a comment "
                   "(slurmdbd then cannot log in): choose one without spaces, '#', quotes or backslashes")
    return out


def _explicit(hv: Mapping[str, Any], *names: str) -> bool:
    return any(n in hv for n in names)


def _evaluated(hv: Mapping[str, Any], name: str) -> Any:
    """hv[name], or None when unset or when it cannot be evaluated (reported per variable)."""
    if name not in hv:
        return None
    try:
        value = hv[name]
        str(value)  # an undefined marker raises only when used
        return value
    except Exception:  # noqa: BLE001 - the variable's own check reports it
        return None


def _host_problems(hv: Mapping[str, Any], known: Mapping[str, Mapping[str, Any]], prefixes: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(variable, value shown, problem) for one host's variables."""
    out: list[tuple[str, str, str]] = []
    for name in list(hv.keys()):
        if not isinstance(name, str) or not name.startswith(prefixes):
            continue
        option = known.get(name)
        if option is None and any(name.startswith(k[:-1]) for k in known if k.endswith("_*")):
            continue
        if option is None and name in _GONE:
            out.append((name, "", f"is gone: {_GONE[name]}"))
            continue
        if option is None:
            close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
            fix = f"did you mean {close[0]}?" if close else "no role of clusterdos.cluster reads it (see docs/inventory.md)"
            out.append((name, "", f"is not a variable of any role ({fix})"))
            continue
        # A template that fails (an undefined name in it) may raise here, or give back an
        # undefined marker that raises only when used: both are reported, never raised.
        try:
            value = hv[name]
            found = [(name, _show(value) if not option.get("no_log") else "(hidden)", problem)
                     for problem in _value_problems(name, value, option)]
        except Exception as exc:  # noqa: BLE001 - an undefined reference is reported, not raised
            out.append((name, "", f"cannot be evaluated: {str(exc).splitlines()[0]}"))
            continue
        out.extend(found)
    # An explicit empty time-server list with no pools on a site that fetches packages
    # through a proxy or mirror (no direct Internet): chrony would fall back to the public
    # pool.ntp.org, which such hosts cannot reach, and time would silently never sync.
    sync = _evaluated(hv, "base_time_sync_enabled")
    sync = True if sync is None else sync
    sources = ("clusterdos_package_proxy", "base_package_proxy", "clusterdos_package_mirror", "base_package_mirror")
    offline = any(isinstance(v, str) and v for v in (_evaluated(hv, n) for n in sources))
    if offline and str(sync).lower() in ("true", "yes") and _explicit(hv, "clusterdos_time_servers", "base_time_servers") \
            and not _explicit(hv, "clusterdos_time_pools", "base_time_pools"):
        servers = _evaluated(hv, "base_time_servers") if "base_time_servers" in hv else _evaluated(hv, "clusterdos_time_servers")
        if isinstance(servers, (list, tuple)) and len(servers) == 0:
            out.append(("clusterdos_time_servers", "[]", "is empty and no pool is set, so chrony would fall back to the public "
                        "pool.ntp.org, which hosts behind a package proxy/mirror cannot reach: name at least one NTP "
                        "server, set clusterdos_time_pools, or set base_time_sync_enabled: false"))
    return out


def inventory_errors(hostvars: Mapping[str, Any], hosts: list[str]) -> list[str]:
    """Problems with the hosts' variables, one message per (variable, problem), naming the hosts."""
    known = _known_variables()
    prefixes = _prefixes()
    found: dict[tuple[str, str, str], list[str]] = {}
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        for key in _host_problems(hv, known, prefixes):
            found.setdefault(key, []).append(host)
    messages = []
    for (name, shown, problem), where in found.items():
        on = ", ".join(where[:5]) + (f" and {len(where) - 5} more" if len(where) > 5 else "")
        value = f" = {shown}" if shown else ""
        messages.append(f"{name}{value} (on {on}): {problem}.")
    return messages


def variable_errors(values: Mapping[str, Any]) -> list[str]:
    """Problems of effective values ({variable: value}) as a role is about to use them."""
    known = _known_variables()
    messages = []
    for name, value in values.items():
        option = known.get(name, {"type": "raw"})
        shown = "(hidden)" if option.get("no_log") else _show(value)
        messages.extend(f"{name} = {shown}: {problem}." for problem in _value_problems(name, value, option))
    return messages


# --------------------------------------------------------------------------- duplicate keys
class _DuplicateKeyLoader(yaml.SafeLoader):
    """A YAML loader that records keys given twice in one mapping (YAML says last one wins)."""

    duplicates: list[tuple[str, int, int]]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            try:
                key = self.construct_object(key_node, deep=True)
                hash(key)
            except (TypeError, yaml.YAMLError):
                continue
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append((str(key), seen[key], line))
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _any_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_DuplicateKeyLoader.add_multi_constructor("!", _any_tag)


def _yaml_files(source: str) -> list[Path]:
    path = Path(source)
    files: list[Path] = []
    if path.is_file() and path.suffix in (".yml", ".yaml"):
        files.append(path)
        base = path.parent
    elif path.is_dir():
        files.extend(p for p in sorted(path.glob("*")) if p.is_file() and p.suffix in (".yml", ".yaml"))
        base = path
    else:
        return files
    for sub in ("group_vars", "host_vars"):
        files.extend(p for p in sorted((base / sub).rglob("*")) if p.is_file() and p.suffix in (".yml", ".yaml", ""))
    return files


def duplicate_key_errors(sources: list[str] | str) -> list[str]:
    """Keys given twice in one mapping of the inventory's YAML files (inventory, group_vars, host_vars)."""
    messages = []
    for source in [sources] if isinstance(sources, str) else sources or []:
        for path in _yaml_files(str(source)):
            loader = _DuplicateKeyLoader(path.read_text(encoding="utf-8", errors="replace"))
            loader.duplicates = []
            try:
                loader.get_single_data()
            except yaml.YAMLError:
                continue  # Ansible itself reports YAML syntax errors
            finally:
                loader.dispose()
            for key, first, again in loader.duplicates:
                messages.append(f"{path}:{again}: key '{key}' is given twice in one mapping (first on line {first}); "
                                "YAML keeps only the last one, so the first is silently lost. Remove or rename one.")
    return messages


# Set on localhost by playbooks/preflight.yml's last play once every inventory check passed.
PREFLIGHT_PASSED = "__clusterdos_preflight_passed"
# Set on localhost by playbooks/preflight_hosts.yml when every host's checks passed.
HOST_CHECKS_PASSED = "__clusterdos_host_checks_passed"
_PREFLIGHT_MARKERS = {"inventory": PREFLIGHT_PASSED, "hosts": HOST_CHECKS_PASSED}
# A host pattern that matches no host, without the warning an unknown name gives.
NO_HOSTS = "all:!all"


def preflight_pending(pattern: str, hostvars: Mapping[str, Any], checks: str = "inventory") -> str:
    """PATTERN while the CHECKS have not passed in this run, else a pattern that matches no
    host. CHECKS "inventory" (the default): the inventory checks of playbooks/preflight.yml,
    the `hosts:` of every preflight play; each stage playbook imports the preflight so that
    it is checked when run alone, and within site.yml the later imports then cost a skipped
    play header each instead of their tasks. CHECKS "hosts": the host checks of
    playbooks/preflight_hosts.yml, the `hosts:` of a stage's own host-check play (a subset
    of them, run when the stage runs alone). HOSTVARS is empty while the run's first play
    is being templated (pass `hostvars | default({})`)."""
    return NO_HOSTS if preflight_passed(hostvars, checks) else pattern


def preflight_passed(hostvars: Mapping[str, Any], checks: str = "inventory") -> bool:
    """Whether the CHECKS ("inventory" or "hosts", as for preflight_pending) passed in this
    run: the marker the preflight sets on localhost. For a role's own copy of a check the
    preflight already made (`when: not (hostvars | clusterdos.cluster.preflight_passed)`)."""
    if checks not in _PREFLIGHT_MARKERS:
        raise AnsibleFilterError(f"preflight_pending, preflight_passed: checks must be one of {sorted(_PREFLIGHT_MARKERS)}, got {checks!r}")
    local = hostvars.get("localhost") if hasattr(hostvars, "get") else None
    return bool(local.get(_PREFLIGHT_MARKERS[checks], False)) if local is not None else False


class FilterModule:
    """clusterdos.cluster inventory filters."""

    def filters(self) -> dict[str, Any]:
        return {"node_addresses": node_addresses, "inventory_errors": inventory_errors, "node_gpus": node_gpus,
                "duplicate_key_errors": duplicate_key_errors, "variable_errors": variable_errors,
                "preflight_pending": preflight_pending, "preflight_passed": preflight_passed}
