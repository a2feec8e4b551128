# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The converge record: what a stage was last converged with on a host, and whether the
host still holds what it converged (docs/performance.md, "The fast path").

A stage (base, Slurm) ends by recording on each host the digest of its inputs and the
state of what its roles manage (file checksums, modes and owners, services, runtime
sysctls). A later run
computes the digest again and probes the host; where every host of the stage reports the
same digest and no drift, the stage has nothing to do and is skipped.

The digest covers, for every host of the stage: the collection's own content (roles,
playbooks, plugins), the host's inventory variables whose names start with the stage's
prefixes (templated), the facts its roles read (OS, CPUs, memory, addresses, discovered
GPUs and HCAs), its groups and address. Anything else a role reads is outside it: a
stage's plays read only these (see the prefixes in the stage playbooks).

Pure functions here (unit-tested); the action plugin computes the digest on the
controller, the module probes and records on the host.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

# 2: a file's state holds its mode and owner with its checksum.
RECORD_VERSION = 2

# Facts the roles of a recorded stage read (templates, node records, package choices).
FACT_KEYS: Tuple[str, ...] = (
    "architecture",
    "clusterdos_hw",
    "default_ipv4",
    "distribution",
    "distribution_major_version",
    "distribution_release",
    "distribution_version",
    "fqdn",
    "hostname",
    "kernel",
    "memtotal_mb",
    "nodename",
    "os_family",
    "pkg_mgr",
    "processor_cores",
    "processor_count",
    "processor_threads_per_core",
    "processor_vcpus",
    "service_mgr",
    "virtualization_role",
    "virtualization_type",
)
# Parts of default_ipv4 that name the host's address (not counters that change).
_IPV4_KEYS = ("address", "interface", "gateway", "netmask", "network", "prefix")
# Inventory variables every stage reads besides its prefixed ones.
COMMON_VARS: Tuple[str, ...] = ("ansible_host", "group_names")
# Variables that never count: turning the fast path on or off changes no host.
IGNORED_VARS: Tuple[str, ...] = ("clusterdos_fast_path",)

# Directories never hashed as part of the collection's content.
_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache"}


