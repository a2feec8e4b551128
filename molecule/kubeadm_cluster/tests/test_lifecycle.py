"""Lifecycle on the live cluster, on the spare host k8s-w3 while a workload runs:

- a join that fails half-way (add_node.yml; another process holds the kubelet's health
  port, so kubeadm gives up waiting for a healthy kubelet after the join configuration's
  short timeout, with the kubelet already started and bootstrapped) is undone with
  kubeadm reset and reported with kubeadm's reason, and leaves no join token on disk;
- a kubeadm init that fails the same way on that host (as the first control plane of a
  cluster of its own, molecule/kubeadm_cluster/failed_init.yml) is undone and reported;
- with the port free again, kubernetes_add_node.yml run on its own (so it discovers the
  node's hardware itself) joins the node: nothing either failure left stood in the way,
  only the new node changes (plus /etc/hosts and the pod route on the others), and the
  new node runs a pod;
- remove_node.yml drains, deletes and resets it, also removing a container left in
  containerd's Kubernetes namespace that kubeadm reset does not know; reset.yml then
  changes nothing, upgrade.yml refuses a skipped minor against the real API server, and an
  upgrade to the version every node runs changes nothing.

Runs after test_cluster.py (file order); the spare host is put into kube_node by an extra
inventory for these runs only."""

from __future__ import annotations

import json

import pytest

