"""playbooks/runtime_classes.yml, unchanged, against the session's real API server.

The inventory is a site's: a first control plane (played on this machine, with the test API
server's admin kubeconfig as its kubeconfig), two hosts in the gVisor group, one of them also
in the group of a class of the site's own (runtime_classes_extra, with an overhead), a worker
in neither, and no Kata host. Every host but the control plane is at an address where nothing
listens, so a run that contacted one would fail UNREACHABLE: the stage talks to the API only.

No kubelet runs here, so the test registers the Node objects the role labels (kubelet
stand-in), and removes what it created at the end (the validation tests after it count the
cluster's nodes and RuntimeClasses). Runs in order: check mode on the empty server, the
apply, a second run (changed=0).

The control plane is this machine (connection local), so scripts/coverage.py does not count
these runs as the role's tasks run on a real host: that needs a control plane of a lab
scenario, or a play that may run on the controller by design (as addons.yml's addons_hosts).
"""

from __future__ import annotations

import json

import pytest
from playbook import HERE_HOST, NOWHERE, run_playbook, site_inventory

# The site's own class: a group of its own, and an overhead charged to each of its pods.
EXTRA = {"name": "crun", "handler": "crun", "group": "crun_nodes", "overhead": {"cpu": "100m", "memory": "32Mi"}}
# Host -> the Node name it registers as (clusterdos_node_name where it differs).
NODE_NAMES = {"gv1": "gv1", "gv2": "gv2.site.test", "wk1": "wk1"}
LABEL = "clusterdos.io/runtime-{name}"
# What each node carries afterwards; wk1 runs no sandbox runtime.
WANT_LABELS = {"gv1": {"gvisor"}, "gv2.site.test": {"gvisor", "crun"}, "wk1": set()}
STATE: dict = {}


@pytest.fixture(scope="module")
def inventory(apiserver):
    hosts = {
        "cp1": dict(HERE_HOST, clusterdos_node_ip="10.0.0.1"),
        "gv1": dict(NOWHERE, clusterdos_node_ip="10.0.0.11"),
        "gv2": dict(NOWHERE, clusterdos_node_ip="10.0.0.12", clusterdos_node_name=NODE_NAMES["gv2"]),
        "wk1": dict(NOWHERE, clusterdos_node_ip="10.0.0.13"),
    }
    groups = {"kube_control_plane": ["cp1"], "kube_node": ["gv1", "gv2", "wk1"], "gvisor": ["gv1", "gv2"],
              "crun_nodes": ["gv2"]}
    all_vars = {"clusterdos_time_servers": ["10.0.0.254"], "kubernetes_cluster_node_cidr": "10.0.0.0/24",
                # No add-on stage in this inventory: the preflight has no chart to read.
                "addons_enabled": [],
                "runtime_classes_extra": [EXTRA], "runtime_classes_kubeconfig": str(apiserver.kubeconfig)}
    return site_inventory(hosts, groups, all_vars)


@pytest.fixture(scope="module", autouse=True)
def registered_nodes(apiserver, tmp_path_factory):
    """The nodes as their kubelets register them (kubelet stand-in), removed again with the classes."""
    d = tmp_path_factory.mktemp("nodes")
    for node in NODE_NAMES.values():
        path = d / f"{node}.json"
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node, "labels": {"kubernetes.io/hostname": node, "kubernetes.io/os": "linux"}}}))
        # --validate=false: kubectl's client-side schema download is refused by this bare server (realapi.py).
        res = apiserver.kubectl("create", "--validate=false", "-f", str(path), check=False)
        assert res.returncode == 0, res.stderr
    yield
    apiserver.kubectl("delete", "runtimeclass", "gvisor", "kata", EXTRA["name"], "--ignore-not-found", check=False)
    apiserver.kubectl("delete", "node", *NODE_NAMES.values(), "--ignore-not-found", check=False)


def _classes(apiserver) -> dict:
    return {c["metadata"]["name"]: c for c in apiserver.get("runtimeclass")["items"]}


def _sandbox_labels(apiserver) -> dict:
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in apiserver.get("node")["items"]}
    return {name: {k.rsplit("-", 1)[1] for k, v in nodes[name].items() if k.startswith("clusterdos.io/runtime-") and v == "true"}
            for name in NODE_NAMES.values()}


