# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The cluster_validate module's argument spec and body: build the contexts from the
module's parameters and run the selected checks."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import clusterd, hardware, kubernetes, slurm
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    ModuleRunner,
    Runner,
    run_checks,
    summarize,
)

CHECKS: List[Check] = kubernetes.CHECKS + [c for c in slurm.CHECKS if c.group == "slurm"] + hardware.CHECKS + [
    c for c in slurm.CHECKS if c.group != "slurm"] + clusterd.CHECKS


def argument_spec() -> Dict[str, Any]:
    node = dict(
        name=dict(type="str", required=True),
        kind=dict(type="str", choices=["login", "service", "worker"], default="worker"),
        address=dict(type="str"),
        roles=dict(type="list", elements="str", default=[]),
        kubernetes=dict(type="bool", default=False),
        slurm_compute=dict(type="bool", default=False),
        labels=dict(type="dict", default={}),
        taints=dict(type="list", elements="raw", default=[]),
        gpus=dict(type="dict", default={}),
        rdma=dict(type="list", elements="str", default=[]),
        ib_ports=dict(type="int", default=0),
    )
    return dict(
        checks=dict(type="list", elements="str", default=["all"]),
        skip=dict(type="list", elements="str", default=[]),
        strict=dict(type="bool", default=False),
        host=dict(type="str", default=""),
        nodes=dict(type="list", elements="dict", default=[], options=node),
        kubeconfig=dict(type="path"),
        kubectl_path=dict(type="str", default="kubectl"),
        helm_path=dict(type="str", default="helm"),
        namespace=dict(type="str", default="clusterdos-validate"),
        test_image=dict(type="str", default="registry.k8s.io/e2e-test-images/busybox:1.36.1-1"),
        cluster_domain=dict(type="str", default="cluster.local"),
        addons=dict(type="list", elements="raw", default=[]),
        slurm_partition=dict(type="str"),
        slurm_node_states=dict(type="list", elements="str", default=["idle", "mixed", "allocated", "completing"]),
        slurm_mpi=dict(type="str", default="pmix"),
        mpi_program=dict(type="list", elements="str", default=["python3", "-m", "mpi4py.bench", "helloworld"]),
        nccl_program=dict(type="list", elements="str",
                          default=["all_reduce_perf", "-b", "8", "-e", "256M", "-f", "2", "-g", "1"]),
        nccl_min_busbw=dict(type="float", default=0.0),
        timeout=dict(type="int", default=120),
        clusterd=dict(type="dict", apply_defaults=True, options=dict(
            master_group=dict(type="str", default="clusterd_master"),
            agent_group=dict(type="str", default="clusterd_agent"),
            zookeeper_group=dict(type="str", default="zookeeper"),
            master_port=dict(type="int", default=5050),
            zookeeper_port=dict(type="int", default=2181),
            execute_resources=dict(type="str", default="cpus:0.1;mem:32"),
        )),
    )


def contexts(params: Dict[str, Any], run: Runner) -> Dict[str, Any]:
    """One context per check group, from the module's parameters."""
    nodes = params["nodes"] or []
    cd = params.get("clusterd") or {}
    return {
        "kubernetes": kubernetes.KubeContext(
            run, nodes, kubeconfig=params["kubeconfig"], kubectl=params["kubectl_path"], helm=params["helm_path"],
            namespace=params["namespace"], test_image=params["test_image"], cluster_domain=params["cluster_domain"],
            addons=params["addons"], timeout=params["timeout"]),
        "slurm": slurm.SlurmContext(
            run, nodes, partition=params["slurm_partition"], states=params["slurm_node_states"],
            mpi=params["slurm_mpi"], mpi_program=params["mpi_program"], nccl_program=params["nccl_program"],
            nccl_min_busbw=params["nccl_min_busbw"], timeout=params["timeout"]),
        "hardware": hardware.HardwareContext(run, nodes, host=params["host"]),
        "clusterd": clusterd.ClusterdContext(
            run, nodes, host=params["host"], timeout=params["timeout"],
            master_group=cd.get("master_group") or "clusterd_master", agent_group=cd.get("agent_group") or "clusterd_agent",
            zookeeper_group=cd.get("zookeeper_group") or "zookeeper", port=cd.get("master_port") or 5050,
            zookeeper_port=cd.get("zookeeper_port") or 2181,
            execute_resources=cd.get("execute_resources") or "cpus:0.1;mem:32"),
    }


def validate(module: Any) -> Tuple[List[Dict[str, Any]], Dict[str, int]]:
    params = module.params
    results = run_checks(CHECKS, contexts(params, ModuleRunner(module, params["timeout"])),
                         params["checks"], params["skip"], check_mode=module.check_mode, host=params["host"])
    dicts = [r.as_dict() for r in results]
    return dicts, summarize(dicts)