def canonical(value: Any) -> str:
    """One text for one value: sorted keys, no whitespace, anything else as its str()."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_TREE_CACHE: Dict[Tuple[str, ...], str] = {}


def tree_digest(root: str, parts: Iterable[str] = ("roles", "playbooks", "plugins")) -> str:
    """Digest of the collection's content under ROOT: every file's relative path and bytes.

    Any edit of a role, playbook or plugin changes it, so a new collection version never
    takes the fast path on a record written by an older one. Computed once per process.
    """
    key = (os.path.realpath(root), *parts)
    if key in _TREE_CACHE:
        return _TREE_CACHE[key]
    digest = hashlib.sha256()
    for part in parts:
        top = os.path.join(root, part)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(dirpath, name)
                digest.update(os.path.relpath(path, root).encode("utf-8") + b"\0")
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    _TREE_CACHE[key] = digest.hexdigest()
    return _TREE_CACHE[key]


def select_facts(facts: Mapping[str, Any], ignore: Iterable[str] = ()) -> Dict[str, Any]:
    """The facts of FACT_KEYS a host has (default_ipv4: its address parts only), but those
    named in IGNORE (facts a stage does not read: base reads no discovered hardware)."""
    chosen: Dict[str, Any] = {}
    ignore = set(ignore)
    for key in FACT_KEYS:
        if key not in facts or key in ignore:
            continue
        value = facts[key]
        if key == "default_ipv4" and isinstance(value, Mapping):
            value = {k: value[k] for k in _IPV4_KEYS if k in value}
        chosen[key] = value
    return chosen


def select_vars(names: Iterable[str], prefixes: Iterable[str]) -> List[str]:
    """The variable names a stage's digest covers: COMMON_VARS and those with a prefix.
    Names starting with '_' (the roles' private and registered values) never count."""
    prefixes = tuple(prefixes)
    return sorted(n for n in set(names) if n not in IGNORED_VARS
                  and (n in COMMON_VARS or (not n.startswith("_") and prefixes and n.startswith(prefixes))))


def host_inputs(names: Iterable[str], facts: Mapping[str, Any], prefixes: Iterable[str],
                resolve: Callable[[str], Any], raw: Callable[[str], Any],
                ignore_facts: Iterable[str] = ()) -> Dict[str, Any]:
    """What one host contributes to a stage's digest: its variables among NAMES that the
    stage reads (select_vars), leaving out its facts' names, and its facts (leaving out
    IGNORE_FACTS). RESOLVE(name) returns a variable's templated value; where it raises,
    RAW(name), its text, stands in, marked, so a variable that cannot be resolved here
    still counts (a change of its text changes the digest)."""
    values: Dict[str, Any] = {}
    # A fact a module returned is also a variable of the same name (clusterdos_hw): it counts
    # as a fact, where the stage reads it (select_facts), never as a variable.
    for name in select_vars((n for n in names if n not in facts), prefixes):
        try:
            values[name] = resolve(name)
        except Exception:  # noqa: BLE001 - any templating failure: fall back to the text
            values[name] = {"unresolved": canonical(raw(name))}
    return {"vars": values, "facts": select_facts(facts, ignore_facts)}


def host_digest(inputs: Mapping[str, Any]) -> str:
    return sha256_text(canonical(inputs))


def stage_digest(collection: str, stage: str, host_digests: Mapping[str, str]) -> str:
    """One digest for the whole stage: every host's inputs count on every host, because a
    host's files read its peers' (slurm.conf lists every node, /etc/hosts every address)."""
    return sha256_text(canonical({"version": RECORD_VERSION, "collection": collection, "stage": stage,
                                  "hosts": dict(sorted(host_digests.items()))}))


def input_changes(recorded: Optional[Mapping[str, Any]], current: Mapping[str, Any]) -> List[str]:
    """Which inputs differ between a record's INPUTS ({collection, hosts: {host: digest}})
    and this run's: the collection, hosts added or gone, hosts whose own inputs changed."""
    recorded = recorded or {}
    reasons: List[str] = []
    if recorded.get("collection") != current.get("collection"):
        reasons.append("the collection changed (its roles, playbooks or plugins)")
    before, now = recorded.get("hosts") or {}, current.get("hosts") or {}
    added = sorted(set(now) - set(before))
    gone = sorted(set(before) - set(now))
    changed = sorted(h for h in set(now) & set(before) if now[h] != before[h])
    if added:
        reasons.append("hosts new to the stage: " + ", ".join(added))
    if gone:
        reasons.append("hosts no longer in this run: " + ", ".join(gone))
    if changed:
        reasons.append("inputs (variables, facts or groups) changed of " + ", ".join(changed))
    return reasons or ["the inputs changed since the last converge"]


def record_path(directory: str, stage: str) -> str:
    return os.path.join(directory, f"{stage}.json")


def _owner_mode(st: os.stat_result) -> str:
    return "%04o:%d:%d" % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def _content_and_owner(path: str) -> Tuple[bytes, str]:
    """A file's sha256 (raw) and its mode and owner."""
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).digest(), _owner_mode(os.stat(path))


def file_state(path: str) -> Optional[str]:
    """sha256 of a file with its mode and owner, of a directory's files (names, contents,
    modes and owners, recursively, the directory's own too), or None when the path does not
    exist. A key made world-readable, or handed to another owner, has drifted as much as
    one rewritten."""
    if os.path.isfile(path):
        content, owner = _content_and_owner(path)
        return content.hex() + ":" + owner
    if os.path.isdir(path):
        digest = hashlib.sha256(_owner_mode(os.stat(path)).encode("ascii"))
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                digest.update(os.path.relpath(full, path).encode("utf-8") + b"\0")
                if os.path.isfile(full):
                    content, owner = _content_and_owner(full)
                    digest.update(content)
                    digest.update(owner.encode("ascii"))
        return "dir:" + digest.hexdigest()
    return None


def sysctl_path(key: str) -> str:
    return "/proc/sys/" + key.replace(".", "/")


def normalise_sysctl(value: Any) -> str:
    return " ".join(str(value).split())


def read_sysctl(key: str) -> Optional[str]:
    try:
        with open(sysctl_path(key), encoding="utf-8") as handle:
            return normalise_sysctl(handle.read())
    except OSError:
        return None


