"""The login role on a real lab host (k8s-login): the real kubectl and helm installed from
a file:// site mirror with the upstream URL paths, checksums verified; a corrupted mirror
is refused; the admin kubeconfig copied from the control plane for root (0600).

FIXTURE: the control plane's admin.conf was written by prepare (no kubeadm here); it
points at a stand-in API server on k8s-cp (files/standin_apiserver.py), so
`kubectl get nodes` on the login node reaches that stand-in, not a real cluster.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import CP, GROUP_VARS, LOGIN, PROJECT, recap, run_playbook

LOGIN_VARS = GROUP_VARS["login"]
KUBECTL = LOGIN_VARS["login_kubectl_version"]
HELM = LOGIN_VARS["login_helm_version"]
MIRROR = LOGIN_VARS["login_file_mirror"].removeprefix("file://")
KUBECTL_URL_PATH = f"dl.k8s.io/release/v{KUBECTL}/bin/linux/amd64/kubectl"
HELM_URL_PATH = f"get.helm.sh/helm-v{HELM}-linux-amd64.tar.gz"
LOGIN_PLAYBOOK = PROJECT / "playbooks" / "login.yml"
TOOLS = ["kubectl", "helm"]


def test_kubectl_runs_and_reports_the_pinned_version(login):
    out = json.loads(login.check_output("/usr/local/bin/kubectl version --client --output json"))
    assert out["clientVersion"]["gitVersion"] == f"v{KUBECTL}"
    tool = login.file("/usr/local/bin/kubectl")
    assert (tool.user, tool.group, tool.mode) == ("root", "root", 0o755)


def test_kubectl_is_the_mirrored_binary(login):
    assert login.file("/usr/local/bin/kubectl").sha256sum == login.file(f"{MIRROR}/{KUBECTL_URL_PATH}").sha256sum


def test_helm_runs_and_reports_the_pinned_version(login):
    assert login.check_output("/usr/local/bin/helm version --template '{{.Version}}'") == f"v{HELM}"
    tool = login.file("/usr/local/bin/helm")
    assert (tool.user, tool.group, tool.mode) == ("root", "root", 0o755)


def test_helm_came_from_the_mirrored_tarball(login):
    """The tarball was fetched into the download cache and unpacked there (helm is not
    a bare binary upstream)."""
    cached = login.file(f"/var/cache/clusterdos/downloads/helm-v{HELM}-linux-amd64.tar.gz")
    assert cached.sha256sum == login.file(f"{MIRROR}/{HELM_URL_PATH}").sha256sum
    unpacked = login.file(f"/var/cache/clusterdos/downloads/helm-{HELM}/linux-amd64/helm")
    assert unpacked.sha256sum == login.file("/usr/local/bin/helm").sha256sum


def test_k9s_not_installed_when_not_listed(login):
    assert not login.file("/usr/local/bin/k9s").exists


def test_admin_kubeconfig_copied_for_root_0600(login, cp):
    """The kubeconfig is the control plane's admin.conf (a FIXTURE), private to root."""
    kube_dir = login.file("/root/.kube")
    assert (kube_dir.user, kube_dir.mode) == ("root", 0o700)
    config = login.file("/root/.kube/config")
    assert (config.user, config.group, config.mode) == ("root", "root", 0o600)
    assert config.content == cp.file("/etc/kubernetes/admin.conf").content


def test_kubectl_on_the_login_node_uses_the_copied_kubeconfig(login):
    """kubectl with no flags reads ~/.kube/config and reaches the FIXTURE stand-in API on k8s-cp."""
    assert login.check_output("kubectl get nodes --output name") == f"node/{CP}"


def test_check_mode_on_the_converged_login_node_changes_nothing(login):
    """login.yml --check after converge: no failure and no change reported."""
    run = run_playbook(LOGIN_PLAYBOOK, "--check", "--limit", f"{LOGIN},localhost")
    assert run.returncode == 0, run.stdout[-3000:]
    assert recap(run, LOGIN)["changed"] == 0


@pytest.fixture(scope="module")
def bad_mirror_runs(login):
    """login.yml against a copy of the mirror (hard links) whose published checksums do
    not match, once per tool (kubectl, then helm alone), both at once, each with its own
    install and download directories."""
    bad = "/srv/mirror-bad"
    login.check_output(f"rm -rf {bad} && cp -al {MIRROR} {bad}")
    for path in (f"{KUBECTL_URL_PATH}.sha256", f"{HELM_URL_PATH}.sha256sum"):
        # Replace the file (never write through the hard link into the good mirror).
        login.check_output(f"rm {bad}/{path} && printf '%s  %s\\n' {'0' * 64} $(basename {bad}/{path} | sed 's/\\.sha256.*//') > {bad}/{path}")
    login.check_output("mkdir -p /tmp/login-bad-kubectl/bin /tmp/login-bad-helm/bin")

    def _run(tool):
        return run_playbook(LOGIN_PLAYBOOK, "--limit", f"{LOGIN},localhost", "-e", f"login_file_mirror=file://{bad}",
                            "-e", f'{{"login_tools": ["{tool}"], "login_kubeconfig": false}}',
                            "-e", f"login_install_dir=/tmp/login-bad-{tool}/bin",
                            "-e", f"login_download_dir=/tmp/login-bad-{tool}/cache")
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(TOOLS, pool.map(_run, TOOLS)))
    yield runs
    login.check_output(f"rm -rf {bad} /tmp/login-bad-kubectl /tmp/login-bad-helm")


@pytest.mark.parametrize("tool", TOOLS)
def test_a_wrong_checksum_in_the_mirror_fails_and_installs_nothing(login, bad_mirror_runs, tool):
    run = bad_mirror_runs[tool]
    assert run.returncode != 0
    assert recap(run, LOGIN)["failed"] == 1
    assert "did not match" in run.stdout and "checksum" in run.stdout, run.stdout[-3000:]
    assert not login.file(f"/tmp/login-bad-{tool}/bin/{tool}").exists
    assert login.check_output(f"find /tmp/login-bad-{tool}/cache -mindepth 1 2>/dev/null | head -1") == ""
