#!/usr/bin/env python3
"""Build the signed package mirror the gpu_repos scenario installs from.

No NVIDIA or AMD repository is reachable from the lab, and no GPU is present, so the
scenario tests the roles up to the package manager: repository definitions, signing keys,
pins, package selection and versions. The packages here are EMPTY STAND-INS built with
dpkg-deb, named and versioned like the real ones (their Description says so); nothing
here is a driver and nothing is exercised on hardware.

Layout mirrors the upstream hosts under one root (as clusterdos_file_mirror expects):
  ROOT/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/  (flat, signed)
  ROOT/nvidia.github.io/libnvidia-container/stable/deb/amd64/            (flat, signed)
  ROOT/repo.radeon.com/{amdgpu/V/ubuntu,rocm/apt/V}/dists/jammy/main/     (signed)
  ROOT/linux.mellanox.com/public/repo/doca/V/debian12.5/x86_64/           (flat, signed)
Each repository holds two versions where the roles must pick one (branch pin, exact
fabric manager match, pinned toolkit), so a wrong choice fails the tests.

Usage: build_stand_in_mirror.py OUTDIR KERNEL_RELEASE
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from email.utils import formatdate
from pathlib import Path

ROCM = "6.4.1"
NOTE = "clusterdOS test stand-in: an EMPTY package named like the vendor's, for repository and version selection tests. Not a driver."

CUDA = [
    # 570.124.06 is the exact release nv-host pins (nvidia_gpu_driver_version): older than
    # the branch's newest, so the pin, not "newest of the branch", must pick it.
    ("nvidia-kernel-open-dkms", "570.124.06-1", ""),
    ("nvidia-open", "570.124.06-1", "nvidia-kernel-open-dkms (= 570.124.06-1)"),
    ("nvidia-fabricmanager-570", "570.124.06-1", ""),
    ("nvidia-kernel-open-dkms", "570.172.08-1", ""),
    ("nvidia-kernel-open-dkms", "575.64.05-1", ""),
    ("nvidia-open", "570.172.08-1", "nvidia-kernel-open-dkms (= 570.172.08-1)"),
    ("nvidia-open", "575.64.05-1", "nvidia-kernel-open-dkms (= 575.64.05-1)"),
    ("nvidia-fabricmanager-570", "570.172.08-1", ""),
    ("nvidia-fabricmanager-570", "570.181.01-1", ""),
    ("datacenter-gpu-manager-4-cuda12", "1:4.2.3-1", ""),
]
TOOLKIT = [(name, version, dep) for version in ("1.17.8-1", "1.18.0-1") for name, dep in (
    ("libnvidia-container1", ""), ("libnvidia-container-tools", f"libnvidia-container1 (= {version})"),
    ("nvidia-container-toolkit-base", ""), ("nvidia-container-toolkit", f"nvidia-container-toolkit-base (= {version})"))]
AMDGPU = [("amdgpu-dkms", "1:6.12.12.60401-2164967.22.04", "")]
ROCM_PKGS = [("rocm", "6.4.1.60401-83~22.04", "")]
DOCA = "2.9.1"
# DOCA-OFED's meta package (the rdma role's doca stack).
DOCA_PKGS = [("doca-ofed", "2.9.1-1", "")]


def run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def build_deb(outdir: Path, name: str, version: str, depends: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"
        (root / "DEBIAN").mkdir(parents=True)
        doc = root / "usr" / "share" / "doc" / name
        doc.mkdir(parents=True)
        (doc / "STAND-IN").write_text(NOTE + "\n")
        control = [f"Package: {name}", f"Version: {version}", "Architecture: amd64", "Maintainer: clusterdOS tests <tests@clusterdos.invalid>",
                   "Section: misc", "Priority: optional", f"Description: {NOTE}"]
        if depends:
            control.insert(3, f"Depends: {depends}")
        (root / "DEBIAN" / "control").write_text("\n".join(control) + "\n")
        safe = version.replace(":", "%3a")
        run(["dpkg-deb", "--root-owner-group", "-Zgzip", "--build", str(root), str(outdir / f"{name}_{safe}_amd64.deb")])


def release(directory: Path, files: list[Path], fields: dict[str, str], gnupghome: str) -> None:
    lines = [f"{k}: {v}" for k, v in fields.items()] + [f"Date: {formatdate(usegmt=True)}", "SHA256:"]
    for f in files:
        data = f.read_bytes()
        lines.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {f.relative_to(directory)}")
    rel = directory / "Release"
    rel.write_text("\n".join(lines) + "\n")
    env = {**os.environ, "GNUPGHOME": gnupghome}
    run(["gpg", "--batch", "--yes", "--clearsign", "-o", str(directory / "InRelease"), str(rel)], env=env)
    run(["gpg", "--batch", "--yes", "-abs", "-o", str(directory / "Release.gpg"), str(rel)], env=env)


def packages_index(debdir: Path, index_dir: Path, prefix_root: Path) -> list[Path]:
    """Packages and Packages.gz for the .debs in debdir, with Filename relative to prefix_root."""
    out = run(["dpkg-scanpackages", "--multiversion", str(debdir.relative_to(prefix_root)), "/dev/null"], cwd=prefix_root).stdout
    index_dir.mkdir(parents=True, exist_ok=True)
    plain = index_dir / "Packages"
    plain.write_text(out)
    with gzip.open(index_dir / "Packages.gz", "wt") as fh:
        fh.write(out)
    return [plain, index_dir / "Packages.gz"]


def flat_repo(repo: Path, pkgs: list[tuple[str, str, str]], label: str, gnupghome: str) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    for p in pkgs:
        build_deb(repo, *p)
    files = packages_index(repo, repo, repo)
    release(repo, [f.relative_to(repo) and f for f in files], {"Origin": label, "Label": label + " (clusterdOS stand-in)",
                                                             "Architectures": "amd64"}, gnupghome)


def dists_repo(repo: Path, pkgs: list[tuple[str, str, str]], gnupghome: str) -> None:
    pool = repo / "pool" / "main"
    pool.mkdir(parents=True, exist_ok=True)
    for p in pkgs:
        build_deb(pool, *p)
    dist = repo / "dists" / "jammy"
    files = packages_index(pool, dist / "main" / "binary-amd64", repo)
    # Origin as in AMD's own Release: a mirror of repo.radeon.com carries it unchanged.
    release(dist, files, {"Origin": "repo.radeon.com", "Label": "repo.radeon.com (clusterdOS stand-in)", "Suite": "jammy",
                          "Codename": "jammy", "Architectures": "amd64", "Components": "main"}, gnupghome)


def main() -> int:
    out, kernel = Path(sys.argv[1]), sys.argv[2]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    gnupghome = tempfile.mkdtemp(prefix="clusterdos-mirror-gpg-")
    try:
        env = {**os.environ, "GNUPGHOME": gnupghome}
        run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
             "clusterdOS stand-in mirror (tests only) <tests@clusterdos.invalid>", "ed25519", "sign", "never"], env=env)
        key = run(["gpg", "--batch", "--armor", "--export"], env=env).stdout
        cuda = out / "developer.download.nvidia.com/compute/cuda/repos"
        # Headers for the lab hosts' running kernel (this machine's): a stand-in too.
        flat_repo(cuda / "debian12/x86_64", CUDA + [(f"linux-headers-{kernel}", "1.0-standin", "")], "NVIDIA", gnupghome)
        (cuda / "debian12/x86_64/3bf863cc.pub").write_text(key)
        nct = out / "nvidia.github.io/libnvidia-container"
        flat_repo(nct / "stable/deb/amd64", TOOLKIT, "https://nvidia.github.io/libnvidia-container/stable/deb/amd64", gnupghome)
        (nct / "gpgkey").write_text(key)
        radeon = out / "repo.radeon.com"
        # The AMD DKMS host installs headers for its running kernel too: the same stand-in,
        # served here (on a real site they come from the OS's own repositories).
        dists_repo(radeon / f"amdgpu/{ROCM}/ubuntu", AMDGPU + [(f"linux-headers-{kernel}", "1.0-standin", "")], gnupghome)
        dists_repo(radeon / f"rocm/apt/{ROCM}", ROCM_PKGS, gnupghome)
        (radeon / "rocm").mkdir(parents=True, exist_ok=True)
        (radeon / "rocm/rocm.gpg.key").write_text(key)
        doca = out / f"linux.mellanox.com/public/repo/doca/{DOCA}/debian12.5/x86_64"
        flat_repo(doca, DOCA_PKGS, "DOCA", gnupghome)
        (doca / "GPG-KEY-Mellanox.pub").write_text(key)
    finally:
        shutil.rmtree(gnupghome, ignore_errors=True)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
