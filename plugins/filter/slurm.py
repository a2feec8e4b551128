# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Slurm filters: hostlists and config-as-data rendering (logic in module_utils.slurm_config)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: slurm_hostlist
short_description: Slurm hostlists and slurm.conf/gres.conf records from the inventory
version_added: 0.1.0
description:
  - C(slurm_hostlist) compresses host names into Slurm's hostlist syntax (C(c[1-3],g07)).
  - The same file provides C(slurm_expand_hostlist) (the inverse), C(slurm_conf_line) (a mapping
    as one C(Key=Value ...) line), C(slurm_conf_lines) (a flat mapping as sorted lines), C(slurm_controller_lines) (SlurmctldHost lines),
    C(slurm_mariadb_lines) (MariaDB options as sorted lines, booleans as ON/OFF),
    C(slurm_logrotate_lines) (a daemon's logrotate file from C(slurm_log_rotation)'s directives, the log's owner and a
    SIGUSR2 postrotate), C(slurm_log_rotation_errors) (what is wrong with those directives),
    C(slurm_nodes) (NodeName records from facts and C(slurm_node_*) host variables, identical
    hardware merged), C(slurm_partitions) (PartitionName records from groups),
    C(slurm_gres) (gres.conf records, C(AutoDetect=nvml) on NVIDIA hosts), C(slurm_version_series)
    and C(slurm_inventory_errors) (the inventory checks, each message saying what to fix).
  - C(slurm_cluster_wide_errors) names each variable that shapes the cluster's Slurm files
    (C(slurm_config), C(slurm_partitions), ...) and is set differently on some Slurm hosts.
  - C(slurm_started_from_stopped) says whether a registered C(ansible.builtin.systemd_service) start result
    brought the daemon up from stopped (it changed, and the status it reports, read before the start, was
    inactive or failed).
  - C(slurm_reconfigure_needed) says, for the play's hosts and their registered results, whether
    C(scontrol reconfigure) reaches a daemon that has not read the files the play changed (a login host's
    files never call for it; a daemon started from stopped has read them; configless, a controller's
    change always does).
  - C(slurm_up_nodes) reads C(sinfo --noheader --Node --format '%N %T') lines and returns the nodes slurmctld has
    registered and answering (a drained or draining node included; down, not responding, failing or C(inval) not).
  - C(slurm_node_hardware_errors) names, for one compute node, what its C(slurm_node_config) asks for above its facts
    (C(RealMemory), C(CPUs), C(Sockets) x C(CoresPerSocket) x C(ThreadsPerCore)), for which slurmctld would mark the
    node C(INVAL).
  - C(slurm_jobs_at_risk) reads C(squeue --noheader --format '%P|%N|%n') lines (unfinished jobs) and names, one
    sentence each with its fix, the partitions and compute nodes the next C(slurm.conf) would drop while jobs
    hold or wait for them.
  - C(slurm_daemon_moves) reads the Slurm host checks' read of each host (its C(__slurm_saved_state) lines) and names,
    one sentence each with its fix, a slurmctld or slurmdbd left running on a host its group no longer holds, and
    state or an accounting database the new host lacks; C(slurm_daemon_hosts_unread) names the hosts the current
    C(slurm.conf) of a host read names as slurmctld's or slurmdbd's that were not read themselves;
    C(slurm_unshared_state_errors) names, with a backup controller, the controllers whose state location is on a
    local file system; C(slurm_taken_port_errors) names each daemon's port another program listens on.
  - C(slurm_accounting_errors) checks the shape of C(slurm_accounting_qos), C(slurm_accounting_accounts) and
    C(slurm_accounting_users) (module_utils.slurm_accounting).
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Show the compute nodes as a hostlist
  ansible.builtin.debug:
    msg: "{{ groups['slurm_compute'] | clusterdos.cluster.slurm_hostlist }}"
"""

RETURN = r"""
_value:
  description: The compressed hostlist.
  type: str
"""

from typing import Any, Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.clusterdos.cluster.plugins.module_utils import slurm_accounting as sa
from ansible_collections.clusterdos.cluster.plugins.module_utils import slurm_config as sc


def _plain(hostvars: Mapping[str, Any], hosts: list[str], keys: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Copy only the keys the logic reads (hostvars values are templated lazily)."""
    out: dict[str, dict[str, Any]] = {}
    for host in hosts:
        hv = hostvars[host] if host in hostvars else {}
        out[host] = {k: hv[k] for k in keys if k in hv}
    return out


