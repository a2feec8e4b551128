"""kubernetes_cluster's node entry points through kubernetes.core against a real API server
(the kube-apiserver and etcd of ../shared/k8s, see tests/apiserver/realapi.py): the
hardware fact discovered by the real gpu_facts and rdma_facts modules (from sysfs trees
built here: an HGX H100 node with an active InfiniBand port, a control plane with
nothing) becomes node labels; check mode first (changes reported, nothing written), then
apply, then apply again with --diff (changed=0); stale owned labels are replaced or
removed, labels nobody owns stay; upgrade_check refuses a node two minors behind. No pod runs there (no
kubelet), so drain and CSR approval are left to molecule kubeadm_cluster."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "apiserver"))

import realapi  # noqa: E402

VENV_BIN = ROOT / ".venv" / "bin"
pytestmark = pytest.mark.skipif(not (ROOT.parent / "shared" / "k8s").is_dir(),
                                reason="needs ../shared/k8s (kube-apiserver and etcd binaries)")


def _pci(root: Path, address: str, vendor: str, device: str, klass: str) -> None:
    d = root / "bus" / "pci" / "devices" / address
    d.mkdir(parents=True)
    for name, value in (("vendor", vendor), ("device", device), ("class", klass)):
        (d / name).write_text(value + "\n")


def _ib_port(root: Path, name: str, state: str) -> None:
    port = root / "class" / "infiniband" / name / "ports" / "1"
    port.mkdir(parents=True)
    for key, value in (("state", state), ("phys_state", "5: LinkUp"), ("link_layer", "InfiniBand")):
        (port / key).write_text(value + "\n")


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    server = realapi.start_apiserver(tmp_path_factory.mktemp("apiserver"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab(api, tmp_path_factory):
    """Node objects cp1 and gpu1, sysfs trees for each, and an inventory of the two."""
    d = tmp_path_factory.mktemp("nodes")
    hgx, bare = d / "sys-gpu1", d / "sys-cp1"
    for i in range(8):
        _pci(hgx, f"0000:{0x18 + i:02x}:00.0", "0x10de", "0x2330", "0x030200")
    _ib_port(hgx, "mlx5_0", "4: ACTIVE")
    bare.mkdir()
    for name, labels in (("cp1", {"clusterdos.io/gpu.type": "a100"}),
                         ("gpu1", {"clusterdos.io/gpu.architecture": "volta", "site.example/owner": "ops"})):
        subprocess.run([str(VENV_BIN / "kubectl"), "--kubeconfig", str(api.kubeconfig), "create", "--validate=false", "-f", "-"],
                       input=json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}),
                       text=True, check=True, capture_output=True, timeout=60)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {
        "kube_control_plane": {"hosts": {"cp1": dict(local, sysfs=str(bare))}},
        "kube_node": {"hosts": {"gpu1": dict(local, sysfs=str(hgx),
                                             kubernetes_cluster_node_labels={"clusterdos.io/pool": "train"},
                                             kubernetes_cluster_node_taints=["nvidia.com/gpu=present:NoSchedule"])}},
    }}}
    (d / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (d / "vars.json").write_text(json.dumps({
        "__kubernetes_cluster_admin_conf": str(api.kubeconfig),
        "kubernetes_cluster_control_plane_taints": ["node-role.kubernetes.io/control-plane:NoSchedule"],
        "kubernetes_cluster_version": "1.36.2",
        "kubernetes_cluster_api_client_packages": [],
    }))
    return d


def _play(lab: Path, tasks_from: str, *args: str) -> subprocess.CompletedProcess:
    """Discover each host's hardware from its sysfs tree, then TASKS_FROM on cp1."""
    play = [
        {"name": "hardware", "hosts": "all", "gather_facts": False, "tasks": [
            {"name": "Discover GPUs", "clusterdos.cluster.gpu_facts": {"facts": {}, "sysfs_root": "{{ sysfs }}"}},
            {"name": "Discover RDMA devices", "clusterdos.cluster.rdma_facts": {
                "facts": "{{ ansible_facts['clusterdos_hw'] }}", "sysfs_root": "{{ sysfs }}"}}]},
        {"name": "under test", "hosts": "cp1", "gather_facts": False, "tasks": [
            {"name": "Run the entry point", "ansible.builtin.include_role": {
                "name": "clusterdos.cluster.kubernetes_cluster", "tasks_from": tasks_from}}]},
    ]
    (lab / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(lab / "inventory.yml"), "-e", f"@{lab / 'vars.json'}",
                           str(lab / "play.yml"), *args], capture_output=True, text=True, env=env, cwd=lab, timeout=600, check=False)


