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
]
IDS = ["even-cps", "no-endpoint-mode", "no-endpoint", "pod-overlaps-svc", "pod-overlaps-nodes", "pod-overlaps-node-ip",
       "old-version", "v-prefix", "vip-outside-nodes", "native-no-cidr", "cp-in-slurm-compute"]
GOOD = {"ha": inventory(), "single-cp": inventory(control_planes=1)}


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
