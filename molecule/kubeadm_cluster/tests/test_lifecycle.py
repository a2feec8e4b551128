"""Lifecycle on the live cluster: add_node.yml joins a new worker while a workload runs
(only the new node changes, plus /etc/hosts and the pod route on the others), the new
node runs a pod, remove_node.yml drains, deletes and resets it, reset.yml then changes
nothing, upgrade.yml refuses a skipped minor against the real API server, and an upgrade
to the version every node runs changes nothing.

Runs after test_cluster.py (file order); the spare host k8s-w3 is put into kube_node by
an extra inventory for these runs only."""

from __future__ import annotations

import json

import pytest

from conftest import CONTROL_PLANES, EPHEMERAL, TEST_IMAGE, WORKERS, eventually, http_get, lab_host, run_playbook

SPARE = "k8s-w3"
# Tasks that may report a change on hosts other than the new node.
ALLOWED_ELSEWHERE = {
    "Update the cluster hosts block in /etc/hosts",
    "Make a fresh bootstrap token (first control plane)",
    "Write the routes to the other nodes' pod networks",
    "Apply the routes (now and at every boot)",
    # On the first control plane, for the new node only (its labels, its serving certificate).
    "Set node labels that differ from the inventory and the hardware found",
    "Approve kubelet serving certificates of inventory nodes",
}


@pytest.fixture(scope="module")
def spare_inventory():
    path = EPHEMERAL / "spare-worker.yml"
    path.write_text("all:\n  children:\n    kube_node:\n      hosts:\n        %s: {}\n" % SPARE)
    return str(path)


def _changed_tasks(stdout: str) -> dict[str, set[str]]:
    """host -> names of tasks that changed, from the ansible.posix.json callback."""
    doc = json.loads(stdout[stdout.index("{"):])
    out: dict[str, set[str]] = {}
    for play in doc["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if res.get("changed"):
                    # "role : task" in the callback's names; the task's own name is what counts.
                    out.setdefault(host, set()).add(task["task"]["name"].split(" : ", 1)[-1])
    return out


@pytest.fixture(scope="module")
def workload(kubectl):
    """A pod on the first worker that must keep running through the add."""
    kubectl.run("delete", "pod", "steady", "-n", "default", "--ignore-not-found")
    kubectl.ok("run", "steady", "-n", "default", f"--image={TEST_IMAGE}", "--image-pull-policy=Never",
               "--overrides", json.dumps({"spec": {"nodeName": WORKERS[0]}}), "--", "sleep", "3600")
    kubectl.wait("condition=Ready", "pod/steady", "-n", "default")
    pod = kubectl.json("get", "pod", "steady", "-n", "default")
    yield pod
    kubectl.run("delete", "pod", "steady", "-n", "default", "--wait=false")


@pytest.fixture(scope="module")
def added(kubectl, workload, spare_inventory):
    res = run_playbook("playbooks/add_node.yml", "-i", spare_inventory, "-e", f"node={SPARE}",
                       env_extra={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    return _changed_tasks(res.stdout)


def test_add_node_joins_the_new_worker_ready(kubectl, added):
    assert SPARE in added, "the new node did not change"
    node = kubectl.json("get", "node", SPARE)
    assert [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True"
    assert node["metadata"]["labels"].get("clusterdos.io/pool") == "lab-workers"
    # Its hardware labels, from the clusterdos_hw fact add_node.yml's GPU stage read.
    assert node["metadata"]["labels"].get("clusterdos.io/gpu.count") is not None
    assert node["metadata"]["labels"].get("clusterdos.io/rdma.ib") in ("true", "false")


def test_add_node_touches_other_hosts_only_where_it_must(added):
    for host, tasks in added.items():
        if host in (SPARE, "localhost"):
            continue
        assert tasks <= ALLOWED_ELSEWHERE, (host, tasks - ALLOWED_ELSEWHERE)


def test_the_workload_kept_running_through_the_add(kubectl, workload, added):
    pod = kubectl.json("get", "pod", "steady", "-n", "default")
    assert pod["metadata"]["uid"] == workload["metadata"]["uid"]
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0


def test_the_new_node_runs_a_pod_reachable_from_another_node(kubectl, added):
    kubectl.run("delete", "pod", "on-spare", "-n", "default", "--ignore-not-found")
    kubectl.ok("run", "on-spare", "-n", "default", f"--image={TEST_IMAGE}", "--image-pull-policy=Never",
               "--overrides", json.dumps({"spec": {"nodeName": SPARE}}), "--",
               "sh", "-c", "hostname > /www/index.html && exec httpd -f -p 8080 -h /www")
    kubectl.wait("condition=Ready", "pod/on-spare", "-n", "default")
    ip = kubectl.json("get", "pod", "on-spare", "-n", "default")["status"]["podIP"]

    try:
        assert eventually(lambda: http_get(kubectl, "steady", ip), timeout=60) == "on-spare"
    finally:
        kubectl.run("delete", "pod", "on-spare", "-n", "default", "--wait=false", "--grace-period=0", "--force")


def test_remove_node_drains_deletes_and_resets(kubectl, added, spare_inventory):
    res = run_playbook("playbooks/remove_node.yml", "-i", spare_inventory, "-e", f"node={SPARE}")
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    names = [n["metadata"]["name"] for n in kubectl.json("get", "nodes")["items"]]
    assert SPARE not in names
    host = lab_host(SPARE)
    for path in ("/etc/kubernetes", "/var/lib/kubelet", "/etc/cni/net.d"):
        assert not host.file(path).exists, path
    assert not host.service("kubelet").is_running


def test_reset_refuses_unconfirmed_then_changes_nothing_on_a_reset_host(spare_inventory):
    refused = run_playbook("playbooks/reset.yml", "-i", spare_inventory, "-l", SPARE)
    assert refused.returncode != 0
    assert "clusterdos_reset_confirm=true" in refused.stdout
    again = run_playbook("playbooks/reset.yml", "-i", spare_inventory, "-l", SPARE, "-e", "clusterdos_reset_confirm=true")
    assert again.returncode == 0, again.stdout[-4000:]
    assert f"{SPARE}" in again.stdout and "changed=0" in again.stdout.split("PLAY RECAP")[-1].split(SPARE)[1].splitlines()[0]


def test_upgrade_refuses_a_downgrade_against_the_real_api(kubectl):
    """The nodes report v1.36.2 (read by kubectl through the real API server); 1.34 is two
    minors down. The repository source keeps the binaries-directory check (which would
    refuse first: the mirror holds only 1.36.2) out of the way of the skew check."""
    before = kubectl.ok("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}")
    res = run_playbook("playbooks/upgrade.yml", "-e", "clusterdos_kubernetes_version=1.34.1",
                       "-e", "kubernetes_packages_source=repository")
    assert res.returncode != 0
    assert "one minor at a time and never down" in res.stdout, res.stdout[-3000:]
    assert kubectl.ok("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.kubeletVersion}") == before


def test_upgrade_to_the_running_version_changes_nothing(kubectl):
    """Every node already runs the version: the version step check passes, each node's
    running version is read through the API (kubernetes.core) and found current, and no
    node is drained, upgraded or restarted."""
    res = run_playbook("playbooks/upgrade.yml")
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    recap = res.stdout.split("PLAY RECAP")[-1]
    for name in CONTROL_PLANES + WORKERS:
        line = [row for row in recap.splitlines() if row.startswith(name)]
        assert line and " changed=0 " in line[0], recap
    assert "Refuse to skip a minor version" in res.stdout
    nodes = kubectl.json("get", "nodes")["items"]
    assert not any(n["spec"].get("unschedulable") for n in nodes)