def _changed(res: subprocess.CompletedProcess) -> int:
    m = re.search(r"^cp1\s+:.*?changed=(\d+)", res.stdout, re.MULTILINE)
    assert m, res.stdout[-3000:] + res.stderr[-2000:]
    return int(m.group(1))


def _nodes(api) -> dict:
    return {n["metadata"]["name"]: n for n in api.get("nodes")["items"]}


def test_check_mode_reports_and_writes_nothing(api, lab):
    before = _nodes(api)
    res = _play(lab, "nodes.yml", "--check")
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert _changed(res) == 2  # the label task (both nodes) and the taint task (both nodes)
    after = _nodes(api)
    for name in before:
        assert after[name]["metadata"].get("labels") == before[name]["metadata"].get("labels")
        assert after[name]["spec"].get("taints") == before[name]["spec"].get("taints")


def test_apply_sets_hardware_and_inventory_labels_and_taints(api, lab):
    res = _play(lab, "nodes.yml")
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert _changed(res) == 2
    nodes = _nodes(api)
    gpu1 = nodes["gpu1"]["metadata"]["labels"]
    assert {k: v for k, v in gpu1.items() if k.startswith("clusterdos.io/")} == {
        "clusterdos.io/gpu.vendor": "nvidia", "clusterdos.io/gpu.count": "8", "clusterdos.io/gpu.type": "h100",
        "clusterdos.io/gpu.architecture": "hopper", "clusterdos.io/rdma.ib": "true", "clusterdos.io/rdma.roce": "false",
        "clusterdos.io/pool": "train"}
    assert gpu1["site.example/owner"] == "ops"
    cp1 = nodes["cp1"]["metadata"]["labels"]
    assert cp1["clusterdos.io/gpu.vendor"] == "none" and cp1["clusterdos.io/gpu.count"] == "0"
    assert "clusterdos.io/gpu.type" not in cp1  # stale: this node has no GPU
    assert (cp1["clusterdos.io/rdma.ib"], cp1["clusterdos.io/rdma.roce"]) == ("false", "false")  # no RDMA device
    # The API server's admission put node.kubernetes.io/not-ready on both at creation (no
    # kubelet reports here): a taint nobody listed, left alone.
    gpu1_taints = {(t["key"], t.get("value"), t["effect"]) for t in nodes["gpu1"]["spec"]["taints"]}
    cp1_taints = {(t["key"], t.get("value"), t["effect"]) for t in nodes["cp1"]["spec"]["taints"]}
    assert gpu1_taints == {("nvidia.com/gpu", "present", "NoSchedule"), ("node.kubernetes.io/not-ready", None, "NoSchedule")}
    assert cp1_taints == {("node-role.kubernetes.io/control-plane", None, "NoSchedule"),
                          ("node.kubernetes.io/not-ready", None, "NoSchedule")}


def test_apply_again_changes_nothing(api, lab):
    res = _play(lab, "nodes.yml", "--diff")
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    assert _changed(res) == 0, res.stdout[-4000:]


def test_upgrade_check_refuses_a_node_two_minors_behind(api, lab):
    subprocess.run([str(VENV_BIN / "kubectl"), "--kubeconfig", str(api.kubeconfig), "patch", "node", "gpu1",
                    "--subresource=status", "--type=merge", "-p", json.dumps({"status": {"nodeInfo": {"kubeletVersion": "v1.34.1"}}})],
                   check=True, capture_output=True, text=True, timeout=60)
    res = _play(lab, "upgrade_check.yml")
    assert res.returncode != 0
    assert "gpu1=v1.34.1 cannot go to 1.36.2 in one step" in res.stdout, res.stdout[-3000:]
