#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Run the post-install checks on the host where the module runs."""

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_validate
short_description: Prove a cluster works - Kubernetes, Slurm, ClusterD and hardware checks
version_added: 0.1.0
description:
  - Runs post-install checks on the host it is called on and returns one result per check with
    its name, status (V(passed), V(failed) or V(skipped)), detail and duration.
  - Kubernetes checks use C(kubectl) and C(helm) with a kubeconfig - run them on a control-plane node
    or any host with API access. Slurm checks use C(scontrol), C(sinfo), C(srun) and C(sacct) - run them on
    the controller or a login node. Hardware checks read C(nvidia-smi), C(rocm-smi) and C(ibstat) on the
    host itself. ClusterD checks ask the ZooKeeper members (C(srvr)) and the master's C(/master/state) with the
    host's C(python3), and run C(mesos-execute) - run them on a master.
  - A cluster problem, an unknown check name, a missing kubeconfig, an unreachable API server or a Slurm
    controller that does not answer each give a failed check with the reason; the module itself fails only
    when O(strict=true) and a check failed.
  - Write the report from the results of one or more hosts with M(clusterdos.cluster.cluster_report).
author:
  - clusterdOS developers (@clusterdos)
attributes:
  check_mode:
    description: Can run in check mode; checks that create temporary pods, PVCs or Slurm jobs are reported as skipped.
    support: full
  diff_mode:
    description: Changes nothing, so there is no diff.
    support: none
