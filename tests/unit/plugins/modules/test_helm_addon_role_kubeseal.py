"""kubeseal on a login node: the addons role's kubeseal entry point, run for real on localhost.

The site file mirror is a file:// directory laid out like upstream
(github.com/bitnami-labs/sealed-secrets/releases/download/vX/...) holding an archive the
test builds, with a goreleaser-style checksums file. Download, checksum check, unpack and
install are the real Ansible modules; a wrong checksum must stop the install.
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

ROOT = Path(__file__).parents[4]
PLAY = ROOT / "tests" / "unit" / "addons" / "role_kubeseal.yml"
VERSION = "0.32.2"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the role installs files owned by root")


def _mirror(tmp_path, good_checksum=True):
    rel = tmp_path / "mirror" / "github.com" / "bitnami-labs" / "sealed-secrets" / "releases" / "download" / f"v{VERSION}"
    rel.mkdir(parents=True)
    binary = tmp_path / "kubeseal"
    binary.write_text("#!/bin/sh\necho kubeseal-from-the-mirror\n")
    archive = rel / f"kubeseal-{VERSION}-linux-{ARCH}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(binary, arcname="kubeseal")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest() if good_checksum else "0" * 64
    (rel / f"sealed-secrets_{VERSION}_checksums.txt").write_text(f"{'1' * 64}  other.tar.gz\n{digest}  {archive.name}\n")
    return f"file://{tmp_path / 'mirror'}"


def _play(tmp_path, mirror, *args):
    extra = {"ansible_python_interpreter": sys.executable, "addons_file_mirror": mirror, "addons_kubeseal_version": VERSION,
             "addons_kubeseal_install_dir": str(tmp_path / "bin"), "__addons_kubeseal_download_dir": str(tmp_path / "cache")}
    (tmp_path / "bin").mkdir(exist_ok=True)
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-e", json.dumps(extra),
                           *args, str(PLAY)], capture_output=True, text=True, check=False, env=env, cwd=ROOT)


def test_kubeseal_installs_from_the_mirror_and_is_idempotent(tmp_path):
    mirror = _mirror(tmp_path)
    first = _play(tmp_path, mirror)
    assert first.returncode == 0, first.stdout[-3000:]
    installed = tmp_path / "bin" / "kubeseal"
    assert subprocess.run([str(installed)], capture_output=True, text=True, check=True).stdout == "kubeseal-from-the-mirror\n"
    assert oct(installed.stat().st_mode & 0o777) == "0o755"
    again = _play(tmp_path, mirror)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-3000:]


def test_kubeseal_with_a_wrong_checksum_is_not_installed(tmp_path):
    result = _play(tmp_path, _mirror(tmp_path, good_checksum=False))
    assert result.returncode != 0
    assert "checksum" in result.stdout.lower()
    assert not (tmp_path / "bin" / "kubeseal").exists()
