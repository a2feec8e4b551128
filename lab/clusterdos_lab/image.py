"""The lab host image: Debian bookworm from debootstrap, cached by its recipe.

The root filesystem is built once (about 80 s) and kept under CACHE_ROOT; the podman
image is imported from it once. A second `up` finds both and takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .spec import CACHE_ROOT, DEFAULT_CACHE_ROOT
from .util import LabError, log, run

SUITE = "bookworm"
MIRROR = os.environ.get("CLUSTERDOS_LAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PACKAGES = [
    "systemd", "systemd-sysv", "dbus", "python3", "python3-apt", "openssh-server",
    "sudo", "iproute2", "kmod", "iputils-ping", "procps", "ca-certificates",
]
# Bump when the customisation below changes: it is part of the cache key.
RECIPE_VERSION = "7"

# Runs before anything else in a container host: kernel.*, vm.* and fs.* in /proc/sys are
# this machine's own (only net.* is per network namespace), so they are made read-only.
GUARD_SCRIPT = """#!/bin/sh
# clusterdos lab: keep this machine's global sysctls out of reach of lab hosts.
set -e
for d in kernel vm fs; do
    mountpoint -q /proc/sys/$d && continue
    mount --bind /proc/sys/$d /proc/sys/$d
    mount -o remount,bind,ro /proc/sys/$d
done
# kubelet opens these for writing at start and stops on a read-only file: give it
# private files with the machine's current values (its writes land there, not here).
mkdir -p /run/clusterdos-lab/sysctl
for key in vm/overcommit_memory kernel/panic kernel/panic_on_oops; do
    file=/run/clusterdos-lab/sysctl/$(echo "$key" | tr / .)
    mountpoint -q /proc/sys/$key && continue
    cat /proc/sys/$key > "$file"
    mount --bind "$file" /proc/sys/$key
done
"""

GUARD_UNIT = """[Unit]
Description=clusterdos lab: read-only global sysctls in container hosts
DefaultDependencies=no
Before=sysinit.target systemd-sysctl.service
ConditionVirtualization=container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/clusterdos-lab-guard

[Install]
WantedBy=sysinit.target
"""

# podman (--systemd=always, cgroups v1 hybrid) leaves some hierarchies unscoped in a lab
# host: net_cls, perf_event and hugetlb at the machine's top level, and the machine's
# top-level name=systemd stacked over the host's own scoped one. runc in a lab host would
# then create cgroups (/k8s.io/..., /kubepods/...) at THIS machine's top level, shared by
# every lab host, left behind after `down`. Before containerd or kubelet starts, this
# script unmounts the unscoped hierarchies (kind's node entrypoint does the same), uncovers
# the scoped name=systemd mount, and bind-mounts each scoped hierarchy onto its own path
# so the absolute paths in /proc/*/cgroup (which systemd keeps using) still resolve.
CGROUP_SCRIPT = """#!/bin/sh
# clusterdos lab: scope cgroup v1 hierarchies to this container's own cgroup.
set -eu
own=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
if [ -z "$own" ] || [ "$own" = / ]; then exit 0; fi
awk '$9 == "cgroup" && $4 == "/" {print $5}' /proc/self/mountinfo | sort -ru | while read -r mnt; do
    [ "$mnt" = /sys/fs/cgroup/systemd ] && continue
    umount "$mnt"
done
if awk '$5 == "/sys/fs/cgroup/systemd" && $4 == "/" {f=1} END {exit !f}' /proc/self/mountinfo; then
    if mountpoint -q /sys/fs/cgroup/systemd/release_agent; then umount /sys/fs/cgroup/systemd/release_agent; fi
    # systemd holds the top mount open; detach it and let new lookups reach the scoped one.
    umount --lazy /sys/fs/cgroup/systemd
fi
awk '$9 == "cgroup" && $4 != "/" {print $5}' /proc/self/mountinfo | sort -u | while read -r mnt; do
    target="$mnt$own"
    if mountpoint -q "$target"; then continue; fi
    mkdir -p "$target"
    mount --bind "$mnt" "$target"
