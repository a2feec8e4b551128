# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The collection-wide settings and their defaults, written once.

Read through the clusterdos.cluster.setting lookup: the inventory's value when it sets
one, else the default here. Group names are parameters (an inventory may call its
control planes "masters"); versions and mirrors are the site's to change.
"""

from __future__ import annotations

from typing import Any, Dict

DEFAULTS: Dict[str, Any] = {
    # Inventory groups.
    "clusterdos_kube_control_plane_group": "kube_control_plane",
    "clusterdos_kube_node_group": "kube_node",
    "clusterdos_gpu_nvidia_group": "gpu_nvidia",
    "clusterdos_gpu_amd_group": "gpu_amd",
    "clusterdos_rdma_group": "rdma",
    "clusterdos_storage_server_group": "storage_server",
    "clusterdos_nfs_client_group": "all",
    "clusterdos_lustre_client_group": "lustre_client",
    "clusterdos_gvisor_group": "gvisor",
    "clusterdos_kata_group": "kata",
    "clusterdos_login_group": "login",
    "clusterdos_zookeeper_group": "zookeeper",
    "clusterdos_clusterd_master_group": "clusterd_master",
    "clusterdos_clusterd_agent_group": "clusterd_agent",
    "clusterdos_clusterd_frameworks_group": "clusterd_frameworks",
    "slurm_controller_group": "slurm_controller",
    "slurm_compute_group": "slurm_compute",
    "slurm_dbd_group": "slurm_dbd",
    "slurm_login_group": "slurm_login",
    "slurm_new_nodes_group": "slurm_new_nodes",
    "slurm_recorded_nodes_group": "slurm_recorded_nodes",
    "slurm_unchanged_nodes_group": "slurm_unchanged_nodes",
    # Versions.
    "clusterdos_kubernetes_version": "1.34.1",
    # The fast path of a re-run: skip a stage whose inputs and managed state are as its
    # last converge left them (roles/converge_stamp, docs/performance.md).
    "clusterdos_fast_path": True,
    # Where hosts keep those records (roles/converge_stamp writes them, the run's first read
    # of each host probes them: roles/hardware_facts).
    "clusterdos_converge_records_dir": "/var/lib/clusterdos/converged",
    # Artifact sources (empty: upstream).
    "clusterdos_file_mirror": "",
    "clusterdos_package_proxy": "",
}


# Hosts named by a setting rather than set: the first host of a group setting's group. One
# expression for "the primary" wherever a play or a role needs it.
FIRST_HOST_OF: Dict[str, str] = {
    # The Slurm controller that asks slurmctld, holds the saved node records and takes
    # the /etc/hosts block when nodes are added.
    "slurm_primary_controller": "slurm_controller_group",
}


def setting(name: str, variables: Dict[str, Any]) -> Any:
    """The inventory's value of NAME when it sets one, else the collection's default.

    Raises KeyError for a name that is not a collection-wide setting.
    """
    if name in FIRST_HOST_OF:
        return first_host(setting(FIRST_HOST_OF[name], variables), variables)
    if name not in DEFAULTS:
        raise KeyError(f"{name!r} is not a collection-wide setting; known: {', '.join(sorted([*DEFAULTS, *FIRST_HOST_OF]))}")
    return variables[name] if name in variables else DEFAULTS[name]


def first_host(group: str, variables: Dict[str, Any]) -> str:
    """The first host of GROUP in the inventory's order, '' when it has none."""
    hosts = (variables.get("groups") or {}).get(group) or []
    return hosts[0] if hosts else ""
