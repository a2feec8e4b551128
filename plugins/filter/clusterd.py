# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""ClusterD (Apache Mesos continuation) and ZooKeeper: configuration as data.

Pure functions of the inventory: no host is contacted. The roles zookeeper,
clusterd_master and clusterd_agent render their files from what these return, and the
preflight (playbooks/clusterd_preflight.yml) refuses an inventory these find wrong.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: clusterd_flag_files
short_description: ClusterD (Mesos) flag files, ZooKeeper ensembles and the ClusterD inventory checks
version_added: 0.1.0
description:
  - C(clusterd_flag_files) turns a mapping of Mesos flags into the package's file layout (one file per flag under
    C(/etc/mesos-master) or C(/etc/mesos-agent); C(true) becomes an empty C(?flag) file, C(false) a C(?no-flag)
    file; C(attributes) and C(resources) mappings become one file per key under C(attributes/) and C(resources/)).
  - The same file provides C(clusterd_quorum) (n//2+1), C(clusterd_zk_url) (C(zk://a:2181,b:2181/mesos)),
    C(zookeeper_ids) (a stable C(myid) per ensemble member), C(zookeeper_config) (the C(zoo.cfg) keys with one
    C(server.N) line per member), C(clusterd_agent_flags) (containerizers, isolation and GPU resources from the
    discovered hardware) and C(clusterd_inventory_errors) (the preflight's checks, each naming host, variable,
    value and fix).
options:
  _input:
    description: The flags as a mapping (C(null) values are left out).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the files the master's flags become
  ansible.builtin.debug:
    msg: "{{ {'quorum': 2, 'work_dir': '/var/lib/mesos/master', 'hostname_lookup': false} | clusterdos.cluster.clusterd_flag_files }}"
"""

RETURN = r"""
_value:
  description: File name (relative to the flags directory) to file content.
  type: dict
"""

import re
from typing import Any, Mapping

from ansible.errors import AnsibleFilterError

# A Mesos flag name, as the init wrapper turns a file name into --name=value.
_FLAG = re.compile(r"^[a-z][a-z0-9_]*$")
# attribute and resource names (Mesos: text of letters, digits, '_', '-', '.', '/').
_KEY = re.compile(r"^[A-Za-z0-9_.\-/]+$")
_DIRS = ("attributes", "resources")
GPU_ISOLATORS = ("cgroups/devices", "gpu/nvidia")


def _scalar(name: str, value: Any) -> str:
    if isinstance(value, bool):
        raise AnsibleFilterError(f"flag {name}: a boolean is written as a ?{name} file, not as a value")
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, Mapping):
        raise AnsibleFilterError(f"flag {name}: a mapping is only allowed for attributes and resources")
    text = str(value)
    if "\n" in text:
        raise AnsibleFilterError(f"flag {name}: a value must be one line (got {text!r})")
    return text


def clusterd_flag_files(flags: Mapping[str, Any]) -> dict[str, str]:
    """{file name: content} for a flags directory in the Mesos packages' layout.

    - ``name: value`` -> file ``name`` holding ``value`` (lists joined with ',');
    - ``name: true`` / ``false`` -> empty file ``?name`` / ``?no-name``;
    - ``attributes`` / ``resources`` mappings -> ``attributes/KEY`` / ``resources/KEY``;
    - ``None`` leaves the flag out.
    """
    files: dict[str, str] = {}
    for name in sorted(flags or {}):
        value = flags[name]
        if value is None or value == "":
            continue
        if not _FLAG.match(str(name)):
            raise AnsibleFilterError(f"'{name}' is not a Mesos flag name (lowercase letters, digits and '_')")
        if name in _DIRS and isinstance(value, Mapping):
            for key in sorted(value):
                if value[key] is None:
                    continue
                if not _KEY.match(str(key)):
                    raise AnsibleFilterError(f"{name}: '{key}' is not a valid name (letters, digits, '_', '-', '.', '/')")
                files[f"{name}/{key}"] = _scalar(f"{name}/{key}", value[key]) + "\n"
            continue
        if isinstance(value, bool):
            files[f"?{name}" if value else f"?no-{name}"] = ""
            continue
        files[name] = _scalar(name, value) + "\n"
    return files


def clusterd_quorum(masters: int | list[Any]) -> int:
    """The replicated log's quorum: a strict majority of the masters (n//2+1)."""
    count = len(masters) if isinstance(masters, (list, tuple)) else int(masters)
    if count < 1:
        raise AnsibleFilterError("a ClusterD cluster needs at least one master")
    return count // 2 + 1


def _address(hostvars: Mapping[str, Any], host: str) -> str:
    hv = hostvars[host] if host in hostvars else {}
    for key in ("clusterdos_node_ip", "ansible_host"):
        if key in hv and hv[key]:
            return str(hv[key])
    return host


def clusterd_zk_url(hosts: list[str], hostvars: Mapping[str, Any], port: int = 2181, path: str = "/mesos",
                    use_names: bool = False) -> str:
    """zk://h1:2181,h2:2181,h3:2181/mesos for the ensemble's hosts (names, or addresses)."""
    if not hosts:
        raise AnsibleFilterError("no ZooKeeper hosts: the ZooKeeper group is empty")
    if not str(path).startswith("/") or path == "/":
        raise AnsibleFilterError(f"the ZooKeeper path must start with '/' and name a node (got {path!r})")
    members = [h if use_names else _address(hostvars, h) for h in hosts]
    return "zk://" + ",".join(f"{m}:{int(port)}" for m in members) + str(path)


def zookeeper_ids(hosts: list[str], hostvars: Mapping[str, Any]) -> dict[str, int]:
    """{host: myid}: an explicit zookeeper_myid is kept; the others get the lowest free ids in group order."""
    ids: dict[str, int] = {}
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        if "zookeeper_myid" in hv and hv["zookeeper_myid"] not in (None, ""):
            ids[host] = int(hv["zookeeper_myid"])
    taken = set(ids.values())
    next_id = 1
    for host in hosts:
        if host in ids:
            continue
        while next_id in taken:
            next_id += 1
        ids[host] = next_id
        taken.add(next_id)
    return ids


def zookeeper_config(hosts: list[str], hostvars: Mapping[str, Any], config: Mapping[str, Any],
                     client_port: int = 2181, quorum_port: int = 2888, election_port: int = 3888,
                     data_dir: str = "/var/lib/zookeeper") -> dict[str, str]:
    """The zoo.cfg keys: the site's settings, dataDir, clientPort and server.N=host:quorum:election per member."""
    out = {str(k): ("true" if v is True else "false" if v is False else str(v)) for k, v in (config or {}).items()}
    out["dataDir"] = str(data_dir)
    out["clientPort"] = str(int(client_port))
    for host, myid in zookeeper_ids(hosts, hostvars).items():
        out[f"server.{myid}"] = f"{_address(hostvars, host)}:{int(quorum_port)}:{int(election_port)}"
    for key, value in out.items():
        if "\n" in value or "\n" in key:
            raise AnsibleFilterError(f"zoo.cfg: {key} must be one line")
    return out


def _nvidia_gpus(hw: Any) -> int:
    """NVIDIA GPUs in clusterdos_hw (the gpu_facts module's schema); 0 when none or unknown."""
    gpus = (hw or {}).get("gpus") if isinstance(hw, Mapping) else None
    if not isinstance(gpus, Mapping):
        return 0
    if gpus.get("vendor") not in ("nvidia", "mixed"):
        return 0
    try:
        return int(gpus.get("count") or 0)
    except (TypeError, ValueError):
        return 0


def clusterd_agent_flags(flags: Mapping[str, Any], hw: Any, gpu_isolation: str = "auto",
                         attributes: Mapping[str, Any] | None = None,
                         resources: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The agent's flags with attributes, resources and, on NVIDIA hosts, GPU isolation.

    gpu_isolation: 'auto' isolates GPUs only where the discovered hardware (clusterdos_hw.gpus)
    has NVIDIA GPUs; 'true' demands it (an error without NVIDIA GPUs: the preflight refuses
    that earlier); 'false' never.
    """
    mode = str(gpu_isolation).lower()
    if mode in ("yes", "on"):
        mode = "true"
    if mode in ("no", "off"):
        mode = "false"
    if mode not in ("auto", "true", "false"):
        raise AnsibleFilterError(f"gpu isolation must be auto, true or false (got {gpu_isolation!r})")
    out = dict(flags or {})
    raw = out.get("isolation") or []
    isolation = [str(i) for i in (raw if isinstance(raw, (list, tuple)) else str(raw).split(",")) if str(i)]
    res = dict(resources or {})
    count = _nvidia_gpus(hw)
    if mode == "true" and count == 0:
        raise AnsibleFilterError("GPU isolation is asked for (true) but the discovered hardware has no NVIDIA GPU")
    if mode != "false" and count > 0:
        isolation += [i for i in GPU_ISOLATORS if i not in isolation]
        res.setdefault("gpus", count)
        out.setdefault("nvidia_gpu_devices", ",".join(str(i) for i in range(int(res["gpus"]))))
    else:
        isolation = [i for i in isolation if i != "gpu/nvidia"]
        res.pop("gpus", None)
        out.pop("nvidia_gpu_devices", None)
    if isolation:
        out["isolation"] = ",".join(isolation)
    else:
        out.pop("isolation", None)
    if attributes:
        out["attributes"] = dict(attributes)
    if res:
        out["resources"] = res
    return out


# --------------------------------------------------------------------------- preflight
def _hv(hostvars: Mapping[str, Any], host: str) -> Mapping[str, Any]:
    return hostvars[host] if host in hostvars else {}


def _truthy(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "yes", "on", "1"))


def _declared_nvidia(hv: Mapping[str, Any], in_nvidia_group: bool) -> bool:
    """Does the inventory say this host has NVIDIA GPUs (group, clusterdos_gpus or discovered facts)?"""
    if in_nvidia_group:
        return True
    gpus = hv["clusterdos_gpus"] if "clusterdos_gpus" in hv else []
    if isinstance(gpus, list) and any(isinstance(g, Mapping) and g.get("vendor") == "nvidia" and int(g.get("count") or 0) > 0
                                      for g in gpus):
        return True
    return _nvidia_gpus(hv["clusterdos_hw"] if "clusterdos_hw" in hv else None) > 0


def clusterd_inventory_errors(groups: Mapping[str, list[str]], hostvars: Mapping[str, Any],
                              zookeeper_group: str = "zookeeper", master_group: str = "clusterd_master",
                              agent_group: str = "clusterd_agent", nvidia_group: str = "gpu_nvidia",
                              external_zk: str = "") -> list[str]:
    """The ClusterD stage's inventory problems, each naming host, variable, value and fix."""
    zk = list(groups.get(zookeeper_group) or [])
    masters = list(groups.get(master_group) or [])
    agents = list(groups.get(agent_group) or [])
    nvidia = set(groups.get(nvidia_group) or [])
    errors: list[str] = []
    if zk and len(zk) % 2 == 0:
        errors.append(f"group {zookeeper_group} has {len(zk)} members ({', '.join(zk)}): a ZooKeeper ensemble of an even "
                      f"size tolerates no more failures than one member fewer, and a split in half stops it. Use an odd "
                      f"number (1, 3 or 5): add or remove one host.")
    if masters and len(masters) % 2 == 0:
        errors.append(f"group {master_group} has {len(masters)} masters ({', '.join(masters)}): the replicated log needs a "
                      f"strict majority (quorum {len(masters) // 2 + 1}), so an even count adds a host without adding "
                      f"tolerance. Use an odd number of masters (1, 3 or 5).")
    if agents and not masters:
        errors.append(f"group {agent_group} has hosts ({', '.join(agents[:5])}) but group {master_group} is empty: agents "
                      f"register with a master. Add at least one host to {master_group}, or remove the agents.")
    if masters and not zk and not external_zk:
        errors.append(f"group {master_group} has masters but group {zookeeper_group} is empty and "
                      f"clusterd_master_zk_url is not set: masters elect their leader through ZooKeeper. Add 1, 3 or 5 "
                      f"hosts to {zookeeper_group}, or set clusterd_master_zk_url to an existing ensemble.")
    seen: dict[int, str] = {}
    for host in zk:
        hv = _hv(hostvars, host)
        if "zookeeper_myid" not in hv or hv["zookeeper_myid"] in (None, ""):
            continue
        raw = hv["zookeeper_myid"]
        try:
            myid = int(raw)
        except (TypeError, ValueError):
            myid = 0
        if not 1 <= myid <= 255:
            errors.append(f"zookeeper_myid = {raw!r} (on {host}): must be a whole number from 1 to 255.")
            continue
        if myid in seen:
            errors.append(f"zookeeper_myid = {myid} (on {host} and {seen[myid]}): every ensemble member needs its own id. "
                          "Give one of them another number, or leave zookeeper_myid unset.")
        seen[myid] = host
    for host in agents:
        hv = _hv(hostvars, host)
        mode = hv["clusterd_agent_gpu_isolation"] if "clusterd_agent_gpu_isolation" in hv else "auto"
        if _truthy(mode) and not _declared_nvidia(hv, host in nvidia):
            errors.append(f"clusterd_agent_gpu_isolation = {mode!r} (on {host}): the host is not in {nvidia_group} and "
                          f"declares no NVIDIA GPU (clusterdos_gpus). Add it to {nvidia_group}, or set "
                          f"clusterd_agent_gpu_isolation: auto (GPUs isolated only where they are found).")
    for host in masters:
        hv = _hv(hostvars, host)
        for flag, what in (("clusterd_master_authenticate_frameworks", "frameworks"),
                           ("clusterd_master_authenticate_agents", "agents")):
            if flag in hv and _truthy(hv[flag]):
                creds = hv["clusterd_master_credentials"] if "clusterd_master_credentials" in hv else []
                if not creds:
                    errors.append(f"{flag} = true (on {host}) but clusterd_master_credentials is empty: no {what} could "
                                  "authenticate. List {principal, secret} entries in clusterd_master_credentials "
                                  "(in a vault), or turn authentication off.")
                elif not isinstance(creds, list) or not all(isinstance(c, Mapping) and c.get("principal") and c.get("secret")
                                                            for c in creds):
                    errors.append(f"clusterd_master_credentials (on {host}): every entry needs a principal and a secret.")
    agents_authenticated = any("clusterd_master_authenticate_agents" in _hv(hostvars, m)
                               and _truthy(_hv(hostvars, m)["clusterd_master_authenticate_agents"]) for m in masters)
    for host in agents:
        hv = _hv(hostvars, host)
        if agents_authenticated:
            cred = hv["clusterd_agent_credential"] if "clusterd_agent_credential" in hv else {}
            if not (isinstance(cred, Mapping) and cred.get("principal") and cred.get("secret")):
                errors.append(f"clusterd_agent_credential (on {host}) is missing while the masters authenticate agents "
                              "(clusterd_master_authenticate_agents: true): set {principal, secret} matching an entry of "
                              "clusterd_master_credentials (in a vault).")
    return list(dict.fromkeys(errors))


class FilterModule:
    """clusterdos.cluster ClusterD and ZooKeeper filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "clusterd_flag_files": clusterd_flag_files,
            "clusterd_quorum": clusterd_quorum,
            "clusterd_zk_url": clusterd_zk_url,
            "clusterd_agent_flags": clusterd_agent_flags,
            "clusterd_inventory_errors": clusterd_inventory_errors,
            "zookeeper_ids": zookeeper_ids,
            "zookeeper_config": zookeeper_config,
        }
