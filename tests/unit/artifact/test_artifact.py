"""The shared artifact flow (roles/artifact), run for real on localhost.

The artifact is a real release binary: the helm v4 binary this checkout's venv ships
(from npm's lambda-layer-kubectl package, docs/lab.md), packed the way get.helm.sh packs
it (linux-ARCH/helm in a tarball, a .sha256sum file beside it) into a file:// site mirror
laid out like upstream. Download, checksum, unpack, install and the version check are the
real Ansible modules and the real `helm version`; a wrong checksum or another release
must stop the install. Upstream (internet) downloads are not reachable here.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
HELM = ROOT / ".venv" / "bin" / "helm"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="the role installs files owned by root"),
              pytest.mark.skipif(not HELM.exists(), reason="no helm binary in the venv (scripts/setup-dev.sh)")]


def helm_version() -> str:
    out = subprocess.run([str(HELM), "version", "--short"], capture_output=True, text=True, check=True).stdout
    return out.strip().split("+")[0].lstrip("v")


@pytest.fixture(scope="module")
def mirror(tmp_path_factory) -> dict:
    """A file:// mirror holding get.helm.sh/helm-vX-linux-ARCH.tar.gz and its .sha256sum."""
    root = tmp_path_factory.mktemp("mirror")
    version = helm_version()
    name = f"helm-v{version}-linux-{ARCH}.tar.gz"
    site = root / "get.helm.sh"
    site.mkdir()
    with tarfile.open(site / name, "w:gz", compresslevel=1) as tar:
        tar.add(HELM, arcname=f"linux-{ARCH}/helm")
    digest = hashlib.sha256((site / name).read_bytes()).hexdigest()
    (site / f"{name}.sha256sum").write_text(f"{digest}  {name}\n")
    return {"url": f"file://{root}", "version": version, "name": name, "digest": digest}


def play(tmp_path: Path, artifact_vars: dict, *args: str) -> subprocess.CompletedProcess:
    tasks = [{"name": "One artifact", "ansible.builtin.include_role": {"name": "clusterdos.cluster.artifact"},
              "vars": artifact_vars}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(
        [{"name": "artifact", "hosts": "localhost", "connection": "local", "gather_facts": False, "tasks": tasks}]))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable}), *args, str(tmp_path / "play.yml")],
                          capture_output=True, text=True, check=False, env=env, cwd=ROOT)


def helm_archive(tmp_path: Path, mirror: dict, **over) -> dict:
    upstream = f"https://get.helm.sh/{mirror['name']}"
    return {"artifact_name": "helm", "artifact_version": mirror["version"], "artifact_url": upstream,
            "artifact_mirror": mirror["url"], "artifact_checksum": f"sha256:{upstream}.sha256sum",
            "artifact_download_dir": str(tmp_path / "cache"), "artifact_unpack": True,
            "artifact_members": [f"linux-{ARCH}/helm"],
            "artifact_install": [{"src": f"linux-{ARCH}/helm", "dest": str(tmp_path / "bin" / "helm")}],
            "artifact_version_command": [str(tmp_path / "bin" / "helm"), "version", "--short"], **over}


def test_archive_from_the_mirror_checked_unpacked_installed_and_idempotent(tmp_path, mirror):
    (tmp_path / "bin").mkdir()
    check = play(tmp_path, helm_archive(tmp_path, mirror), "--check")
    assert check.returncode == 0, check.stdout[-3000:]
    assert not (tmp_path / "bin" / "helm").exists()
    first = play(tmp_path, helm_archive(tmp_path, mirror))
    assert first.returncode == 0, first.stdout[-3000:]
    installed = tmp_path / "bin" / "helm"
    assert oct(installed.stat().st_mode & 0o777) == "0o755"
    assert subprocess.run([str(installed), "version", "--short"], capture_output=True, text=True,
                          check=True).stdout.startswith(f"v{mirror['version']}")
    again = play(tmp_path, helm_archive(tmp_path, mirror))
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]


def test_wrong_checksum_stops_before_install(tmp_path, mirror):
    (tmp_path / "bin").mkdir()
    result = play(tmp_path, helm_archive(tmp_path, mirror, artifact_checksum="sha256:" + "0" * 64))
    assert result.returncode != 0
    assert "checksum" in result.stdout.lower()
    assert not (tmp_path / "bin" / "helm").exists()


def test_another_release_fails_the_version_check(tmp_path, mirror):
    (tmp_path / "bin").mkdir()
    result = play(tmp_path, helm_archive(tmp_path, mirror, artifact_version_expect="v3.19.0"))
    assert result.returncode != 0
    assert "helm: `" in result.stdout and "expected v3.19.0" in result.stdout, result.stdout[-3000:]


def test_bare_binary_from_a_controller_directory(tmp_path, mirror):
    (tmp_path / "bin").mkdir()
    (tmp_path / "dir").mkdir()
    shutil.copy(HELM, tmp_path / "dir" / "helm")
    dest = tmp_path / "bin" / "helm"
    args = {"artifact_name": "helm", "artifact_version": mirror["version"], "artifact_source": "directory",
            "artifact_directory": str(tmp_path / "dir"), "artifact_file": "helm", "artifact_dest": str(dest),
            "artifact_mode": "0755", "artifact_version_command": [str(dest), "version", "--short"]}
    first = play(tmp_path, args)
    assert first.returncode == 0, first.stdout[-3000:]
    assert dest.read_bytes() == HELM.read_bytes()
    again = play(tmp_path, args)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]


def test_bad_input_is_refused_naming_the_artifact(tmp_path):
    result = play(tmp_path, {"artifact_name": "runsc", "artifact_source": "download", "artifact_url": "ftp://x/runsc",
                             "artifact_dest": str(tmp_path / "runsc")})
    assert result.returncode != 0
    assert "runsc: artifact_source is download" in result.stdout, result.stdout[-3000:]
