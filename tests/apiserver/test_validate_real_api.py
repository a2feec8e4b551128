"""cluster_validate's Kubernetes checks and cluster_report against the real API server.

The session's kube-apiserver + etcd (realapi.py) holds the releases the add-on tests
installed (and removed). It has no kubelet, controller-manager or scheduler, so:

- Nodes: the test registers two Node objects and writes their status (Ready, allocatable
  GPUs and RDMA devices) through the API the way a kubelet does; "kubelet stand-in" in a
  test name says so. The module reads them like any node.
- Workloads: no controller ever reports on a Deployment here, so the add-on check fails
  with that reason, which is the truth on this server; the test then writes one
  Deployment's status as the deployment controller would (stand-in again) to see it pass.
- Pods never run: the RuntimeClass check's pod stays Pending and the check fails, naming it.

Everything else (readyz, etcd health, helm's release list, the objects and the module's
argv) is real. Run with the module through ansible-playbook, as playbooks/validate.yml does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from xml.etree import ElementTree as ET

import pytest
from playbook import ROOT, VENV_BIN, run_play, run_role

sys.path.insert(0, str(ROOT / "tests" / "unit" / "validate"))
from pngdecode import png_pixels  # noqa: E402 - the unit tests' decoder of Chromium's screenshots

NODES = [
    {"name": "cp1", "kind": "service", "address": "127.0.0.1", "roles": ["kube_control_plane"], "kubernetes": True,
     "labels": {"node-role.kubernetes.io/control-plane": ""}, "taints": ["node-role.kubernetes.io/control-plane:NoSchedule"]},
    {"name": "gpu1", "kind": "worker", "address": "10.0.0.21", "roles": ["kube_node", "gpu_nvidia", "rdma"], "kubernetes": True,
     "labels": {"nvidia.com/gpu.present": "true"}, "gpus": {"nvidia.com/gpu": 8}, "rdma": ["rdma/rdma_shared_device_a"]},
]
ADDONS = [{"name": "sealed-secrets", "namespace": "kube-system"}, {"name": "kueue", "namespace": "kueue-system"},
          # Removed by test_install_real_api's last test.
          {"name": "local-disk", "namespace": "local-disk-storage"}]
STATE: dict = {}


def _validate(apiserver, tmp_path, checks, skip=(), addons=None, timeout=20):
    addons = ADDONS if addons is None else addons
    task = {"name": "Validate", "clusterdos.cluster.cluster_validate": {
        "checks": list(checks), "skip": list(skip), "kubeconfig": str(apiserver.kubeconfig), "nodes": NODES,
        "addons": addons, "timeout": timeout, "host": "localhost",
        "kubectl_path": str(VENV_BIN / "kubectl"), "helm_path": str(VENV_BIN / "helm")}, "register": "v"}
    run = run_play(tmp_path, [task], {}, dump="v")
    assert run.ok, run.tail()
    assert run.changed == 0, "validation changed something"
    return {c["name"]: c for c in run.results["checks"]}


def _apply(apiserver, tmp_path, obj):
    path = tmp_path / ("%s-%s.json" % (obj["kind"], obj["metadata"]["name"]))
    path.write_text(json.dumps(obj))
    # --validate=false: kubectl's client-side schema download is refused by this bare server (realapi.py).
    res = apiserver.kubectl("apply", "--validate=false", "--server-side", "-f", str(path), check=False)
    assert res.returncode == 0, res.stderr


def _node_status(apiserver, name, ready, allocatable):
    """Write a node's status through the status subresource, as its kubelet does."""
    status = {"status": {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                        "reason": "KubeletReady" if ready else "KubeletNotReady",
                        "message": "kubelet is posting ready status" if ready else "container runtime is down",
                        "lastHeartbeatTime": "2026-12-01T00:00:00Z", "lastTransitionTime": "2026-12-01T00:00:00Z"}],
        "capacity": allocatable, "allocatable": allocatable}}
    res = apiserver.kubectl("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps(status),
                            check=False)
    assert res.returncode == 0, res.stderr


ALLOCATABLE = {"cp1": {"cpu": "4", "memory": "8Gi", "pods": "110"},
               "gpu1": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8",
                        "rdma/rdma_shared_device_a": "63"}}