done
"""

# Pulled in only by container runtimes (drop-ins below), so hosts without them keep
# podman's mounts untouched.
CGROUP_UNIT = """[Unit]
Description=clusterdos lab: scope cgroup hierarchies before container runtimes start
DefaultDependencies=no
After=local-fs.target
ConditionVirtualization=container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/clusterdos-lab-cgroups
"""

CGROUP_RUNTIME_DROPIN = """[Unit]
Requires=clusterdos-lab-cgroups.service
After=clusterdos-lab-cgroups.service
"""
CGROUP_RUNTIMES = ("containerd.service", "kubelet.service")

# Lab hosts run without CAP_SYS_TIME so they cannot move this machine's clock; chrony's
# unit would then refuse to start, so its capability condition is cleared and the
# collection runs chronyd with -x (serve and track time, never set it) on such hosts.
CHRONY_DROPIN = """[Unit]
ConditionCapability=
"""


def recipe_key() -> str:
    recipe = json.dumps({"suite": SUITE, "mirror": MIRROR, "packages": PACKAGES,
                         "version": RECIPE_VERSION}, sort_keys=True)
    return hashlib.sha256(recipe.encode()).hexdigest()[:12]


def rootfs_dir() -> Path:
    return CACHE_ROOT / "images" / f"{SUITE}-{recipe_key()}" / "rootfs"


def _image_suffix() -> str:
    # A cache root other than the default (benchmarks, tests) gets images of its own.
    if CACHE_ROOT == DEFAULT_CACHE_ROOT:
        return ""
    return "-" + hashlib.sha256(str(CACHE_ROOT).encode()).hexdigest()[:6]


def podman_image() -> str:
    return f"localhost/clusterdos-lab:{SUITE}-{recipe_key()}{_image_suffix()}"


def build_rootfs() -> Path:
    """Build the root filesystem unless the cache has it. Returns its path."""
    target = rootfs_dir()
    if (target / "etc" / "clusterdos-lab" / "recipe").exists():
        log(f"image cached: {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rootfs.", dir=target.parent))
    try:
        log(f"debootstrap {SUITE} from {MIRROR} (about 80 s)")
        run(["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
             SUITE, str(work), MIRROR], timeout=1800)
        customise(work)
        if target.exists():
            shutil.rmtree(target)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return target


def _write(root: Path, rel: str, text: str, mode: int = 0o644) -> None:
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def customise(root: Path) -> None:
    # Cloned hosts must not share a machine-id (identical MACs, VXLAN drops traffic).
    _write(root, "/etc/machine-id", "")
    (root / "var/lib/dbus/machine-id").unlink(missing_ok=True)
    # No resolver outside this machine: names resolve from /etc/hosts only.
    resolv = root / "etc/resolv.conf"
    if resolv.is_symlink():
        resolv.unlink()
    _write(root, "/etc/resolv.conf", "# clusterdos lab: no resolver; /etc/hosts only\nnameserver 127.0.0.1\n")
    _write(root, "/etc/hosts", "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
    _write(root, "/usr/local/sbin/clusterdos-lab-guard", GUARD_SCRIPT, 0o755)
    _write(root, "/etc/systemd/system/clusterdos-lab-guard.service", GUARD_UNIT)
    wants = root / "etc/systemd/system/sysinit.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "clusterdos-lab-guard.service"
    if not link.exists():
        link.symlink_to("/etc/systemd/system/clusterdos-lab-guard.service")
    _write(root, "/etc/systemd/system/chrony.service.d/10-clusterdos-lab.conf", CHRONY_DROPIN)
    _write(root, "/usr/local/sbin/clusterdos-lab-cgroups", CGROUP_SCRIPT, 0o755)
    _write(root, "/etc/systemd/system/clusterdos-lab-cgroups.service", CGROUP_UNIT)
    for unit in CGROUP_RUNTIMES:
        _write(root, f"/etc/systemd/system/{unit}.d/05-clusterdos-lab-cgroups.conf", CGROUP_RUNTIME_DROPIN)
    # Quiet, predictable hosts: no unattended apt runs racing the tests.
    for unit in ("apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer", "fstrim.timer"):
        mask = root / "etc/systemd/system" / unit
        if not mask.exists():
            mask.symlink_to("/dev/null")
    root_ssh = root / "root/.ssh"
    root_ssh.mkdir(mode=0o700, exist_ok=True)
    _write(root, "/etc/clusterdos-lab/recipe", recipe_key() + "\n")


def podman_image_exists() -> bool:
    return subprocess.run(["podman", "image", "exists", podman_image()], check=False).returncode == 0


def ensure_podman_image() -> str:
    """Import the cached root filesystem as a podman image (once)."""
    image = podman_image()
    if podman_image_exists():
        log(f"podman image cached: {image}")
        return image
    root = build_rootfs()
    log(f"importing {root} as {image}")
    tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-cf", "-", "."],
                           stdout=subprocess.PIPE)
    try:
        imp = subprocess.run(["podman", "import", "--change", 'CMD ["/sbin/init"]', "-", image],
                             stdin=tar.stdout, capture_output=True, text=True, check=False)
    finally:
        if tar.stdout:
            tar.stdout.close()
        tar.wait()
    if imp.returncode != 0 or tar.returncode != 0:
        raise LabError(f"podman import failed: {imp.stderr.strip()}")
    return image


def remove_images() -> None:
    """Remove the cached images of this cache root (every recipe): podman images and root
    filesystems. Images of other cache roots are left alone."""
    out = run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}",
               "--filter", "reference=localhost/clusterdos-lab"], check=False).stdout or ""
    mine = re.compile(rf"^localhost/clusterdos-lab:{SUITE}-[0-9a-f]{{12}}{re.escape(_image_suffix())}$")
    for ref in out.split():
        if mine.match(ref):
            run(["podman", "rmi", "-f", ref], check=False)
    shutil.rmtree(CACHE_ROOT / "images", ignore_errors=True)