options:
  checks:
    description:
      - Checks to run, each V(all), a group (V(kubernetes), V(slurm), V(hardware), V(clusterd)) or a check name such as
        V(kubernetes.nodes_ready). V(all) and groups leave out opt-in checks (V(hardware.nccl_slurm)), which run
        only when named.
    type: list
    elements: str
    default: [all]
  skip:
    description: Checks (names or groups) to report as skipped.
    type: list
    elements: str
    default: []
  strict:
    description: Fail the task when any check failed.
    type: bool
    default: false
  host:
    description: The name of this host in O(nodes), for the hardware checks.
    type: str
    default: ""
  nodes:
    description: The expected cluster, usually built from the inventory by the C(validate) role.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The node name (Kubernetes node name and Slurm NodeName).
        type: str
        required: true
      kind:
        description: Where the node is drawn in the report.
        type: str
        choices: [login, service, worker]
        default: worker
      address:
        description: The node's cluster address, shown in the report.
        type: str
      roles:
        description: Inventory groups of the node, shown in the report.
        type: list
        elements: str
        default: []
      kubernetes:
        description: The node must be registered in Kubernetes.
        type: bool
        default: false
      slurm_compute:
        description: The node is a Slurm compute node.
        type: bool
        default: false
      labels:
        description: Labels the Kubernetes node must carry (a null value accepts any value).
        type: dict
        default: {}
      taints:
        description: Taints the Kubernetes node must carry, each a mapping with C(key), C(value) and C(effect), or a C(KEY[=VALUE]:EFFECT) string.
        type: list
        elements: raw
        default: []
      gpus:
        description: GPUs per extended resource, such as C(nvidia.com/gpu=8) written as a mapping; also the expected Slurm GRES count.
        type: dict
        default: {}
      rdma:
        description: RDMA extended resources that must be allocatable, such as C(rdma/rdma_shared_device_a).
        type: list
        elements: str
        default: []
      ib_ports:
        description: InfiniBand ports that must be Active and LinkUp.
        type: int
        default: 0
  kubeconfig:
    description: The kubeconfig for C(kubectl) and C(helm). Omit to use their defaults.
    type: path
  kubectl_path:
    description: The kubectl command.
    type: str
    default: kubectl
  helm_path:
    description: The helm command.
    type: str
    default: helm
  namespace:
    description: Namespace for the temporary pods and PVCs of the workload checks; created when missing.
    type: str
    default: clusterdos-validate
  test_image:
    description: Image with C(sh), C(nslookup) and C(uname) for the workload checks (point it at a site mirror when air-gapped).
    type: str
    default: registry.k8s.io/e2e-test-images/busybox:1.36.1-1
  cluster_domain:
    description: The cluster's DNS domain.
    type: str
    default: cluster.local
  addons:
    description: Helm releases that must be deployed with their pods ready, each a release name or a mapping with
      C(name) and C(namespace). Empty checks every release Helm lists.
    type: list
    elements: raw
    default: []
  slurm_partition:
    description: Partition for sinfo and the test jobs. Omit for the default partition.
    type: str
  slurm_node_states:
    description: Acceptable sinfo states of compute nodes.
    type: list
    elements: str
    default: [idle, mixed, allocated, completing]
  slurm_mpi:
    description: The C(srun --mpi) plugin for the MPI and NCCL jobs.
    type: str
    default: pmix
  mpi_program:
    description: The MPI program (argv) the MPI check runs on 2 nodes. It must print mpi4py's hello world lines.
    type: list
    elements: str
    default: [python3, -m, mpi4py.bench, helloworld]
  nccl_program:
    description: The nccl-tests program (argv) for the opt-in V(hardware.nccl_slurm) check.
    type: list
    elements: str
    default: [all_reduce_perf, -b, "8", -e, 256M, -f, "2", -g, "1"]
  nccl_min_busbw:
    description: The lowest acceptable NCCL all-reduce bus bandwidth in GB/s.
    type: float
    default: 0.0
  timeout:
    description: Seconds any one command or pod may take.
    type: int
    default: 120
  clusterd:
    description: Where the ClusterD checks find the masters, agents and ZooKeeper members (groups in each node's C(roles)).
    type: dict
    suboptions:
      master_group:
        description: The inventory group of the ClusterD masters.
        type: str
        default: clusterd_master
      agent_group:
        description: The inventory group of the ClusterD agents.
        type: str
        default: clusterd_agent
      zookeeper_group:
        description: The inventory group of the ZooKeeper ensemble.
        type: str
        default: zookeeper
      master_port:
        description: The masters' HTTP port.
        type: int
        default: 5050
      zookeeper_port:
        description: The ZooKeeper client port.
        type: int
        default: 2181
      execute_resources:
        description: The resources the C(mesos-execute) task asks for.
        type: str
        default: "cpus:0.1;mem:32"
seealso:
  - module: clusterdos.cluster.cluster_report
"""

EXAMPLES = r"""
- name: Check Kubernetes from the first control plane
  clusterdos.cluster.cluster_validate:
    checks: [kubernetes]
    kubeconfig: /etc/kubernetes/admin.conf
    nodes:
      - name: gpu1
        kubernetes: true
        labels: {nvidia.com/gpu.present: "true"}
        gpus: {nvidia.com/gpu: 8}
        rdma: [rdma/rdma_shared_device_a]
  register: k8s_checks

- name: Check Slurm from a login node, skipping the MPI job
  clusterdos.cluster.cluster_validate:
    checks: [slurm]
    skip: [slurm.mpi]
    nodes:
      - {name: gpu1, slurm_compute: true, gpus: {nvidia.com/gpu: 8}}
      - {name: gpu2, slurm_compute: true, gpus: {nvidia.com/gpu: 8}}

- name: Check this GPU host's hardware and fail on any problem
  clusterdos.cluster.cluster_validate:
    checks: [hardware]
    host: "{{ inventory_hostname }}"
    nodes: [{name: "{{ inventory_hostname }}", gpus: {nvidia.com/gpu: 8}, ib_ports: 4}]
    strict: true
"""

RETURN = r"""
checks:
  description: One result per check, in run order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The check name.
      type: str
      sample: slurm.srun
    group:
      description: The check group (C(selection) for an unknown name).
      type: str
      sample: slurm
    status:
      description: V(passed), V(failed) or V(skipped).
      type: str
      sample: passed
    detail:
      description: What was found, or why the check failed or was skipped.
      type: str
    duration:
      description: Seconds the check took.
      type: float
      sample: 1.25
    host:
      description: The inventory host the check ran on.
      type: str
    data:
      description: Measured values, such as C(busbw_gbps) of the NCCL test.
      type: dict
summary:
  description: Counts of passed, failed and skipped checks, and the total.
  returned: always
  type: dict
  sample: {passed: 9, failed: 1, skipped: 2, total: 12}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.runner import argument_spec, validate


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    results, summary = validate(module)
    if module.params["strict"] and summary["failed"]:
        failed = [r["name"] for r in results if r["status"] == "failed"]
        module.fail_json(msg="%d checks failed: %s" % (len(failed), ", ".join(failed)), checks=results, summary=summary)
    module.exit_json(changed=False, checks=results, summary=summary)


if __name__ == "__main__":
    main()
