"""upgrade.yml refuses a version step kubeadm cannot take, on real lab hosts, before any
host changes.

FIXTURE: no kubeadm control plane can run here, so k8s-cp's /etc/kubernetes/admin.conf
points at a stand-in API server (files/standin_apiserver.py, made in prepare) that reports
k8s-cp's kubelet at the scenario's kubernetes_hosts_fixture_kubelet_version (v1.33.4).
What is real: the playbook, the preflight, the version check running the real kubectl
(installed on k8s-cp by converge) on the host, and the host state before and after.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import CP, GROUP_VARS, PROJECT, host_state, recap, run_playbook

UPGRADE = PROJECT / "playbooks" / "upgrade.yml"
KUBELET = GROUP_VARS["all"]["kubernetes_hosts_fixture_kubelet_version"]  # v1.33.4
REFUSED = {"skips-a-minor": "1.35.2", "downgrade": "1.32.0"}


@pytest.fixture(scope="module")
def runs(cp, tmp_path_factory):
    """The refused targets, and the next minor with an empty binaries directory (refused
    by the preflight's artifact check), so no run may change the host. Run several at a time; host state read before and after all."""
    empty = tmp_path_factory.mktemp("no-binaries")
    cases = {name: ["-e", f"clusterdos_kubernetes_version={target}"] for name, target in REFUSED.items()}
    cases["next-minor"] = ["-e", "clusterdos_kubernetes_version=1.34.1", "-e", "kubernetes_packages_source=directory",
                           "-e", f"kubernetes_packages_binaries_dir={empty}"]
    before = host_state(cp)
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        futures = {name: pool.submit(run_playbook, UPGRADE, *args) for name, args in cases.items()}
        results = {name: f.result() for name, f in futures.items()}
    return {"results": results, "empty": empty, "before": before, "after": host_state(cp)}


@pytest.mark.parametrize("case", list(REFUSED))
def test_upgrade_refuses_a_step_kubeadm_cannot_take(runs, case):
    run = runs["results"][case]
    assert run.returncode != 0
    assert f"{CP}={KUBELET} cannot go to {REFUSED[case]} in one step" in run.stdout, run.stdout[-3000:]
    assert "PLAY [Upgrade - control planes, one at a time]" not in run.stdout
    assert recap(run, CP)["changed"] == 0


def test_an_empty_binaries_directory_is_refused_by_the_preflight(runs):
    """The next minor with an empty binaries directory: the preflight's artifact check (on
    the controller) refuses it before any upgrade play starts, naming what is missing."""
    run = runs["results"]["next-minor"]
    empty = runs["empty"]
    assert run.returncode != 0
    assert "cannot go to" not in run.stdout
    assert "PLAY [Upgrade - control planes, one at a time]" not in run.stdout
    assert f"{empty}/kubeadm, {empty}/kubelet, {empty}/kubectl not found" in run.stdout, run.stdout[-3000:]
    assert recap(run, CP)["changed"] == 0


def test_refused_upgrades_left_the_host_unchanged(cp, runs):
    assert runs["after"] == runs["before"]
    assert not cp.file("/usr/local/bin/kubeadm").exists
