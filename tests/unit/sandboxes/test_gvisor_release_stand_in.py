"""gvisor's release method through the shared artifact flow, on localhost, with stand-ins.

gVisor's release binaries cannot be fetched here (no internet; Debian's runsc is another,
older build without the shim), so stand-in scripts named runsc and
containerd-shim-runsc-v1 sit in a file:// mirror at upstream's host and path
(MIRROR/storage.googleapis.com/gvisor/releases/release/VERSION/ARCH/) with .sha512 files
beside them. What is tested is the role's wiring: the mirror layout, the checksum files
picked per binary, the install, runsc's version check, and refusal on a bad digest;
gVisor itself is tested in molecule/sandboxes (Debian's runsc).
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

import pytest

VERSION = "20240729.0"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the role installs files owned by root")


def _mirror(tmp_path: Path) -> str:
    rel = tmp_path / "mirror" / "storage.googleapis.com" / "gvisor" / "releases" / "release" / VERSION / platform.machine()
    rel.mkdir(parents=True)
    for name in ("runsc", "containerd-shim-runsc-v1"):
        stand_in = rel / name
        stand_in.write_text(f"#!/bin/sh\necho 'runsc version release-{VERSION}'\n" if name == "runsc" else "#!/bin/sh\nexit 0\n")
        (rel / f"{name}.sha512").write_text(f"{hashlib.sha512(stand_in.read_bytes()).hexdigest()}  {name}\n")
    return f"file://{tmp_path / 'mirror'}"


def test_release_stand_in_from_the_mirror_layout_checked_and_installed(role_runner, tmp_path):
    (tmp_path / "bin").mkdir()
    proc, _ = role_runner("gvisor", "install.yml", {"gvisor_file_mirror": _mirror(tmp_path), "gvisor_version": VERSION,
                                                    "gvisor_bin_dir": str(tmp_path / "bin")}, gather_facts=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for name in ("runsc", "containerd-shim-runsc-v1"):
        assert oct((tmp_path / "bin" / name).stat().st_mode & 0o777) == "0o755"


def test_release_stand_in_with_a_pinned_digest_that_differs_is_refused(role_runner, tmp_path):
    (tmp_path / "bin").mkdir()
    proc, _ = role_runner("gvisor", "install.yml", {"gvisor_file_mirror": _mirror(tmp_path), "gvisor_version": VERSION,
                                                    "gvisor_bin_dir": str(tmp_path / "bin"),
                                                    "gvisor_checksums": {"runsc": "sha512:" + "0" * 128}}, gather_facts=True)
    assert proc.returncode != 0
    assert "checksum" in proc.stdout.lower()
    assert not (tmp_path / "bin" / "runsc").exists()