_NODE_KEYS = ("ansible_facts", "slurm_node_gpus", "clusterdos_gpus", "slurm_node_gres", "slurm_node_features",
              "slurm_node_weight", "slurm_node_config")


def slurm_hostlist(names: list[str]) -> str:
    return sc.compress_hostlist(names)


def slurm_expand_hostlist(expr: str) -> list[str]:
    try:
        return sc.expand_hostlist(expr)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_conf_line(record: Mapping[str, Any]) -> str:
    try:
        return sc.conf_line(record)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_conf_lines(config: Mapping[str, Any]) -> list[str]:
    try:
        return sc.conf_lines(config)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_mariadb_lines(config: Mapping[str, Any]) -> list[str]:
    try:
        return sc.mariadb_lines(config or {})
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_logrotate_lines(log_file: str, program: str, owner: str, directives: Mapping[str, Any]) -> list[str]:
    try:
        return sc.logrotate_lines(log_file, program, owner, directives or {})
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_log_rotation_errors(directives: Any) -> list[str]:
    return sc.log_rotation_errors(directives)


def slurm_controller_lines(controllers: list[Mapping[str, Any]]) -> list[str]:
    return sc.controller_lines(controllers)


def slurm_nodes(hosts: list[str], hostvars: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    return sc.grouped_node_lines(sc.node_records(hosts, _plain(hostvars, hosts, _NODE_KEYS), defaults))


def slurm_partitions(partitions: list[Mapping[str, Any]], groups: Mapping[str, list[str]], compute: list[str],
                     hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    return sc.partition_records(partitions, groups, compute, _plain(hostvars, compute, _NODE_KEYS))


def slurm_gres(hosts: list[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    return sc.gres_records(hosts, _plain(hostvars, hosts, _NODE_KEYS))


def slurm_version_series(version: str) -> str:
    try:
        return sc.version_series(version)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def slurm_inventory_errors(groups: Mapping[str, list[str]], hostvars: Mapping[str, Any], *, controller_group: str,
                           compute_group: str, partitions: list[Mapping[str, Any]], version: str,
                           munge_key: str | None = None, defaults: Mapping[str, Any] | None = None) -> list[str]:
    compute = list(groups.get(compute_group) or [])
    return sc.inventory_errors(groups=groups, hostvars=_plain(hostvars, compute, _NODE_KEYS),
                               controller_group=controller_group, compute_group=compute_group, partitions=partitions,
                               version=version, munge_key=munge_key, defaults=defaults)


def slurm_cluster_wide_errors(hosts: list[str], hostvars: Mapping[str, Any]) -> list[str]:
    return sc.cluster_wide_errors(_plain(hostvars, list(dict.fromkeys(hosts)), sc.CLUSTER_WIDE_KEYS))


def slurm_accounting_errors(qos: Any, accounts: Any, users: Any) -> list[str]:
    return sa.errors(qos, accounts, users)


def slurm_up_nodes(lines: list[str]) -> list[str]:
    return sc.up_nodes(lines)


def slurm_node_hardware_errors(name: str, hostvars: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> list[str]:
    return sc.node_hardware_errors(name, _plain(hostvars, [name], _NODE_KEYS)[name], defaults)


def slurm_jobs_at_risk(lines: list[str], partitions: list[str], nodes: list[str],
                       compute_group: str = "slurm_compute") -> list[str]:
    return sc.jobs_at_risk(lines or [], partitions or [], nodes or [], compute_group=str(compute_group))


def _host_reads(hosts: list[str], hostvars: Mapping[str, Any], extra: list[Any] | None = None) -> dict[str, list[str]]:
    """Each host's Slurm host-check read (its registered __slurm_saved_state), and EXTRA: the
    loop results of the reads delegated to hosts out of the Slurm groups (item: the host)."""
    reads = {}
    for host, hv in _plain(hostvars, list(dict.fromkeys(hosts)), ("__slurm_saved_state",)).items():
        result = hv.get("__slurm_saved_state") or {}
        if isinstance(result, Mapping) and "stdout_lines" in result:
            reads[host] = list(result["stdout_lines"])
    for result in extra or []:
        if isinstance(result, Mapping) and "stdout_lines" in result and result.get("rc") == 0:
            reads[str(result.get("__slurm_left_host"))] = list(result["stdout_lines"])
    return reads


def slurm_daemon_hosts_unread(hosts: list[str], hostvars: Mapping[str, Any]) -> list[str]:
    reads = _host_reads(hosts, hostvars)
    return [name for name in sc.named_daemon_hosts(reads) if name not in reads]


def slurm_daemon_moves(hosts: list[str], hostvars: Mapping[str, Any], controllers: list[str], dbd_hosts: list[str],
                       state_dir: str, db_name: str, local_db: bool = True, controller_group: str = "slurm_controller",
                       dbd_group: str = "slurm_dbd", left_reads: list[Any] | None = None) -> list[str]:
    reads = _host_reads(hosts, hostvars, left_reads)
    return sc.daemon_moves(reads, controllers=controllers or [], dbd_hosts=dbd_hosts or [], state_dir=str(state_dir),
                           db_name=str(db_name), local_db=bool(local_db), controller_group=str(controller_group),
                           dbd_group=str(dbd_group), outside=set(reads) - set(hosts))


def slurm_unshared_state_errors(hosts: list[str], hostvars: Mapping[str, Any], controllers: list[str], state_dir: str,
                                controller_group: str = "slurm_controller") -> list[str]:
    return sc.unshared_state_errors(_host_reads(hosts, hostvars), controllers=controllers or [], state_dir=str(state_dir),
                                    controller_group=str(controller_group))


def slurm_taken_port_errors(hosts: list[str], hostvars: Mapping[str, Any]) -> list[str]:
    return sc.taken_port_errors(_host_reads(hosts, hostvars))


def slurm_started_from_stopped(result: Any) -> bool:
    return sc.started_from_stopped(result)


_RECONFIGURE_KEYS = ("__slurm_files_written", "__slurm_slurmctld_started", "__slurm_slurmd_started")


def slurm_reconfigure_needed(hosts: list[str], hostvars: Mapping[str, Any], controllers: list[str], compute: list[str],
                             configless: bool = False) -> bool:
    return sc.reconfigure_needed(hosts, _plain(hostvars, list(dict.fromkeys(hosts)), _RECONFIGURE_KEYS),
                                 controllers=controllers, compute=compute, configless=bool(configless))


class FilterModule:
    """clusterdos.cluster Slurm filters."""

    def filters(self) -> dict[str, Any]:
        return {
            "slurm_hostlist": slurm_hostlist,
            "slurm_expand_hostlist": slurm_expand_hostlist,
            "slurm_conf_line": slurm_conf_line,
            "slurm_accounting_errors": slurm_accounting_errors,
            "slurm_conf_lines": slurm_conf_lines,
            "slurm_mariadb_lines": slurm_mariadb_lines,
            "slurm_logrotate_lines": slurm_logrotate_lines,
            "slurm_log_rotation_errors": slurm_log_rotation_errors,
            "slurm_controller_lines": slurm_controller_lines,
            "slurm_nodes": slurm_nodes,
            "slurm_partitions": slurm_partitions,
            "slurm_gres": slurm_gres,
            "slurm_version_series": slurm_version_series,
            "slurm_inventory_errors": slurm_inventory_errors,
            "slurm_cluster_wide_errors": slurm_cluster_wide_errors,
            "slurm_started_from_stopped": slurm_started_from_stopped,
            "slurm_up_nodes": slurm_up_nodes,
            "slurm_jobs_at_risk": slurm_jobs_at_risk,
            "slurm_daemon_moves": slurm_daemon_moves,
            "slurm_daemon_hosts_unread": slurm_daemon_hosts_unread,
            "slurm_unshared_state_errors": slurm_unshared_state_errors,
            "slurm_taken_port_errors": slurm_taken_port_errors,
            "slurm_node_hardware_errors": slurm_node_hardware_errors,
            "slurm_reconfigure_needed": slurm_reconfigure_needed,
        }
