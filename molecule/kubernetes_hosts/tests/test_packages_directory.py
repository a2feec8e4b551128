"""kubernetes_packages with the directory source refuses, on a real lab host, a
controller directory that lacks binaries: it names each missing one and where it looked,
and the host is unchanged (same packages, same files, no kubelet unit).

Only the refusal is tested: the directory source itself needs kubeadm and kubelet, which
cannot be had here, and this scenario never makes stand-ins for them. The directory
holds the real kubectl (from the project's venv).
"""

from __future__ import annotations

import os
import re

import pytest

from conftest import CP, PROJECT, SCENARIO, host_state, recap, run_playbook

PLAYBOOK = SCENARIO / "tests" / "kubernetes_packages.yml"
VERSION = "1.35.2"


def _only_kubectl(directory):
    directory.mkdir(parents=True, exist_ok=True)
    os.symlink(PROJECT / ".venv" / "bin" / "kubectl", directory / "kubectl")
    return directory


@pytest.mark.parametrize("layout", ["flat", "versioned", "kubeadm-is-a-directory"])
def test_directory_with_only_kubectl_is_refused_before_any_change(cp, tmp_path, layout):
    looked_in = tmp_path / f"v{VERSION}" if layout == "versioned" else tmp_path
    _only_kubectl(looked_in)
    if layout == "kubeadm-is-a-directory":
        (tmp_path / "kubeadm").mkdir()
    before = host_state(cp)
    run = run_playbook(PLAYBOOK, "-e", "kubernetes_packages_source=directory",
                       "-e", f"kubernetes_packages_binaries_dir={tmp_path}", "-e", f"kubernetes_packages_version={VERSION}")
    assert run.returncode != 0
    missing = re.search(r"Action failed: (.*) not found \(or not a file\)", run.stdout)
    assert missing, run.stdout[-3000:]
    assert missing.group(1) == f"{looked_in}/kubeadm, {looked_in}/kubelet"  # the real kubectl is not listed
    assert f"put kubeadm, kubelet and kubectl {VERSION}" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert recap(run, CP)["changed"] == 0
    assert host_state(cp) == before
    assert not cp.file("/usr/local/bin/kubeadm").exists
    assert not cp.file("/etc/systemd/system/kubelet.service").exists


def test_missing_directory_is_refused_before_any_change(cp, tmp_path):
    before = host_state(cp)
    gone = tmp_path / "no-such-dir"
    run = run_playbook(PLAYBOOK, "-e", "kubernetes_packages_source=directory", "-e", f"kubernetes_packages_binaries_dir={gone}")
    assert run.returncode != 0
    assert f"{gone}/kubeadm, {gone}/kubelet, {gone}/kubectl not found" in run.stdout, run.stdout[-3000:]
    assert recap(run, CP)["changed"] == 0
    assert host_state(cp) == before