def test_check_mode_on_the_empty_server_says_what_would_change_and_changes_nothing(apiserver, inventory, tmp_path):
    run = run_playbook(tmp_path, "runtime_classes.yml", inventory, check=True)
    assert run.ok, run.tail()
    recap = run.recap()
    assert "UNREACHABLE" not in run.proc.stdout, run.tail()
    # Three node labels and two classes would be applied, all from the control plane.
    assert recap["cp1"]["changed"] == 2, run.tail()
    assert not set(recap) & {"gv1", "gv2", "wk1"}, recap
    assert _classes(apiserver) == {}
    assert _sandbox_labels(apiserver) == {n: set() for n in NODE_NAMES.values()}


def test_the_playbook_applies_the_classes_and_labels_their_nodes(apiserver, inventory, tmp_path):
    run = run_playbook(tmp_path, "runtime_classes.yml", inventory)
    assert run.ok, run.tail()
    assert "UNREACHABLE" not in run.proc.stdout, run.tail()
    assert run.recap()["cp1"]["changed"] == 2, run.tail()
    classes = _classes(apiserver)
    # Kata's group has no hosts: no class that no node could run.
    assert set(classes) == {"gvisor", "crun"}
    assert classes["gvisor"]["handler"] == "runsc"
    assert classes["gvisor"]["scheduling"] == {"nodeSelector": {LABEL.format(name="gvisor"): "true"}}
    assert "overhead" not in classes["gvisor"]
    assert classes["crun"]["handler"] == "crun"
    assert classes["crun"]["scheduling"] == {"nodeSelector": {LABEL.format(name="crun"): "true"}}
    assert classes["crun"]["overhead"] == {"podFixed": EXTRA["overhead"]}
    assert _sandbox_labels(apiserver) == WANT_LABELS
    # The role adds its label; the kubelet's own labels stay.
    node = apiserver.get("node", NODE_NAMES["gv2"])
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == NODE_NAMES["gv2"]
    STATE["versions"] = {n: c["metadata"]["resourceVersion"] for n, c in classes.items()}


def test_a_second_run_changes_nothing(apiserver, inventory, tmp_path):
    run = run_playbook(tmp_path, "runtime_classes.yml", inventory, diff=True)
    assert run.ok, run.tail()
    changed = {h: r["changed"] for h, r in run.recap().items()}
    assert "cp1" in changed and set(changed.values()) == {0}, run.tail()
    assert {n: c["metadata"]["resourceVersion"] for n, c in _classes(apiserver).items()} == STATE["versions"]
    assert _sandbox_labels(apiserver) == WANT_LABELS


def _with_handler(inventory: dict, handler: str) -> dict:
    changed = json.loads(json.dumps(inventory))
    changed["all"]["vars"]["runtime_classes_extra"] = [dict(EXTRA, handler=handler)]
    return changed


def test_check_mode_says_a_changed_handler_would_replace_the_class(apiserver, inventory, tmp_path):
    run = run_playbook(tmp_path, "runtime_classes.yml", _with_handler(inventory, "crun-v2"), check=True)
    assert run.ok, run.tail()
    assert run.recap()["cp1"]["changed"] == 1, run.tail()
    assert {n: c["metadata"]["resourceVersion"] for n, c in _classes(apiserver).items()} == STATE["versions"]


def test_a_changed_handler_replaces_the_class(apiserver, inventory, tmp_path):
    """The API refuses to change a RuntimeClass's handler in place ("field is immutable"): the role replaces it."""
    run = run_playbook(tmp_path, "runtime_classes.yml", _with_handler(inventory, "crun-v2"))
    assert run.ok, run.tail()
    assert run.recap()["cp1"]["changed"] == 2, run.tail()
    classes = _classes(apiserver)
    assert classes["crun"]["handler"] == "crun-v2"
    assert classes["crun"]["scheduling"] == {"nodeSelector": {LABEL.format(name="crun"): "true"}}
    assert classes["crun"]["overhead"] == {"podFixed": EXTRA["overhead"]}
    # Only that class was replaced.
    assert classes["gvisor"]["metadata"]["resourceVersion"] == STATE["versions"]["gvisor"]
    assert _sandbox_labels(apiserver) == WANT_LABELS
