"""kubernetes_packages with the directory source refuses, on a real lab host, a
controller directory that lacks binaries: it names each missing one and where it looked,
and the host is unchanged (same packages, same files, no kubelet unit).

Only the refusal is tested here: the directory source with the real kubeadm and kubelet
runs in molecule kubeadm_cluster (and the download source in molecule containerd). The
directories hold the real kubectl (a link to the project's venv binary).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import CP, PROJECT, SCENARIO, host_state, recap, run_playbook

PLAYBOOK = SCENARIO / "tests" / "kubernetes_packages.yml"
VERSION = "1.35.2"
LAYOUTS = ["flat", "versioned", "kubeadm-is-a-directory", "no-such-directory"]


def _layout(base, layout):
    """Make the controller directory; return (binaries_dir to pass, where the role must look)."""
    if layout == "no-such-directory":
        return base / "gone", base / "gone"
    looked_in = base / f"v{VERSION}" if layout == "versioned" else base
    looked_in.mkdir(parents=True, exist_ok=True)
    os.symlink(PROJECT / ".venv" / "bin" / "kubectl", looked_in / "kubectl")
    if layout == "kubeadm-is-a-directory":
        (base / "kubeadm").mkdir()
    return base, looked_in


@pytest.fixture(scope="module")
def runs(cp, tmp_path_factory):
    """Every layout's run, several at a time; the host state is read before and after all."""
    dirs = {layout: _layout(tmp_path_factory.mktemp(layout), layout) for layout in LAYOUTS}
    before = host_state(cp)
    with ThreadPoolExecutor(max_workers=len(LAYOUTS)) as pool:
        futures = {layout: pool.submit(run_playbook, PLAYBOOK, "-e", "kubernetes_packages_source=directory",
                                       "-e", f"kubernetes_packages_binaries_dir={given}",
                                       "-e", f"kubernetes_packages_version={VERSION}")
                   for layout, (given, _) in dirs.items()}
        results = {layout: f.result() for layout, f in futures.items()}
    return {"dirs": dirs, "results": results, "before": before, "after": host_state(cp)}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_incomplete_directory_is_refused_naming_what_is_missing(runs, layout):
    run = runs["results"][layout]
    looked_in = runs["dirs"][layout][1]
    assert run.returncode != 0
    missing = re.search(r"Action failed: (.*) not found \(or not a file\)", run.stdout)
    assert missing, run.stdout[-3000:]
    expected = ["kubeadm", "kubelet"] + (["kubectl"] if layout == "no-such-directory" else [])
    assert missing.group(1) == ", ".join(f"{looked_in}/{name}" for name in expected)  # the real kubectl is not listed
    assert f"put kubeadm, kubelet and kubectl {VERSION}" in run.stdout
    assert "Traceback" not in run.stdout + run.stderr
    assert recap(run, CP)["changed"] == 0


def test_refusals_left_the_host_unchanged(cp, runs):
    assert runs["after"] == runs["before"]
    assert not cp.file("/usr/local/bin/kubeadm").exists
    assert not cp.file("/usr/local/bin/kubelet").exists
    assert not cp.file("/etc/systemd/system/kubelet.service").exists
