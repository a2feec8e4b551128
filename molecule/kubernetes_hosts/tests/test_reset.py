"""reset.yml on a real lab host (k8s-cp) where the containerd role (Debian's containerd
1.6) was applied. Runs last: it removes /etc/kubernetes, and puts the fixture admin.conf
back afterwards so verify can run again.

This host has no kubeadm (the kubeadm scenarios reset real clusters; here the role must
skip its `kubeadm reset` step cleanly), and everything after that step runs for real. FIXTURE: the state
kubeadm and Cilium would leave behind is made by this test (files under each path the
reset promises to remove, a veth pair cilium_host/cilium_net, a vxlan cilium_vxlan and a
bridge standing in for kube-ipvs0), then reset.yml must remove all of it.
"""

from __future__ import annotations

import pytest

from conftest import CP, PROJECT, recap, run_playbook

RESET = PROJECT / "playbooks" / "reset.yml"
# What roles/kubernetes_cluster/tasks/reset.yml promises to remove.
PATHS = ["/etc/kubernetes", "/var/lib/kubelet", "/var/lib/etcd", "/etc/cni/net.d", "/var/lib/cni",
         "/run/cilium", "/var/log/kubernetes/audit", "/root/.kube"]
LINKS = ["cilium_host", "cilium_net", "cilium_vxlan", "kube-ipvs0"]


@pytest.fixture(scope="module")
def leftovers(cp):
    """FIXTURE: what a kubeadm node and Cilium leave behind."""
    for path in PATHS:
        cp.check_output(f"mkdir -p {path} && echo fixture > {path}/clusterdos-fixture")
    cp.check_output("ip link add cilium_host type veth peer name cilium_net")
    cp.check_output("ip link add cilium_vxlan type vxlan id 42 dstport 8472")
    cp.check_output("ip link add kube-ipvs0 type bridge")
    yield
    # Put the fixture admin.conf back (reset removed it) so verify can run again.
    cp.check_output("mkdir -p -m 0700 /etc/kubernetes && install -m 0600 /srv/fixtures/admin.conf /etc/kubernetes/admin.conf")


def _present(cp) -> list[str]:
    return [p for p in PATHS if cp.file(p).exists] + [ln for ln in LINKS if cp.file(f"/sys/class/net/{ln}").exists]


def test_reset_without_confirmation_refuses_before_touching_any_host(cp, leftovers):
    run = run_playbook(RESET)
    assert run.returncode != 0
    assert "run it with -e clusterdos_reset_confirm=true" in run.stdout
    # The confirmation is checked first inside the reset play (so --limit cannot skip it):
    # the role never starts, and everything is still there.
    assert "TASK [Reset the host]" not in run.stdout
    assert _present(cp) == PATHS + LINKS


def test_reset_removes_everything_it_promises(cp, leftovers):
    """kubeadm is absent: its reset step is skipped, the rest runs, nothing is left."""
    assert not cp.exists("kubeadm")
    run = run_playbook(RESET, "-e", "clusterdos_reset_confirm=true")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    kubeadm_task = run.stdout.split("TASK [clusterdos.cluster.kubernetes_cluster : Reset with kubeadm]")[1].split("TASK [")[0]
    assert f"skipping: [{CP}]" in kubeadm_task
    assert recap(run, CP)["changed"] > 0
    assert _present(cp) == []


def test_reset_leaves_the_container_runtime_running(cp):
    """reset.yml resets Kubernetes, not the host: containerd (from the containerd role) stays."""
    assert cp.service("containerd").is_running
    assert cp.run("ctr version").rc == 0


def test_reset_runs_again_without_failing_or_changing_anything(cp, leftovers):
    run = run_playbook(RESET, "-e", "clusterdos_reset_confirm=true")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert recap(run, CP) | {"ok": 0, "skipped": 0} == {"ok": 0, "changed": 0, "unreachable": 0, "failed": 0,
                                                        "skipped": 0, "rescued": 0, "ignored": 0}
    assert _present(cp) == []
