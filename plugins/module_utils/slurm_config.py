# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Slurm configuration as data: hostlists, node and partition records, gres.conf lines,
key=value rendering, and the inventory checks the slurm role runs before any change.

Everything here is pure (no I/O) so that the filter plugin stays thin and the logic is
unit-tested directly.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping

from ansible_collections.clusterdos.cluster.plugins.module_utils import host_values
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import node_gpus

# Slurm release series this collection knows how to configure.
KNOWN_SERIES = ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05")

# A host's GPUs, as [{vendor, type, count}]: slurm_node_gpus when the inventory sets it
# (what Slurm should advertise, overriding discovery), else the discovered
# ansible_facts.clusterdos_hw.gpus (the source of truth once the host was read; the
# inventory's clusterdos_gpus only names the type and is checked against it), else the
# declared clusterdos_gpus (only before discovery: the controller-side preflight).
OVERRIDE_KEY = "slurm_node_gpus"
# GPU vendors and the gres.conf AutoDetect mechanism for each.
AUTODETECT = {"nvidia": "nvml", "amd": "rsmi"}

_HOSTNAME = re.compile(r"^(?P<prefix>.*?)(?P<num>\d+)(?P<suffix>[^\d]*)$")
_RANGE = re.compile(r"^(?P<prefix>[^\[]*)\[(?P<body>[^\]]+)\](?P<suffix>.*)$")


# --------------------------------------------------------------------------- hostlists
def compress_hostlist(names: Iterable[str]) -> str:
    """Slurm's compressed hostlist: ["c1", "c2", "c3", "g07"] -> "c[1-3],g07".

    Names are grouped by (prefix, suffix, digit width when zero-padded); runs of
    consecutive numbers become ranges. Order of first appearance of each group is kept.
    """
    unique = list(dict.fromkeys(names))  # order kept
    # Zero-padded widths per (prefix, suffix): gpu01 pads to 2, and gpu10 fits that width.
    padded: dict[tuple[str, str], int] = {}
    for name in unique:
        m = _HOSTNAME.match(name)
        if m and m.group("num").startswith("0") and len(m.group("num")) > 1:
            padded.setdefault((m.group("prefix"), m.group("suffix")), len(m.group("num")))
    groups: dict[tuple[str, str, int], list[int]] = {}
    order: list[tuple[str, str, int] | str] = []
    for name in unique:
        m = _HOSTNAME.match(name)
        if not m:
            order.append(name)
            continue
        num = m.group("num")
        pad = padded.get((m.group("prefix"), m.group("suffix")), 0)
        if num.startswith("0") and len(num) > 1:
            width = len(num)
        else:
            width = pad if pad and len(num) >= pad else 0
        key = (m.group("prefix"), m.group("suffix"), width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(num))
    parts: list[str] = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, suffix, width = key
        nums = sorted(set(groups[key]))
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}{suffix}")
            continue
        ranges: list[str] = []
        start = prev = nums[0]
        for n in nums[1:] + [None]:  # type: ignore[list-item]
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}[{','.join(ranges)}]{suffix}")
    return ",".join(parts)


