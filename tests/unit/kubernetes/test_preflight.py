"""playbooks/kubernetes_preflight.yml rejects bad inventories before any host changes,
with a message that says what to fix. Runs the real playbook on the controller."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from .conftest import ROOT, inventory, run_playbook

PREFLIGHT = ROOT / "playbooks" / "kubernetes_preflight.yml"


def _incompatible():
    inv = inventory()
    inv["all"]["children"]["slurm_compute"]["hosts"] = {"cp2": {}}
    return inv


BAD = [
        (inventory(control_planes=2), "etcd needs an odd number"),
        (inventory(control_planes=3, kubernetes_cluster_endpoint_mode="none"), "set kubernetes_cluster_endpoint_mode"),
        (inventory(control_planes=3, kubernetes_cluster_endpoint=""), "set kubernetes_cluster_endpoint_mode"),
        (inventory(kubernetes_cluster_pod_cidr="10.96.0.0/16"), "pod network 10.96.0.0/16 overlaps service network"),
        (inventory(kubernetes_cluster_pod_cidr="192.168.0.0/16"), "overlaps node network"),
        (inventory(control_planes=1, kubernetes_cluster_pod_cidr="192.168.10.0/24"), "overlaps node network"),
        (inventory(clusterdos_kubernetes_version="1.29.4"), "supports 1.31 to 1.36"),
        (inventory(clusterdos_kubernetes_version="v1.34.1"), "without a v"),
        (inventory(kubernetes_cluster_endpoint="192.168.99.5"), "is not in kubernetes_cluster_node_cidr"),
        (inventory(kubernetes_cluster_cilium_routing_mode="native"), "native routing needs"),
        (_incompatible(), "cp2: a control-plane member must not also be in login or slurm_compute"),
        (inventory(kubernetes_cluster_cni="bridge", addons_enabled=["cilium"]), "the Cilium add-on must not be enabled too"),
        (inventory(kubernetes_cluster_cilium_enabled=False), "kubernetes_cluster_cilium_enabled is gone"),
        (inventory(kubernetes_cluster_cni="flannel"), "kubernetes_cluster_cni is 'flannel' (cilium, bridge or none)"),
        (inventory(kubernetes_cluster_endpoint_mode="local_haproxy", kubernetes_cluster_local_haproxy_port=6443),
         "its port kubernetes_cluster_local_haproxy_port must not be 6443"),
        (inventory(kubernetes_cluster_endpoint_mode="external", kubernetes_cluster_endpoint=""), "set kubernetes_cluster_endpoint_mode"),
]
IDS = ["even-cps", "no-endpoint-mode", "no-endpoint", "pod-overlaps-svc", "pod-overlaps-nodes", "pod-overlaps-node-ip",
       "old-version", "v-prefix", "vip-outside-nodes", "native-no-cidr", "cp-in-slurm-compute",
       "own-cni-and-cilium-addon", "renamed-cilium-enabled", "unknown-cni", "haproxy-on-6443", "lb-without-address"]
GOOD = {"ha": inventory(), "single-cp": inventory(control_planes=1),
        "ha-local-haproxy": inventory(kubernetes_cluster_endpoint_mode="local_haproxy", kubernetes_cluster_endpoint=""),
        "bridge-cni": inventory(kubernetes_cluster_cni="bridge", addons_enabled=["cert_manager"])}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every case's real playbook run, several at a time (each is a separate process)."""
    cases = dict(GOOD) | {name: inv for name, (inv, _) in zip(IDS, BAD)}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run_playbook, PREFLIGHT, inv, tmp_path_factory.mktemp(name)) for name, inv in cases.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("name", list(GOOD))
def test_good_inventory_passes(results, name):
    result = results[name]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr


@pytest.mark.parametrize(("name", "message"), [(n, m) for n, (_, m) in zip(IDS, BAD)], ids=IDS)
def test_bad_inventory_rejected_with_a_fix(results, name, message):
    result = results[name]
    assert result.returncode != 0
    assert message in result.stdout, result.stdout[-3000:]


# --- artifact sources, checked on the controller for the Kubernetes hosts ---------------

def _fake_binaries(directory, kubeadm="v1.36.2", kubelet="Kubernetes v1.36.2", kubectl="v1.35.2"):
    """Stand-in binaries (shell scripts) that report the given versions: enough for the
    version check, which only runs them with their version flags."""
    directory.mkdir(parents=True, exist_ok=True)
    scripts = {"kubeadm": f"echo {kubeadm}",
               "kubelet": f"echo '{kubelet}'",
               "kubectl": "cat <<'EOF'\n{\"clientVersion\": {\"gitVersion\": \"%s\"}}\nEOF" % kubectl}
    for name, body in scripts.items():
        path = directory / name
        path.write_text("#!/bin/sh\n" + body + "\n")
        path.chmod(0o755)
    return directory


def _with_sources(tmp_path, archives_sha=None, **binaries):
    import hashlib

    images = tmp_path / "images"
    images.mkdir()
    (images / "pause.tar").write_bytes(b"not really an image archive, only its checksum matters here")
    sha = archives_sha or hashlib.sha256((images / "pause.tar").read_bytes()).hexdigest()
    return inventory(clusterdos_kubernetes_version="1.36.2", kubernetes_packages_source="directory",
                     kubernetes_packages_binaries_dir=str(_fake_binaries(tmp_path / "bin", **binaries)),
                     clusterdos_image_archives_dir=str(images),
                     containerd_image_archives=[{"file": "pause.tar", "sha256": sha, "images": ["registry.k8s.io/pause:3.10.2"]}])


SOURCES = {
    "good": ({}, None),
    "archive-checksum": ({"archives_sha": "0" * 64}, "pause.tar: sha256"),
    "kubeadm-version": ({"kubeadm": "v1.35.0"}, "kubeadm is v1.35.0, not v1.36.2"),
    "kubectl-too-old": ({"kubectl": "v1.34.0"}, "kubectl is v1.34.0, more than one minor from v1.36.2"),
}


@pytest.fixture(scope="module")
def source_results(tmp_path_factory):
    runs = {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        for name, (kwargs, _) in SOURCES.items():
            tmp = tmp_path_factory.mktemp("src-" + name)
            runs[name] = pool.submit(run_playbook, PREFLIGHT, _with_sources(tmp, **kwargs), tmp)
        return {name: f.result() for name, f in runs.items()}


@pytest.mark.parametrize("name", list(SOURCES))
def test_artifact_sources_checked_before_any_host(source_results, name):
    """Image archives (sha256) and directory binaries (versions) are checked on the
    controller; the hosts' addresses are never contacted (192.168.10.x is not reachable
    from here: a contact would show as UNREACHABLE)."""
    result = source_results[name]
    assert "UNREACHABLE" not in result.stdout
    message = SOURCES[name][1]
    if message is None:
        assert result.returncode == 0, result.stdout[-3000:]
    else:
        assert result.returncode != 0
        assert message in result.stdout, result.stdout[-3000:]