def test_nodes_missing_from_the_api_fail_naming_them(apiserver, tmp_path):
    results = _validate(apiserver, tmp_path, ["kubernetes.nodes_ready", "kubernetes.gpus"])
    assert results["kubernetes.nodes_ready"]["status"] == "failed"
    assert results["kubernetes.nodes_ready"]["detail"] == "not registered: cp1, gpu1"
    assert results["kubernetes.gpus"]["status"] == "failed"
    assert "gpu1: not registered" in results["kubernetes.gpus"]["detail"]


def test_registered_ready_nodes_pass_kubelet_stand_in(apiserver, tmp_path):
    for node in NODES:
        taints = [dict(zip(("key", "effect"), t.split(":"))) for t in node.get("taints", [])]
        _apply(apiserver, tmp_path, {"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node["name"], "labels": dict(node["labels"], **{"kubernetes.io/hostname": node["name"]})},
            "spec": {"taints": taints} if taints else {}})
        _node_status(apiserver, node["name"], True, ALLOCATABLE[node["name"]])
    results = _validate(apiserver, tmp_path, ["kubernetes"],
                        skip=["kubernetes.coredns", "kubernetes.runtime_classes", "kubernetes.storage_classes"])
    STATE["healthy"] = results
    for name in ("kubernetes.nodes_ready", "kubernetes.labels_taints", "kubernetes.control_plane", "kubernetes.gpus",
                 "kubernetes.rdma"):
        assert results[name]["status"] == "passed", (name, results[name]["detail"])
    assert results["kubernetes.nodes_ready"]["detail"] == "2 nodes registered and Ready"
    assert results["kubernetes.gpus"]["detail"].startswith("8 GPUs allocatable on 1 nodes")
    assert "readyz ok (etcd included)" in results["kubernetes.control_plane"]["detail"]
    assert results["kubernetes.metrics"]["status"] == "skipped"


def test_cilium_without_running_agents_fails(apiserver):
    results = STATE["healthy"]
    # test_kubernetes_cilium_real_api installed the chart; no agent ever ran (no kubelet).
    assert results["kubernetes.cilium"]["status"] == "failed"
    assert results["kubernetes.cilium"]["detail"] == "cilium agents ready 0 of 0"


def test_addon_releases_missing_or_not_rolled_out_fail_with_the_reason(apiserver):
    detail = STATE["healthy"]["kubernetes.addons"]["detail"]
    assert STATE["healthy"]["kubernetes.addons"]["status"] == "failed"
    assert "local-disk: no Helm release in local-disk-storage" in detail
    # Installed, but no controller has ever rolled its Deployment out on this server.
    assert ("sealed-secrets: workloads not ready: Deployment kube-system/sealed-secrets-controller not yet rolled out "
            "(its controller has not seen generation 1)") in detail
    assert "kueue: workloads not ready: Deployment kueue-system/" in detail


def test_addon_releases_with_available_workloads_pass_controller_stand_in(apiserver, tmp_path):
    status = {"status": {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1,
                         "availableReplicas": 1}}
    res = apiserver.kubectl("patch", "deployment", "sealed-secrets-controller", "-n", "kube-system",
                            "--subresource=status", "--type=merge", "-p", json.dumps(status), check=False)
    assert res.returncode == 0, res.stderr
    results = _validate(apiserver, tmp_path, ["kubernetes.addons"], addons=[ADDONS[0]])
    assert results["kubernetes.addons"]["status"] == "passed", results["kubernetes.addons"]["detail"]
    assert results["kubernetes.addons"]["detail"] == \
        "deployed and ready: sealed-secrets sealed-secrets-2.17.9 (0 pods, 1 workloads ready)"