def _split_top(expr: str) -> list[str]:
    """Split on commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise ValueError(f"unbalanced brackets in hostlist {expr!r}")
    out.append(cur)
    return [p for p in out if p]


def expand_hostlist(expr: str) -> list[str]:
    """Inverse of compress_hostlist: "c[1-3],g07" -> ["c1", "c2", "c3", "g07"]."""
    names: list[str] = []
    for part in _split_top(expr):
        m = _RANGE.match(part)
        if not m:
            names.append(part)
            continue
        for item in m.group("body").split(","):
            lo, _sep, hi = item.partition("-")
            hi = hi or lo
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {item!r} in hostlist {expr!r}")
            width = len(lo) if lo.startswith("0") else 0
            names.extend(f"{m.group('prefix')}{n:0{width}d}{m.group('suffix')}" for n in range(int(lo), int(hi) + 1))
    return names


# --------------------------------------------------------------------------- rendering
def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "YES" if value else "NO"
    if isinstance(value, (list, tuple)):
        return ",".join(_value(v) for v in value)
    if isinstance(value, Mapping):
        return ",".join(f"{k}={_value(v)}" for k, v in value.items())
    return str(value)


def conf_line(record: Mapping[str, Any]) -> str:
    """One slurm.conf/gres.conf line: {"NodeName": "c1", "CPUs": 2} -> "NodeName=c1 CPUs=2".

    Keys whose value is None or an empty list/string are left out; the first key keeps
    its place (Slurm reads it as the line's type).
    """
    parts = []
    for key, value in record.items():
        if value is None or (isinstance(value, (str, list, tuple, dict)) and len(value) == 0):
            continue
        text = _value(value)
        if "\n" in text:
            raise ValueError(f"{key}: value must be a single line, got {text!r}")
        parts.append(f"{key}={text}")
    return " ".join(parts)


def conf_lines(config: Mapping[str, Any]) -> list[str]:
    """A flat config mapping as sorted Key=Value lines (None and empty values dropped)."""
    return [conf_line({k: v}) for k, v in sorted(config.items()) if conf_line({k: v})]


def mariadb_lines(config: Mapping[str, Any]) -> list[str]:
    """MariaDB option lines (the slurmdbd host's drop-in) as sorted key=value lines: booleans as
    ON/OFF, since MariaDB reads neither YES nor NO as one (it sets the option OFF with a warning)."""
    return conf_lines({k: ("ON" if v else "OFF") if isinstance(v, bool) else v for k, v in config.items()})


def controller_lines(controllers: list[Mapping[str, Any]]) -> list[str]:
    """SlurmctldHost lines, primary first: [{name, address}] -> ["SlurmctldHost=ctl1(10.0.0.1)"]."""
    return [f"SlurmctldHost={c['name']}({c['address']})" if c.get("address") else f"SlurmctldHost={c['name']}"
            for c in controllers]


# logrotate directives the role writes itself in each daemon's file (logrotate_lines).
LOG_ROTATION_OWN = ("create", "postrotate", "prerotate", "firstaction", "lastaction", "endscript", "sharedscripts")


def log_rotation_errors(directives: Any) -> list[str]:
    """What is wrong with slurm_log_rotation (logrotate directives as data), one message each."""
    if not isinstance(directives, Mapping):
        return [f"slurm_log_rotation must be a mapping of logrotate directives (e.g. {{size: 50M, rotate: 12, "
                f"compress: true}}), got {json.dumps(directives, default=str)}."]
    errors = []
    for key, value in directives.items():
        if not isinstance(key, str) or not re.fullmatch(r"[a-z]+", key):
            errors.append(f"slurm_log_rotation has the key {key!r}: a key is one logrotate directive, lowercase "
                          "letters only (size, rotate, compress, ...).")
        elif key in LOG_ROTATION_OWN:
            errors.append(f"slurm_log_rotation sets {key!r}, which the role writes itself (the log's owner in "
                          "'create', a postrotate that sends the daemon SIGUSR2 to reopen its log): remove it.")
        elif isinstance(value, (Mapping, list, tuple)) or "\n" in str(value):
            errors.append(f"slurm_log_rotation's {key} is {json.dumps(value, default=str)}: give true (the word "
                          "alone), false or null (left out), or one line written after the word.")
    return errors


def logrotate_lines(log_file: str, program: str, owner: str, directives: Mapping[str, Any]) -> list[str]:
    """A daemon's logrotate file as lines: its log file, the directives (true: the word alone;
    false or None: left out), a new log owned by the daemon's user and SIGUSR2 after rotating,
    which makes a Slurm daemon reopen its log file."""
    errors = log_rotation_errors(directives)
    if errors:
        raise ValueError(" ".join(errors))
    lines = [f"{log_file} {{"]
    for key, value in directives.items():
        if value is True:
            lines.append(f"    {key}")
        elif value is not None and value is not False:
            lines.append(f"    {key} {value}")
    lines += [f"    create 0600 {owner} {owner}", "    postrotate",
              f"        systemctl kill --kill-whom=main --signal=SIGUSR2 {program}.service 2> /dev/null || true",
              "    endscript", "}"]
    return lines


# --------------------------------------------------------------------------- nodes
def host_gpus(hv: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The GPUs of a host, as [{vendor, type, count}] (empty when none); see OVERRIDE_KEY."""
    if hv.get(OVERRIDE_KEY):
        return [dict(g) for g in hv[OVERRIDE_KEY]]
    return node_gpus(hv)


def _gres_of(gpus: list[dict[str, Any]], extra: list[Any]) -> list[str]:
    gres = []
    for gpu in gpus:
        kind = gpu.get("type")
        gres.append(f"gpu:{kind}:{int(gpu.get('count', 1))}" if kind else f"gpu:{int(gpu.get('count', 1))}")
    for item in extra:
        if isinstance(item, Mapping):
            kind = item.get("type")
            gres.append(":".join([str(item["name"])] + ([str(kind)] if kind else []) + [str(int(item.get("count", 1)))]))
        else:
            gres.append(str(item))
    return gres


def node_record(name: str, hv: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The slurm.conf NodeName record of one host, from its facts and slurm_node_* vars.

    defaults holds the role-level values for slurm_node_features, slurm_node_weight,
    slurm_node_gres and slurm_node_config, used where the host does not set its own.
    """
    defaults = defaults or {}
    facts = hv.get("ansible_facts") or {}

    def var(key: str, fallback: Any) -> Any:
        return hv.get(key, defaults.get(key, fallback))

    sockets = int(facts.get("processor_count") or 1)
    cores = int(facts.get("processor_cores") or 1)
    threads = int(facts.get("processor_threads_per_core") or 1)
    cpus = int(facts.get("processor_vcpus") or sockets * cores * threads)
    record: dict[str, Any] = {
        "NodeName": name,
        "CPUs": cpus,
        "Sockets": sockets,
        "CoresPerSocket": cores,
        "ThreadsPerCore": threads,
        "RealMemory": int(facts["memtotal_mb"]) if facts.get("memtotal_mb") else None,
        "Gres": _gres_of(host_gpus(hv), list(var("slurm_node_gres", []))),
        "Feature": list(var("slurm_node_features", [])),
        "Weight": var("slurm_node_weight", None),
    }
    record.update(var("slurm_node_config", {}) or {})
    record["State"] = record.get("State") or "UNKNOWN"
    return record


# The NodeName keys a host's slurm_node_config may set above what the host has: slurmd
# registers what it finds, and slurmctld marks a node that reports less than its slurm.conf
# line INVAL ("Low RealMemory", "Low CPUs", "Low socket*core*thread count"), out of every
# partition (on the lab: both compute nodes, after a run that wrote slurm.conf and then
# failed its wait for them).
def node_hardware_errors(name: str, hv: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> list[str]:
    """Where NAME's slurm.conf record (node_record) asks for more memory or CPUs than its facts
    show, one sentence each with the fix. Nothing without the facts (memtotal_mb)."""
    facts = hv.get("ansible_facts") or {}
    if not facts.get("memtotal_mb"):
        return []
    found = node_record(name, {**hv, "slurm_node_config": {}}, {**(defaults or {}), "slurm_node_config": {}})
    record = node_record(name, hv, defaults)
    errors = []

    def number(value: Any) -> int | None:
        try:
            return int(value)
        except (TypeError, ValueError):
            return None

    checks = (("RealMemory", "MB of memory", "Low RealMemory"), ("CPUs", "CPUs", "Low CPUs"))
    for key, unit, reason in checks:
        want, have = number(record.get(key)), number(found.get(key))
        if want is not None and have is not None and want > have:
            errors.append(f"slurm_node_config sets {key}={record[key]}, but the host has {have} {unit}: slurmd would "
                          f"register with less and slurmctld would mark the node INVAL ({reason}), out of every "
                          f"partition. Lower it, or leave {key} out (read from the host).")
    layout = [number(record.get(k)) for k in ("Sockets", "CoresPerSocket", "ThreadsPerCore")]
    have_cpus = number(found.get("CPUs"))
    if None not in layout and have_cpus is not None and layout[0] * layout[1] * layout[2] > have_cpus:
        errors.append(f"slurm_node_config gives Sockets={record['Sockets']}, CoresPerSocket={record['CoresPerSocket']} "
                      f"and ThreadsPerCore={record['ThreadsPerCore']}, {layout[0] * layout[1] * layout[2]} CPUs, but the "
                      f"host has {have_cpus}: slurmctld would mark the node INVAL (Low socket*core*thread count). "
                      "Lower them, or leave them out (read from the host).")
    return errors


def node_records(hosts: Iterable[str], hostvars: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return [node_record(h, hostvars.get(h) or {}, defaults) for h in hosts]


def grouped_node_lines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge nodes with identical hardware into one record with a compressed NodeName."""
    merged: dict[tuple, list[str]] = {}
    shapes: dict[tuple, dict[str, Any]] = {}
    for rec in records:
        shape = {k: v for k, v in rec.items() if k != "NodeName"}
        key = tuple(sorted((k, _value(v)) for k, v in shape.items()))
        merged.setdefault(key, []).append(rec["NodeName"])
        shapes.setdefault(key, shape)
    return [dict({"NodeName": compress_hostlist(names)}, **shapes[key]) for key, names in merged.items()]


def gres_records(hosts: Iterable[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    """gres.conf records: AutoDetect for NVIDIA (nvml) and AMD (rsmi) hosts, explicit
    Name/Type/Count (and File when given) for other GPUs. Hosts are merged by hostlist."""
    by_line: dict[tuple, list[str]] = {}
    for host in hosts:
        for gpu in host_gpus(hostvars.get(host) or {}):
            vendor = str(gpu.get("vendor", "")).lower()
            if vendor in AUTODETECT:
                rec = (("AutoDetect", AUTODETECT[vendor]),)
            else:
                rec = (("Name", "gpu"), ("Type", gpu.get("type")), ("Count", int(gpu.get("count", 1))), ("File", gpu.get("file")))
            by_line.setdefault(rec, []).append(host)
    return [dict({"NodeName": compress_hostlist(names)}, **dict(rec)) for rec, names in by_line.items()]


# --------------------------------------------------------------------------- partitions
def partition_nodes(partition: Mapping[str, Any], groups: Mapping[str, list[str]], compute: list[str],
                    hostvars: Mapping[str, Any]) -> list[str]:
    """Members of a partition: its hosts plus members of its groups, limited to the
    compute nodes; `gpus: true` keeps only hosts that declare GPUs. Compute order kept."""
    wanted = set(partition.get("hosts") or [])
    for group in partition.get("groups") or []:
        wanted.update(groups.get(group) or [])
    nodes = [h for h in compute if h in wanted]
    if partition.get("gpus"):
        nodes = [h for h in nodes if host_gpus(hostvars.get(h) or {})]
    return nodes


def partition_records(partitions: list[Mapping[str, Any]], groups: Mapping[str, list[str]], compute: list[str],
                      hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    """PartitionName records. Optional partitions that end up empty are dropped."""
    out = []
    for part in partitions:
        nodes = partition_nodes(part, groups, compute, hostvars)
        if not nodes and part.get("optional"):
            continue
        rec: dict[str, Any] = {"PartitionName": part["name"], "Nodes": compress_hostlist(nodes)}
        if part.get("default"):
            rec["Default"] = True
        rec.update(part.get("config") or {})
        rec.setdefault("State", "UP")
        out.append(rec)
    return out


# --------------------------------------------------------------------------- checks
def version_series(version: str) -> str:
    """ "22.05.8" -> "22.05"; raises ValueError when it is not a Slurm version."""
    m = re.match(r"^(\d{2})\.(\d{2})(\.\d+)?(-\S+)?$", str(version))
    if not m:
        raise ValueError(f"{version!r} is not a Slurm version (YY.MM or YY.MM.P)")
    return f"{m.group(1)}.{m.group(2)}"


# Variables that shape the cluster's files (slurm.conf, cgroup.conf, gres.conf): one value
# for every Slurm host, since the role builds those files once per play (tasks/config.yml).
CLUSTER_WIDE_KEYS = ("slurm_config", "slurm_default_config", "slurm_cgroup_config", "slurm_cgroup_default_config",
                     "slurm_cluster_name", "slurm_state_save_location", "slurm_accounting_enabled",
                     "slurm_accounting_enforce", "slurm_configless", "slurm_partitions", "slurm_version",
                     "slurm_log_rotation_enabled", "slurm_log_rotation")


def cluster_wide_errors(values: Mapping[str, Mapping[str, Any]], keys: Iterable[str] = CLUSTER_WIDE_KEYS) -> list[str]:
    """One message per cluster-wide variable whose value differs between the Slurm hosts.

    values: per host, the variables it sets (its inventory, group_vars, host_vars and extra
    vars); a host that does not set one uses the role's default, shown as such.
    """
    errors: list[str] = []
    for key, groups in host_values.differing(keys, sorted(values), values).items():
        parts = []
        for value, hosts in groups:
            shown = "the role's default" if value is host_values.UNSET else json.dumps(value, sort_keys=True, default=str)
            parts.append(f"{', '.join(hosts)}: {shown if len(shown) <= 120 else shown[:117] + '...'}")
        what = ("The daemons' log rotation is one policy for the cluster" if key.startswith("slurm_log_rotation")
                else "slurm.conf, cgroup.conf and gres.conf are the same on every host")
        errors.append(f"{key} differs between the Slurm hosts ({'; '.join(parts)}). {what}: set {key} "
                      "once for all Slurm hosts (e.g. in group_vars/all), not per host or per group.")
    return errors


def inventory_errors(*, groups: Mapping[str, list[str]], hostvars: Mapping[str, Any], controller_group: str,
                     compute_group: str, partitions: list[Mapping[str, Any]], version: str,
                     munge_key: str | None = None, defaults: Mapping[str, Any] | None = None) -> list[str]:
    """Everything wrong with a Slurm inventory, each message saying what to fix."""
    errors: list[str] = []
    defaults = defaults or {}
    controllers = list(groups.get(controller_group) or [])
    compute = list(groups.get(compute_group) or [])
    if not 1 <= len(controllers) <= 2:
        errors.append(f"Group '{controller_group}' has {len(controllers)} hosts ({', '.join(controllers) or 'none'}); "
                      "Slurm needs one controller, or two for a backup controller: put 1 or 2 hosts in it.")
    if not compute:
        errors.append(f"Group '{compute_group}' has no hosts: add at least one compute node.")

    try:
        series = version_series(version)
        if series not in KNOWN_SERIES:
            errors.append(f"slurm_version {version} is not a known Slurm release; use one of {', '.join(KNOWN_SERIES)}.")
    except ValueError as exc:
        errors.append(f"slurm_version: {exc}; use one of {', '.join(KNOWN_SERIES)}.")

    if munge_key is not None and munge_key != "" and len(str(munge_key).encode()) < 32:
        errors.append(f"munge_key is {len(str(munge_key).encode())} bytes; munge needs at least 32 "
                      "(generate one with: dd if=/dev/urandom bs=1 count=1024 | base64 -w0).")

    names = [p.get("name") for p in partitions]
    for dup in sorted({n for n in names if names.count(n) > 1 and n}):
        errors.append(f"Partition '{dup}' is defined more than once in slurm_partitions: keep one entry.")
    for part in partitions:
        if not part.get("name") or not re.match(r"^[A-Za-z0-9_.-]+$", str(part.get("name"))):
            errors.append(f"Every entry of slurm_partitions needs a name of letters, digits, '_', '.', '-' (got {part.get('name')!r}).")
    defaults_set = [p.get("name") for p in partitions if p.get("default")
                    and (partition_nodes(p, groups, compute, hostvars) or not p.get("optional"))]
    if len(defaults_set) > 1:
        errors.append(f"Partitions {', '.join(map(str, defaults_set))} are all marked default: mark only one default: true.")

    members: dict[str, list[Mapping[str, Any]]] = {}
    for part in partitions:
        missing_groups = [g for g in part.get("groups") or [] if g not in groups]
        nodes = partition_nodes(part, groups, compute, hostvars)
        if not nodes and not part.get("optional"):
            where = ", ".join([f"groups {part.get('groups')}"] * bool(part.get("groups")) + [f"hosts {part.get('hosts')}"] * bool(part.get("hosts")))
            hint = f" (no such inventory group: {', '.join(missing_groups)})" if missing_groups else ""
            errors.append(f"Partition '{part.get('name')}' has no nodes{hint}: its {where or 'groups and hosts are empty'} "
                          f"select no host of '{compute_group}'"
                          f"{' that declares GPUs' if part.get('gpus') else ''}. Add nodes, or set optional: true.")
        stray = [h for h in part.get("hosts") or [] if h not in compute]
        if stray:
            errors.append(f"Partition '{part.get('name')}' lists {', '.join(stray)}, not in group '{compute_group}': "
                          "add them to that group or remove them from the partition.")
        for node in nodes:
            members.setdefault(node, []).append(part)
    for node, parts in members.items():
        if len(parts) > 1 and any(p.get("exclusive") for p in parts):
            errors.append(f"Node {node} is in partitions {', '.join(str(p.get('name')) for p in parts)}, but "
                          f"{', '.join(str(p.get('name')) for p in parts if p.get('exclusive'))} is exclusive "
                          "(its nodes belong to no other partition): take the node out of one of them.")

    for host in compute:
        hv = hostvars.get(host) or {}
        gres = list(hv.get("slurm_node_gres", defaults.get("slurm_node_gres", [])) or [])
        gpu_gres = [g for g in gres if (g.get("name") if isinstance(g, Mapping) else str(g).split(":", maxsplit=1)[0]) == "gpu"]
        if gpu_gres and not host_gpus(hv):
            errors.append(f"Host {host} declares GPU GRES ({gpu_gres}) but has no GPUs: declare them in "
                          "clusterdos_gpus as [{vendor, type, count}] (checked against the GPUs found) and drop the gpu "
                          "entry from slurm_node_gres (GPU GRES is derived from the GPUs found).")
        for gpu in host_gpus(hv):
            if not isinstance(gpu.get("count", 1), int) or int(gpu.get("count", 1)) < 1:
                errors.append(f"Host {host}: every GPU entry needs a count of at least 1 (got {gpu.get('count')!r}).")
    return errors


# sinfo's %T: a base state, then flag characters ("*" not responding, "~" powered off, "#"
# powering up, "!" pending power down, "%" powering down, "$" maintenance reservation, "@"
# pending reboot, "^" rebooting, "-" planned). These base states mean slurmd is not
# registered and answering (a prefix: "fail" covers "failing", "inval" a node that registered
# with a configuration slurmctld rejects).
NOT_UP_STATES = ("down", "unknown", "future", "fail", "inval")
SINFO_STATE_FLAGS = "*~#!%$@^-"


def up_nodes(lines: Iterable[str]) -> list[str]:
    """The nodes `sinfo --noheader --Node --format '%N %T'` LINES report up: slurmd registered
    and answering. A node an administrator drained ("drained", "draining") or reserved is up:
    its slurmd runs, it only takes no new jobs, which a converge must not change."""
    up = []
    for line in lines:
        fields = str(line).split()
        if len(fields) < 2:
            continue
        state = fields[1].lower()
        if "*" not in state and not state.rstrip(SINFO_STATE_FLAGS).startswith(NOT_UP_STATES) and fields[0] not in up:
            up.append(fields[0])
    return up


# `squeue --noheader --all --format=%P|%N|%n` over the unfinished states: one line per job,
# the partitions it was submitted to (commas), the nodes it holds (%N, empty while pending) and
# the nodes it asked for by name (%n, sbatch -w). The preflight reads it on the primary controller.
JOB_FIELDS_SEPARATOR = "|"


def _job_nodes(expr: str) -> list[str]:
    try:
        return expand_hostlist(expr.strip())
    except ValueError:
        return [expr.strip()]


def jobs_at_risk(lines: Iterable[str], partitions: Iterable[str], nodes: Iterable[str], *,
                 compute_group: str = "slurm_compute") -> list[str]:
    """What the next slurm.conf would take from unfinished jobs (LINES: the squeue read above),
    one sentence each, with its fix: partitions it no longer has (PARTITIONS: the PartitionName
    of every partition it will have), and compute nodes it no longer lists (NODES: the
    compute group's hosts). On a lab, both ended a running job NODE_FAIL (a removed node's job
    went on running there, outside Slurm) and took pending ones off the queue. A partition
    that keeps its name and loses nodes needs no check: its running jobs keep their nodes."""
    keep_partitions, keep_nodes = set(partitions), set(nodes)
    rows = []
    for line in lines:
        fields = str(line).strip().split(JOB_FIELDS_SEPARATOR)
        if not fields or not fields[0]:
            continue
        job_nodes = [n for expr in fields[1:3] for n in _job_nodes(expr)]
        rows.append(([p for p in fields[0].split(",") if p], job_nodes))
    problems = []
    dropped = sorted({p for parts, _n in rows for p in parts} - keep_partitions)
    if dropped:
        count = sum(1 for parts, _n in rows if set(parts) & set(dropped))
        problems.append(
            f"slurmctld has {count} job(s) not finished in partition(s) {', '.join(dropped)}, which slurm_partitions no "
            "longer gives (removed, or an optional partition left with no node): the new slurm.conf would drop the "
            "partition, its running jobs would end (NODE_FAIL) and its pending ones leave the queue. Let them finish or "
            "cancel them first (scontrol update PartitionName=NAME State=DRAIN takes no new ones), or keep the "
            "partition in slurm_partitions until then.")
    gone = sorted({n for _p, job_nodes in rows for n in job_nodes} - keep_nodes)
    if gone:
        count = sum(1 for _p, job_nodes in rows if set(job_nodes) & set(gone))
        problems.append(
            f"slurmctld has {count} job(s) running on or asking for compute node(s) {', '.join(gone)}, which the "
            f"{compute_group} group no longer holds: the new slurm.conf would drop the node, its running jobs would "
            "end (NODE_FAIL, their processes left running on the node outside Slurm) and pending ones asking for it "
            "leave the queue. Drain the node first (scontrol update NodeName=NAME State=DRAIN Reason=...) and let its "
            f"jobs finish or cancel them, or keep it in {compute_group} until then.")
    return problems


# File system types (as `stat -f -c %T` names them) that are one host's own: a state location
# on one of these is not shared between controllers. Types not listed (nfs, lustre, gpfs, ceph,
# cifs, and those coreutils prints as UNKNOWN) are taken as shared.
LOCAL_FILE_SYSTEMS = frozenset({"ext2/ext3", "xfs", "btrfs", "tmpfs", "overlayfs", "zfs", "f2fs", "vfat", "msdos",
                                "ramfs", "reiserfs", "jfs", "squashfs", "isofs", "devtmpfs"})


def unshared_state_errors(reads: Mapping[str, Iterable[str]], *, controllers: Iterable[str], state_dir: str,
                          controller_group: str = "slurm_controller") -> list[str]:
    """With a backup controller, where slurm_state_save_location is on a host's own file system
    (READS: the host checks' lines, state_fs= on each controller). slurmctld on the backup takes
    over from the state it finds there: on its own disk, none of the primary's jobs (or an older
    copy of them). Nothing is said with one controller, or for a controller not read."""
    controllers = list(controllers)
    if len(controllers) < 2:
        return []
    local = []
    for host in controllers:
        fs = [str(line).strip()[9:] for line in (reads.get(host) or []) if str(line).strip().startswith("state_fs=")]
        if fs and fs[0] in LOCAL_FILE_SYSTEMS:
            local.append(f"{host} ({fs[0]})")
    if not local:
        return []
    return [f"{controller_group} has a backup controller ({', '.join(controllers[1:])}), but slurm_state_save_location "
            f"{state_dir} is on a local file system on {', '.join(local)}: the controllers would not share slurmctld's "
            f"state, and a backup taking over would start with none of the primary's jobs (or an older copy). Put "
            f"slurm_state_save_location on storage every controller mounts (NFS or another network file system), with "
            f"the state copied there (docs/slurm.md, \"Moving slurmctld's state\"), or keep one controller."]


def taken_port_errors(reads: Mapping[str, Iterable[str]]) -> list[str]:
    """A Slurm daemon's port that another program listens on (READS: the host checks' lines,
    port_taken=KEY PORT DAEMON VARIABLE PROGRAM PID on each host, VARIABLE the inventory variable
    holding KEY): the daemon could not listen there and would stop at its next start. One
    sentence per host and port, with its fix."""
    errors = []
    for host in sorted(reads):
        seen = set()
        for line in reads.get(host) or []:
            line = str(line).strip()
            if not line.startswith("port_taken="):
                continue
            fields = line[len("port_taken="):].split()
            if len(fields) < 5 or tuple(fields[:2]) in seen:
                continue
            seen.add(tuple(fields[:2]))
            key, port, daemon, variable, program = fields[:5]
            pid = f" (pid {fields[5]})" if len(fields) > 5 else ""
            errors.append(f"On {host}, {key} {port} is taken by another program, {program}{pid}: {daemon} could not "
                          f"listen on it and would stop at its next start. Stop that program, or give {daemon} a free "
                          f"port ({variable}: {{{key}: ...}}).")
    return errors


def named_daemon_hosts(reads: Mapping[str, Iterable[str]]) -> list[str]:
    """The hosts the current slurm.conf of any host read names as slurmctld's (SlurmctldHost) or
    slurmdbd's (AccountingStorageHost), from the Slurm host checks' reads (daemon_moves)."""
    named = {str(line).strip().split("=", 1)[1].strip() for read in reads.values() for line in (read or [])
             if str(line).strip().startswith(("ctld_host=", "acct_host="))}
    return sorted(name for name in named if name)


def daemon_moves(reads: Mapping[str, Iterable[str]], *, controllers: Iterable[str], dbd_hosts: Iterable[str],
                 state_dir: str, db_name: str, local_db: bool = True, controller_group: str = "slurm_controller",
                 dbd_group: str = "slurm_dbd", outside: Iterable[str] = ()) -> list[str]:
    """What moving slurmctld or slurmdbd to other hosts would leave behind, one sentence each with its fix.

    READS[host]: the lines of the Slurm host checks' read on that host (tasks/preflight.yml):
    `old=DIR` (StateSaveLocation in its current slurm.conf), `old_state` (job_state there),
    `same_state`/`other_state` (job_state at the new location, controllers), `ctld_active`,
    `dbd_active` (the daemon runs there), `db` (the accounting database's directory exists),
    `db_now=NAME`/`db_now_kept` (the database the current slurmdbd.conf names, and whether it
    is there: a changed slurm_db_name on the same host leaves the history behind too).
    A host in no Slurm group any more that slurm.conf still names is read from the primary
    controller and counts like the others; such a host (OUTSIDE) where the daemon is stopped but
    still enabled (`slurmctld_on`/`slurmdbd_on`) is named too: no play of the run reaches it to
    disable the daemon, which would start again at its next boot (a host still in a Slurm group
    has it disabled by the install play). On a lab, a controller group naming another host passed: the new slurmctld started with no
    state (the running job killed, the held one gone) while the old one went on running; a
    slurmdbd group naming another host started slurmdbd on an empty database (sacct showed no
    history) while the old slurmdbd and its database went on. A host the inventory no longer
    has at all is not read: its state is the site's to keep (a controller lost with its disk).
    """
    controllers, dbd_hosts = list(controllers), list(dbd_hosts)
    lines = {host: [str(line).strip() for line in (read or [])] for host, read in reads.items()}

    def old_dir(host: str) -> str:
        found = [line[4:] for line in lines[host] if line.startswith("old=")]
        return (found[0] if found else "").rstrip("/") or "(its StateSaveLocation)"

    def moved(host: str, running: bool, behind: bool, *, daemon: str, group: str, members: list[str], goes_on: str,
              loss: str, fix: str, kept: str, fresh: str) -> str:
        if running:
            return (f"{host} runs {daemon}, but {group} no longer holds it ({', '.join(members)}): left running, it would "
                    f"go on {goes_on}" + (f", and {loss}" if behind else "") + f". {fix}; or keep {host} in {group}.")
        return f"{kept}, which {group} no longer holds, and {loss}. {fix}; {fresh}"

    def enabled(host: str, daemon: str, group: str, goes_on: str) -> str:
        return (f"{daemon} is stopped but enabled on {host}, which {group} no longer holds and which is in no Slurm group, "
                f"so no play of this run reaches it: at its next boot {daemon} would start again and go on {goes_on}. "
                f"Disable it there (systemctl disable {daemon}) and run again.")

    problems: list[str] = []
    primary = controllers[0] if controllers else ""
    primary_has_state = any(tag in lines.get(primary, []) for tag in ("same_state", "other_state"))
    # Per daemon: its group's hosts, the tag of a host where it runs, whether a host keeps what
    # the new host lacks, and the words of the sentence for a host.
    daemons = [(controllers, "ctld_active", lambda host: primary in lines and "old_state" in lines[host] and not primary_has_state,
                lambda host: {
                    "daemon": "slurmctld", "group": controller_group, "members": controllers,
                    "goes_on": "as a second controller with the old configuration",
                    "loss": (f"its state (jobs, node states, reservations in {old_dir(host)}) is not on {primary}: "
                             "slurmctld would start there with none, cancelling the running jobs and dropping the pending ones"),
                    "fix": (f"To move the controller: stop slurmctld on {host} (systemctl disable --now slurmctld), copy its "
                            f"state to {primary} (cp -a {old_dir(host)}/. into {state_dir} there, owned by SlurmUser) and run again"),
                    "kept": f"slurmctld's state is on {host}",
                    "fresh": f"to start the new controller with no state, move {old_dir(host)} aside on {host} first."})]
    if local_db and dbd_hosts:
        new_dbd = dbd_hosts[0]
        new_has_db = "db" in lines.get(new_dbd, [])
        db_now = [line[7:] for line in lines.get(new_dbd, []) if line.startswith("db_now=")]
        if db_now and db_now[0] != db_name and "db_now_kept" in lines[new_dbd] and not new_has_db:
            problems.append(
                f"slurm_db_name is {db_name}, but slurmdbd on {new_dbd} keeps the accounting in database {db_now[0]}: "
                f"restarted on {db_name}, which does not exist there, it would begin an empty one and sacct would show "
                f"none of the history (every job's record, the associations' usage). Copy it (mysqldump "
                f"--single-transaction {db_now[0]} | mysql {db_name}, after CREATE DATABASE {db_name}) and run again, or "
                f"set slurm_db_name back to {db_now[0]}.")
        daemons.append((dbd_hosts, "dbd_active", lambda host: new_dbd in lines and "db" in lines[host] and not new_has_db,
                        lambda host: {
                            "daemon": "slurmdbd", "group": dbd_group, "members": dbd_hosts,
                            "goes_on": "serving the old accounting database",
                            "loss": (f"its accounting database {db_name} (every job's record, the associations, QOS and "
                                     f"usage) is not on {new_dbd}: slurmdbd would start there on an empty one and sacct "
                                     "would show none of the history"),
                            "fix": (f"To move slurmdbd: stop it on {host} (systemctl disable --now slurmdbd), copy the "
                                    f"database to {new_dbd} (mysqldump --single-transaction --databases {db_name} on {host}, "
                                    f"loaded with mysql on {new_dbd} once MariaDB is installed there) and run again"),
                            "kept": f"The accounting database {db_name} is on {host}",
                            "fresh": f"to start the accounting afresh, drop it on {host} first (after a dump you keep)."}))
    outside = set(outside)
    for members, running_tag, left, words in daemons:
        for host in sorted(set(lines) - set(members)):
            running, behind, said = running_tag in lines[host], left(host), words(host)
            if running or behind:
                problems.append(moved(host, running, behind, **said))
            if not running and host in outside and f"{said['daemon']}_on" in lines[host]:
                problems.append(enabled(host, said["daemon"], said["group"], said["goes_on"]))
    return problems


def started_from_stopped(result: Any) -> bool:
    """Whether an "Enable and start" result (ansible.builtin.systemd_service, state=started) brought the
    daemon up from stopped: it changed, and the status it reports, read before the start, was inactive or
    failed. Such a daemon read the files written before that start."""
    if not isinstance(result, Mapping) or not result.get("changed"):
        return False
    status = result.get("status") or {}
    return isinstance(status, Mapping) and status.get("ActiveState") in ("inactive", "failed")


def reconfigure_needed(hosts: Iterable[str], results: Mapping[str, Mapping[str, Any]], *, controllers: Iterable[str],
                       compute: Iterable[str], configless: bool) -> bool:
    """Whether `scontrol reconfigure` reaches a daemon that has not read the files this play changed.

    results[host] holds the host's registered results: __slurm_files_written (the files call, its
    changed_tags), __slurm_slurmctld_started and __slurm_slurmd_started (the start tasks). A host counts
    where its files tagged "reconfigure" changed and
      - it runs slurmctld and slurmctld was not started from stopped in this run, or the cluster is
        configless (running slurmd elsewhere fetch the new files only at a reconfigure); or
      - it runs slurmd and slurmd was not started from stopped.
    A host that runs neither (a login host) never counts: Slurm's clients read the files at each command.
    """
    controllers, compute = set(controllers), set(compute)
    for host in hosts:
        got = results.get(host) or {}
        written = got.get("__slurm_files_written") or {}
        if "reconfigure" not in (written.get("changed_tags") or []):
            continue
        if host in controllers and (configless or not started_from_stopped(got.get("__slurm_slurmctld_started"))):
            return True
        if host in compute and not started_from_stopped(got.get("__slurm_slurmd_started")):
            return True
    return False
