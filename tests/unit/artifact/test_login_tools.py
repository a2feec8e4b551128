"""The login role's tools through the shared artifact flow, run for real on localhost.

kubectl (a bare binary) and helm (a tarball) are the real binaries this checkout's venv
ships, served from a file:// site mirror laid out like dl.k8s.io and get.helm.sh, with
their checksum files; the role downloads, verifies, unpacks, installs and runs each
tool's own version command. kubeseal (moved here from the addons role) cannot be had
offline: its test uses a stand-in script in a release-shaped archive with a goreleaser
checksums file, and checks the flow around it (URL layout, the checksum line picked by
name, the member unpacked, the version check), not kubeseal itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
VENV = ROOT / ".venv" / "bin"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the role installs files owned by root"),
              pytest.mark.skipif(not (VENV / "helm").exists(), reason="no helm/kubectl in the venv (scripts/setup-dev.sh)")]
KUBESEAL = "0.32.2"


def _version(argv: list[str], prefix: str) -> str:
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return (out.split(prefix, 1)[1] if prefix else out).split()[0].split("+")[0].lstrip("v")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def mirror(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("mirror")
    kubectl = _version([str(VENV / "kubectl"), "version", "--client"], "Client Version: ")
    helm = _version([str(VENV / "helm"), "version", "--short"], "")
    k = root / "dl.k8s.io" / "release" / f"v{kubectl}" / "bin" / "linux" / ARCH
    k.mkdir(parents=True)
    (k / "kubectl").write_bytes((VENV / "kubectl").read_bytes())
    (k / "kubectl.sha256").write_text(_sha(k / "kubectl"))
    h = root / "get.helm.sh"
    h.mkdir()
    name = f"helm-v{helm}-linux-{ARCH}.tar.gz"
    with tarfile.open(h / name, "w:gz", compresslevel=1) as tar:
        tar.add(VENV / "helm", arcname=f"linux-{ARCH}/helm")
    (h / f"{name}.sha256sum").write_text(f"{_sha(h / name)}  {name}\n")
    s = root / "github.com" / "bitnami-labs" / "sealed-secrets" / "releases" / "download" / f"v{KUBESEAL}"
    s.mkdir(parents=True)
    stand_in = root / "kubeseal"
    stand_in.write_text(f"#!/bin/sh\necho 'kubeseal version: {KUBESEAL}'\n")
    stand_in.chmod(0o755)
    archive = s / f"kubeseal-{KUBESEAL}-linux-{ARCH}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(stand_in, arcname="kubeseal")
    (s / f"sealed-secrets_{KUBESEAL}_checksums.txt").write_text(f"{'1' * 64}  other.tar.gz\n{_sha(archive)}  {archive.name}\n")
    return {"url": f"file://{root}", "kubectl": kubectl, "helm": helm, "root": root}


def play(tmp_path: Path, mirror: dict, tools: list[str], **extra) -> subprocess.CompletedProcess:
    tasks = [{"name": "Gather the architecture", "ansible.builtin.setup": {"gather_subset": ["!all", "!min", "platform"]}},
             {"name": "The login role's tools", "ansible.builtin.include_role": {"name": "clusterdos.cluster.login",
                                                                                 "tasks_from": "tools.yml"}}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(
        [{"name": "login tools", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]))
    (tmp_path / "bin").mkdir(exist_ok=True)
    variables = {"ansible_python_interpreter": sys.executable, "login_tools": tools, "login_file_mirror": mirror["url"],
                 "login_kubectl_version": mirror["kubectl"], "login_helm_version": mirror["helm"],
                 "login_kubeseal_version": KUBESEAL, "login_install_dir": str(tmp_path / "bin"),
                 "login_download_dir": str(tmp_path / "cache"), **extra}
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-e", json.dumps(variables),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, check=False, env=env, cwd=ROOT)


def test_real_kubectl_and_helm_from_the_mirror_installed_checked_and_idempotent(tmp_path, mirror):
    first = play(tmp_path, mirror, ["kubectl", "helm"])
    assert first.returncode == 0, first.stdout[-3000:]
    assert _sha(tmp_path / "bin" / "kubectl") == _sha(VENV / "kubectl")
    assert _sha(tmp_path / "bin" / "helm") == _sha(VENV / "helm")
    again = play(tmp_path, mirror, ["kubectl", "helm"])
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]


def test_kubectl_of_another_release_fails_the_version_check(tmp_path, mirror):
    # The mirror holds the venv's kubectl under the path of another version: the checksum
    # matches (the site mirrored it so), the tool's own version does not.
    wrong = "1.34.9"
    other = mirror["root"] / "dl.k8s.io" / "release" / f"v{wrong}" / "bin" / "linux" / ARCH
    other.mkdir(parents=True, exist_ok=True)
    (other / "kubectl").write_bytes((VENV / "kubectl").read_bytes())
    (other / "kubectl.sha256").write_text(_sha(VENV / "kubectl"))
    result = play(tmp_path, mirror, ["kubectl"], login_kubectl_version=wrong)
    assert result.returncode != 0
    assert f"expected {wrong}" in result.stdout, result.stdout[-3000:]


def test_kubeseal_stand_in_script_through_the_login_flow(tmp_path, mirror):
    """Stand-in: kubeseal is not obtainable offline; a script in a release-shaped archive."""
    result = play(tmp_path, mirror, ["kubeseal"])
    assert result.returncode == 0, result.stdout[-3000:]
    assert subprocess.run([str(tmp_path / "bin" / "kubeseal"), "--version"], capture_output=True, text=True,
                          check=True).stdout.strip() == f"kubeseal version: {KUBESEAL}"


def test_kubeseal_stand_in_with_a_wrong_checksum_is_not_installed(tmp_path, mirror):
    """Stand-in archive (see above); the checksums file is made wrong for it."""
    sums = mirror["root"] / "github.com" / "bitnami-labs" / "sealed-secrets" / "releases" / "download" / f"v{KUBESEAL}" / \
        f"sealed-secrets_{KUBESEAL}_checksums.txt"
    good = sums.read_text()
    sums.write_text("\n".join(("0" * 64 + line[64:]) if "kubeseal" in line else line for line in good.splitlines()) + "\n")
    try:
        result = play(tmp_path, mirror, ["kubeseal"])
    finally:
        sums.write_text(good)
    assert result.returncode != 0
    assert "checksum" in result.stdout.lower()
    assert not (tmp_path / "bin" / "kubeseal").exists()


def test_kubeseal_is_a_login_tool_when_sealed_secrets_is_enabled():
    defaults = yaml.safe_load((ROOT / "roles" / "login" / "defaults" / "main.yml").read_text())
    assert "'kubeseal'] if 'sealed_secrets' in (addons_enabled" in defaults["login_tools"]
    assert not (ROOT / "roles" / "addons" / "tasks" / "kubeseal.yml").exists()
