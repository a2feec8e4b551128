"""upgrade.yml refuses a version step kubeadm cannot take, on real lab hosts, before any
host changes.

FIXTURE: no kubeadm control plane can run here, so k8s-cp's /etc/kubernetes/admin.conf
points at a stand-in API server (files/standin_apiserver.py, made in prepare) that reports
k8s-cp's kubelet at the scenario's kubernetes_hosts_fixture_kubelet_version (v1.33.4).
What is real: the playbook, the preflight, the version check running the real kubectl
(installed on k8s-cp by converge) on the host, and the host state before and after.
"""

from __future__ import annotations

import pytest

from conftest import CP, GROUP_VARS, PROJECT, host_state, recap, run_playbook

UPGRADE = PROJECT / "playbooks" / "upgrade.yml"
KUBELET = GROUP_VARS["all"]["kubernetes_hosts_fixture_kubelet_version"]  # v1.33.4


@pytest.mark.parametrize("target", ["1.35.2", "1.32.0"], ids=["skips-a-minor", "downgrade"])
def test_upgrade_refuses_before_any_host_changes(cp, target):
    before = host_state(cp)
    run = run_playbook(UPGRADE, "-e", f"clusterdos_kubernetes_version={target}")
    assert run.returncode != 0
    assert f"{CP}={KUBELET} cannot go to {target} in one step" in run.stdout, run.stdout[-3000:]
    assert "PLAY [Upgrade - control planes, one at a time]" not in run.stdout
    assert recap(run, CP)["changed"] == 0
    assert host_state(cp) == before
    assert not cp.file("/usr/local/bin/kubeadm").exists


def test_upgrade_to_the_next_minor_passes_the_version_check(cp, tmp_path):
    """The control case: 1.33 -> 1.34 passes the check and reaches the package step, which
    then refuses (its directory holds no kubeadm or kubelet) before changing the host."""
    before = host_state(cp)
    run = run_playbook(UPGRADE, "-e", "clusterdos_kubernetes_version=1.34.1",
                       "-e", "kubernetes_packages_source=directory", "-e", f"kubernetes_packages_binaries_dir={tmp_path}")
    assert run.returncode != 0
    assert "cannot go to" not in run.stdout
    assert "PLAY [Upgrade - control planes, one at a time]" in run.stdout
    assert f"{tmp_path}/kubeadm, {tmp_path}/kubelet, {tmp_path}/kubectl not found" in run.stdout, run.stdout[-3000:]
    assert recap(run, CP)["changed"] == 0
    assert host_state(cp) == before