def build_record(stage: str, digest: str, paths: Iterable[str], services: Iterable[str],
                 sysctls: Mapping[str, Any], state_of: Callable[[str], Optional[str]] = file_state,
                 inputs: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """The record a converged host keeps: its inputs' digest (and INPUTS, the parts it was
    made of, to say later what changed) and the state of what the stage manages there.
    Holds no time stamp, so an unchanged converge writes the same."""
    return {
        "version": RECORD_VERSION,
        "stage": stage,
        "digest": digest,
        "inputs": dict(inputs or {}),
        "paths": {p: state_of(p) for p in sorted(set(paths))},
        "services": sorted(set(services)),
        "sysctls": {k: normalise_sysctl(v) for k, v in sorted(sysctls.items())},
    }


def state_drift(record: Mapping[str, Any], active: Callable[[List[str]], Dict[str, bool]],
                state_of: Callable[[str], Optional[str]] = file_state,
                sysctl_of: Callable[[str], Optional[str]] = read_sysctl) -> List[str]:
    """What drifted on the host from what RECORD keeps of it (files, services, sysctls): an
    empty list when nothing did. The inputs' digest is decide()'s."""
    reasons: List[str] = []
    for path, expected in sorted((record.get("paths") or {}).items()):
        now = state_of(path)
        if now != expected:
            what = "is gone" if now is None else ("appeared" if expected is None else "changed")
            reasons.append(f"{path} {what} since the last converge")
    services = list(record.get("services") or [])
    if services:
        states = active(services)
        reasons.extend(f"service {s} {service_problem(states.get(s, False))}" for s in services
                       if states.get(s, False) is not True)
    for key, expected in sorted((record.get("sysctls") or {}).items()):
        now = sysctl_of(key)
        if now != expected:
            reasons.append(f"sysctl {key} is {now!r}, converged as {expected!r}")
    return reasons


def decide(probe: Optional[Mapping[str, Any]], digest: str, inputs: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Why the host is not as the stage last left it (empty when it is), from PROBE (what
    probe() read on the host: {record: the record's version, digest and inputs, or None;
    state: state_drift()'s reasons}) and this run's DIGEST and its INPUTS. Runs on the host
    (drift) or on the controller (the digest action, with the probes of the run's first read)."""
    record = (probe or {}).get("record")
    if not isinstance(record, Mapping):
        return ["no record of a converge of this stage"]
    if record.get("version") != RECORD_VERSION:
        return [f"the record is of another format ({record.get('version')!r})"]
    reasons: List[str] = []
    if record.get("digest") != digest:
        reasons.extend(input_changes(record.get("inputs"), inputs or {}))
    reasons.extend(probe.get("state") or [])
    return reasons


def probe(record: Optional[Mapping[str, Any]], active: Callable[[List[str]], Dict[str, bool]],
          state_of: Callable[[str], Optional[str]] = file_state,
          sysctl_of: Callable[[str], Optional[str]] = read_sysctl) -> Dict[str, Any]:
    """What decide() needs of one record, read on the host: its version, digest and inputs,
    and what drifted (state_drift, only for a record of this format)."""
    if record is None:
        return {"record": None, "state": []}
    kept = {k: record.get(k) for k in ("version", "digest", "inputs")}
    state = state_drift(record, active, state_of, sysctl_of) if record.get("version") == RECORD_VERSION else []
    return {"record": kept, "state": state}


def probe_records(records: Mapping[str, Optional[Mapping[str, Any]]],
                  active: Callable[[List[str]], Dict[str, bool]]) -> Dict[str, Dict[str, Any]]:
    """probe() of each of RECORDS ({stage: record, or None where there is none}), the
    services of all of them asked in one call to ACTIVE."""
    units = sorted({s for r in records.values() if r for s in r.get("services") or [] if isinstance(s, str)})
    states = active(units) if units else {}
    return {stage: probe(record, lambda wanted: {u: states.get(u, False) for u in wanted})
            for stage, record in records.items()}


def probe_directory(directory: str, active: Callable[[List[str]], Dict[str, bool]]) -> Dict[str, Dict[str, Any]]:
    """probe_records() of every stage recorded in DIRECTORY ({stage: probe}; a stage without
    a readable record is absent)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError:
        return {}
    records = {n[:-len(".json")]: load_record(os.path.join(directory, n)) for n in names}
    return probe_records({stage: record for stage, record in records.items() if record is not None}, active)


def drift(record: Optional[Mapping[str, Any]], digest: str, active: Callable[[List[str]], Dict[str, bool]],
          state_of: Callable[[str], Optional[str]] = file_state,
          sysctl_of: Callable[[str], Optional[str]] = read_sysctl,
          inputs: Optional[Mapping[str, Any]] = None) -> List[str]:
    """Why the host is not as the stage last left it: an empty list when it is.

    RECORD is the host's record (None when it has none), DIGEST this run's inputs'
    digest and INPUTS its parts, ACTIVE(units) says which services are active."""
    return decide(probe(record, active, state_of, sysctl_of), digest, inputs)


def check_stages(stages: Iterable[Any], directory: str,
                 active: Callable[[List[str]], Dict[str, bool]]) -> Dict[str, Dict[str, Any]]:
    """drift() for several stages on one host, in one call (their services asked once):
    STAGES are dicts with stage, digest and inputs. Returns {stage: {current, reasons}}; a
    malformed item raises ValueError naming it."""
    items = list(stages)
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("stage"), str) or not item.get("stage") \
                or not isinstance(item.get("digest"), str) or not item.get("digest"):
            raise ValueError(f"each of stages needs a stage name and its digest (the digest state's answer), got {item!r}")
    probes = probe_records({i["stage"]: load_record(record_path(directory, i["stage"])) for i in items}, active)
    answers: Dict[str, Dict[str, Any]] = {}
    for item in items:
        reasons = decide(probes[item["stage"]], item["digest"], item.get("inputs") or {})
        answers[item["stage"]] = {"current": not reasons, "reasons": reasons}
    return answers


# A unit file state that does not start the unit at boot, although it may run now (an admin's
# `systemctl disable` or `mask`): the record's services were enabled by the converge.
NOT_STARTED_AT_BOOT = ("disabled", "masked", "masked-runtime", "linked", "linked-runtime", "bad")


def service_problem(state: Union[bool, str]) -> str:
    """How a recorded service differs from what the converge left, from ACTIVE's answer for it:
    False (not active) or a reason of its own."""
    return state if isinstance(state, str) else "is not active"


def unit_states(show: str, units: List[str]) -> Dict[str, Union[bool, str]]:
    """ACTIVE's answer from `systemctl show --property=ActiveState,UnitFileState -- UNITS`
    (SHOW, one block of KEY=VALUE lines per unit, in order, blank lines between): True where the
    unit is active and starts at boot, else why not. A unit with no block is not active."""
    blocks = [dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
              for block in show.strip().split("\n\n")] if show.strip() else []
    answers: Dict[str, Union[bool, str]] = {}
    for i, unit in enumerate(units):
        props = blocks[i] if i < len(blocks) else {}
        file_state = props.get("UnitFileState", "")
        if props.get("ActiveState") != "active":
            answers[unit] = False
        elif file_state in NOT_STARTED_AT_BOOT:
            answers[unit] = f"is {file_state}: it would not start at boot"
        else:
            answers[unit] = True
    return answers


def systemd_active(module: Any) -> Callable[[List[str]], Dict[str, Union[bool, str]]]:
    """ACTIVE for drift() and probe_directory() on a host: each unit's active and unit file
    state (unit_states), every unit in one `systemctl show` through MODULE (an AnsibleModule);
    no systemctl, no unit active."""
    def active(units: List[str]) -> Dict[str, Union[bool, str]]:
        systemctl = module.get_bin_path("systemctl")
        if not systemctl:
            return {u: False for u in units}
        _rc, out, _err = module.run_command([systemctl, "show", "--property=ActiveState,UnitFileState", "--", *units])
        return unit_states(out, units)
    return active


def load_record(path: str) -> Optional[Dict[str, Any]]:
    """The record at PATH, or None when there is none or it cannot be read as one."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_text(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, indent=2) + "\n"