def test_a_pod_that_never_runs_fails_the_runtime_class_check_service_account_stand_in(apiserver, tmp_path):
    _apply(apiserver, tmp_path, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"},
                                 "handler": "runsc"})
    # The controller manager's service-account controller gives every namespace its default ServiceAccount, which a
    # pod needs; none runs here, so the test creates it (the module creates the namespace itself, as on a cluster).
    _apply(apiserver, tmp_path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusterdos-validate"}})
    _apply(apiserver, tmp_path, {"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "default", "namespace": "clusterdos-validate"}})
    results = _validate(apiserver, tmp_path, ["kubernetes.runtime_classes"], timeout=5)
    result = results["kubernetes.runtime_classes"]
    assert result["status"] == "failed"
    assert re.search(r"gvisor: pod clusterdos-validate-rc-gvisor did not succeed within 5 s \(phase Pending", result["detail"]), \
        result["detail"]
    # The check removed its pod again.
    pods = apiserver.get("pods", "-n", "clusterdos-validate")["items"]
    assert not [p for p in pods if not p["metadata"].get("deletionTimestamp")], pods


def test_a_node_gone_not_ready_fails_naming_it_kubelet_stand_in(apiserver, tmp_path):
    _node_status(apiserver, "gpu1", False, ALLOCATABLE["gpu1"])
    results = _validate(apiserver, tmp_path, ["kubernetes.nodes_ready", "kubernetes.labels_taints"])
    assert results["kubernetes.nodes_ready"]["status"] == "failed"
    assert results["kubernetes.nodes_ready"]["detail"] == "not Ready: gpu1"
    assert results["kubernetes.labels_taints"]["status"] == "passed"
    STATE["not_ready"] = results


def test_the_report_draws_the_real_topology_and_the_add_on_runs(apiserver, chart_repo, tmp_path):
    """cluster_report from these results, with what a real add-on run did, opened in headless Chromium."""
    (tmp_path / "addons").mkdir()
    addons = run_role(tmp_path / "addons", {
        "addons_enabled": ["sealed_secrets"], "addons_chart_mirror": chart_repo,
        "addons_kubeconfig": str(apiserver.kubeconfig), "addons_helm_binary": str(VENV_BIN / "helm"),
        "addons_wait": False, "addons_atomic": False, "addons_helm_openapi_validation": False},
        dump="__addons_progress")
    assert addons.ok, addons.tail()
    assert [(s["name"], s["action"]) for s in addons.results] == [("sealed_secrets", "unchanged")]
    results = list(STATE["healthy"].values()) + list(STATE["not_ready"].values())
    dest = tmp_path / "report"
    task = {"name": "Report", "clusterdos.cluster.cluster_report": {
        "results": results, "nodes": NODES, "networks": [{"name": "nodes", "cidr": "10.0.0.0/24"}],
        "cluster_name": "realapi", "dest": str(dest), "releases": addons.results,
        "generated": "2026-12-01T00:00:00Z"}, "register": "r"}
    run = run_play(tmp_path, [task], {}, dump="r")
    assert run.ok, run.tail()
    html = (dest / "validation.html").read_text()
    svg = ET.fromstring(re.search(r"<svg.*?</svg>", html, re.S).group(0))
    ns = "{http://www.w3.org/2000/svg}"
    nodes = {g.get("data-node"): g.get("class") for g in svg.iter(ns + "g")}
    # gpu1 is named by the failed checks (NotReady); cp1 is not.
    assert nodes == {"cp1": "node passed", "gpu1": "node failed"}
    assert len([r for r in svg.iter(ns + "rect") if r.find(ns + "title") is not None]) == 8
    assert 'data-release="kube-system/sealed-secrets"' in html and '<td class="action">unchanged</td>' in html
    doc = json.loads((dest / "validation.json").read_text())
    assert doc["releases"][0]["action"] == "unchanged"
    assert doc["summary"]["failed"] >= 3
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium): the report was checked as text only")
    shot = tmp_path / "shot.png"
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    "--user-data-dir=%s" % (tmp_path / "profile"), "--screenshot=%s" % shot, "--window-size=1100,900",
                    (dest / "validation.html").as_uri()], check=True, capture_output=True, timeout=120)
    _w, _h, pixels = png_pixels(shot.read_bytes())
    colors = set(pixels)
    for rgb in ((0x1E, 0x8E, 0x3E), (0xD9, 0x30, 0x25), (0x76, 0xB9, 0x00)):
        assert bytes(rgb) in colors, "colour #%02x%02x%02x not drawn" % rgb