from conftest import (CONTROL_PLANES, EPHEMERAL, SCENARIO, TEST_IMAGE, WORKERS, eventually, http_get, lab_host,
                      run_playbook)

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
# A transient unit on the spare host that holds the kubelet's health port (127.0.0.1:10248).
HOLDER = "clusterdos-test-hold-kubelet-healthz"
# kubeadm's wait for a healthy kubelet, shortened through the role's kubeadm configuration
# as data (the default is 4 minutes); the port stays held, so the wait can only fail.
SHORT_WAIT = {"timeouts": {"kubeletHealthCheck": "10s"}}
JSON_OUT = {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"}
# Left by a kubeadm run on the host (kubeadm reset removes them).
KUBEADM_STATE = ("/etc/kubernetes/kubelet.conf", "/etc/kubernetes/bootstrap-kubelet.conf", "/etc/kubernetes/admin.conf",
                 "/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/manifests/kube-apiserver.yaml",
                 "/etc/kubernetes/manifests/etcd.yaml", "/var/lib/kubelet/config.yaml", "/var/lib/etcd/member")
LEFT_CONTAINER = "clusterdos-test-left-behind"


@pytest.fixture(scope="module")
def spare_inventory():
    path = EPHEMERAL / "spare-worker.yml"
    path.write_text("all:\n  children:\n    kube_node:\n      hosts:\n        %s: {}\n" % SPARE)
    return str(path)


def _doc(stdout: str) -> dict:
    """The ansible.posix.json callback's document."""
    return json.loads(stdout[stdout.index("{"):])


def _changed_tasks(stdout: str) -> dict[str, set[str]]:
    """host -> names of tasks that changed."""
    out: dict[str, set[str]] = {}
    for play in _doc(stdout)["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if res.get("changed"):
                    # "role : task" in the callback's names; the task's own name is what counts.
                    out.setdefault(host, set()).add(task["task"]["name"].split(" : ", 1)[-1])
    return out


def _results(stdout: str, name: str, host: str = SPARE) -> list[dict]:
    """The results `host` got from the task called `name` (a task may run more than once)."""
    return [task["hosts"][host] for play in _doc(stdout)["plays"] for task in play["tasks"]
            if task["task"]["name"].split(" : ", 1)[-1] == name and host in task["hosts"]]


def _no_kubeadm_state_left(host) -> None:
    left = [path for path in KUBEADM_STATE if host.file(path).exists]
    assert not left, f"left on {SPARE}: {left}"
    assert not host.service("kubelet").is_running
    # No container of the attempt still runs (kubeadm reset stops and removes the pods).
    running = host.run("ctr --namespace k8s.io tasks list --quiet")
    assert running.rc == 0 and running.stdout.strip() == "", running.stdout


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
def healthz_held():
    """Another process listens on the kubelet's health address on the spare host (kubeadm's
    preflight does not look at that port): the kubelet starts but cannot serve its health
    endpoint there, and kubeadm's wait for it answers 404 until it gives up."""
    host = lab_host(SPARE)
    res = host.run(f"systemd-run --unit {HOLDER} python3 -m http.server --bind 127.0.0.1 10248")
    assert res.rc == 0, res.stderr
    eventually(lambda: host.socket("tcp://127.0.0.1:10248").is_listening, timeout=30, interval=1)
    yield host
    host.run(f"systemctl stop {HOLDER}")


@pytest.fixture(scope="module")
def failed_join(kubectl, workload, spare_inventory, healthz_held):
    """add_node.yml for the spare host: base and the runtime go in, the join fails."""
    res = run_playbook("playbooks/add_node.yml", "-i", spare_inventory, "-e", f"node={SPARE}",
                       "-e", json.dumps({"kubernetes_cluster_join_configuration": SHORT_WAIT}), env_extra=JSON_OUT)
    assert res.returncode != 0, "the join did not fail: " + res.stdout[-3000:]
    return res.stdout


@pytest.fixture(scope="module")
def failed_init(failed_join, healthz_held):
    """kubeadm init on the spare host, the only member of the spare group as its control plane."""
    res = run_playbook(SCENARIO / "failed_init.yml", "-e", "kubernetes_cluster_control_plane_group=spare",
                       # The control planes' kubernetes Python client is not needed to fail.
                       "-e", json.dumps({"kubernetes_cluster_api_client_packages": [],
                                         "kubernetes_cluster_init_configuration": SHORT_WAIT}),
                       env_extra=JSON_OUT)
    assert res.returncode != 0, "the init did not fail: " + res.stdout[-3000:]
    return res.stdout


@pytest.fixture(scope="module")
def added(kubectl, workload, spare_inventory, failed_join, failed_init, healthz_held):
    """The port free again, the Kubernetes part of add_node.yml run on its own."""
    assert healthz_held.run(f"systemctl stop {HOLDER}").rc == 0
    res = run_playbook("playbooks/kubernetes_add_node.yml", "-i", spare_inventory, "-e", f"node={SPARE}",
                       env_extra=JSON_OUT)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    return res.stdout


def _failure_reported_and_undone(output, step):
    """The role's rescue for a failed `kubeadm STEP` (join or init) ran: kubeadm reset undid it
    (rc 0) and the report gives kubeadm's own reason, not its closing hint about stack traces,
    from past preflight (files written, kubelet started)."""
    report = _results(output, f"Report the failed {step}")
    assert report and report[0].get("failed"), f"no failed-{step} report"
    msg = report[0]["msg"]
    assert msg.startswith(f"kubeadm {step} failed on {SPARE} (undone with kubeadm reset"), msg
    assert "kubelet" in msg and "stack trace" not in msg and "phase preflight" not in msg, msg
    undo = _results(output, f"Undo the failed {step} (kubeadm reset)")
    assert undo and undo[0]["rc"] == 0, undo


def test_a_failed_join_is_undone_and_reported(failed_join, healthz_held):
    _failure_reported_and_undone(failed_join, "join")
    # The attempt had got as far as a running, bootstrapped kubelet: undone.
    _no_kubeadm_state_left(healthz_held)
    # The join configuration holds the bootstrap token: not left on disk by a failure either.
    assert not healthz_held.file("/etc/kubernetes/clusterdos/kubeadm-join.yaml").exists


def test_a_failed_init_is_undone_and_reported(failed_init, healthz_held):
    _failure_reported_and_undone(failed_init, "init")
    # Certificates, kubeconfigs (admin.conf: a re-run would take it for a control plane),
    # static pod manifests and etcd's data: all gone, nothing running.
    _no_kubeadm_state_left(healthz_held)


def test_add_node_joins_the_new_worker_ready(kubectl, added):
    assert SPARE in _changed_tasks(added), "the new node did not change"
    # The playbook run on its own finds the node's hardware itself.
    discovery = _results(added, "Read facts and hardware unless this run already has them")
    assert discovery and not discovery[0].get("skipped"), discovery
    node = kubectl.json("get", "node", SPARE)
    assert [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True"
    assert node["metadata"]["labels"].get("clusterdos.io/pool") == "lab-workers"
    # Its hardware labels, from the clusterdos_hw fact that discovery set.
    assert node["metadata"]["labels"].get("clusterdos.io/gpu.count") is not None
    assert node["metadata"]["labels"].get("clusterdos.io/rdma.ib") in ("true", "false")


def test_add_node_touches_other_hosts_only_where_it_must(added):
    for host, tasks in _changed_tasks(added).items():
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
    host = lab_host(SPARE)
    # A container in containerd's Kubernetes namespace that no pod owns (made with ctr, as
    # a debugging session would): kubeadm reset removes only the CRI's pods, so the role's
    # reset has to remove it.
    left = host.run(f"ctr --namespace k8s.io run --detach registry.k8s.io/pause:3.10.2 {LEFT_CONTAINER}")
    assert left.rc == 0, left.stderr
    res = run_playbook("playbooks/remove_node.yml", "-i", spare_inventory, "-e", f"node={SPARE}", env_extra=JSON_OUT)
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    names = [n["metadata"]["name"] for n in kubectl.json("get", "nodes")["items"]]
    assert SPARE not in names
    removal = _results(res.stdout, "Remove the pod containers left behind (task, then container)")
    assert removal and LEFT_CONTAINER in [r["item"] for r in removal[0]["results"]], removal
    assert host.run("ctr --namespace k8s.io containers list --quiet").stdout.split() == []
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
