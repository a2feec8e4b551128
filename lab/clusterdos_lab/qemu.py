"""QEMU backend: each lab host is a VM with its own Debian kernel (software emulation).

For what a container cannot do: kernel modules (nfsd, rdma_rxe, ib_*), global sysctls,
NFS servers, eBPF. Slow (about a minute to boot under TCG; 2-3 VMs at once on 2 cores).

- Image: the cached podman root filesystem plus linux-image-amd64, written once to a raw
  ext4 disk; each VM boots the extracted kernel directly on a qcow2 overlay of it.
- Network: one virtio NIC per VM on a tap device enslaved to a host bridge that carries
  the gateway address, exactly like the podman backend, so SSH, the package proxy and
  the firewall work the same way. The bridge has no uplink.
- Per-VM identity (address, hostname, SSH key) travels on the kernel command line and is
  applied by a unit in the image; a distinct -uuid gives each VM its own machine-id.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import time
from pathlib import Path

from . import image
from .spec import LabSpec
from .util import LabError, log, run

VM_PACKAGES = ["linux-image-amd64", "initramfs-tools", "e2fsprogs", "rdma-core", "ibverbs-providers"]
# Packages the roles tested on VMs (base, nfs_server, nfs_client, rdma) install, put in the
# cached image once: dpkg under software emulation costs minutes per VM and per run, and
# installing packages through the proxy is proven on podman hosts. The roles' install
# tasks still run on the VMs (and find the packages); the services they enable are
# disabled in the image (VM_DISABLED_UNITS), so enabling and starting them is real work.
VM_ROLE_PACKAGES = ["chrony", "nfs-kernel-server", "nfs-common", "netbase", "ibverbs-utils", "rdmacm-utils",
                    "infiniband-diags", "perftest"]
VM_DISABLED_UNITS = ["chrony.service", "nfs-server.service"]
VM_RECIPE = "3"
DISK_SIZE = os.environ.get("CLUSTERDOS_LAB_VM_DISK", "6G")

NET_SCRIPT = """#!/bin/sh
# clusterdos lab (qemu): apply this VM's address and SSH key from the kernel command line.
set -e
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        clusterdos.ip=*) ip="${arg#clusterdos.ip=}" ;;
        clusterdos.gw=*) gw="${arg#clusterdos.gw=}" ;;
        clusterdos.key=*) key="${arg#clusterdos.key=}" ;;
    esac
done
mkdir -p /run/systemd/network /root/.ssh
cat > /run/systemd/network/10-lab.network <<EOF
[Match]
Name=eth0

[Network]
Address=$ip
EOF
if [ -n "$key" ]; then
    echo "$key" | base64 -d > /root/.ssh/authorized_keys
    chmod 600 /root/.ssh/authorized_keys
fi
"""

NET_UNIT = """[Unit]
Description=clusterdos lab: VM address and SSH key from the kernel command line
DefaultDependencies=no
Before=systemd-networkd.service network-pre.target ssh.service
Wants=network-pre.target
ConditionVirtualization=vm

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/clusterdos-lab-net

[Install]
WantedBy=sysinit.target
"""


def _key() -> str:
    return hashlib.sha256(f"{image.recipe_key()}-{VM_RECIPE}-{VM_PACKAGES}-{VM_ROLE_PACKAGES}-{VM_DISABLED_UNITS}"
                          .encode()).hexdigest()[:12]


def image_dir() -> Path:
    return image.CACHE_ROOT / "images" / f"vm-{_key()}"


def ensure_image() -> Path:
    """Build (once) the VM disk, kernel and initrd; return their directory."""
    out = image_dir()
    if (out / "done").exists():
        log(f"VM image cached: {out}")
        return out
    base = image.build_rootfs()
    out.mkdir(parents=True, exist_ok=True)
    root = out / "rootfs"
    if root.exists():
        shutil.rmtree(root)
    log("VM root filesystem: copy of the host image plus a kernel")
    run(["cp", "-a", str(base), str(root)])
    try:
        for sub in ("proc", "sys", "dev", "etc/resolv.conf"):
            run(["mount", "--bind", f"/{sub}", str(root / sub)])
        env = ["env", "DEBIAN_FRONTEND=noninteractive"]
        run(["chroot", str(root), *env, "apt-get", "update", "-qq"], timeout=900)
        run(["chroot", str(root), *env, "apt-get", "install", "-y", "-qq", "--no-install-recommends", *VM_PACKAGES,
             *VM_ROLE_PACKAGES], timeout=1800)
        run(["chroot", str(root), "systemctl", "disable", *VM_DISABLED_UNITS])
        run(["chroot", str(root), "apt-get", "clean"])
    finally:
        for sub in ("etc/resolv.conf", "dev", "sys", "proc"):
            run(["umount", "-l", str(root / sub)], check=False)
    (root / "usr/local/sbin/clusterdos-lab-net").write_text(NET_SCRIPT, encoding="utf-8")
    (root / "usr/local/sbin/clusterdos-lab-net").chmod(0o755)
    (root / "etc/systemd/system/clusterdos-lab-net.service").write_text(NET_UNIT, encoding="utf-8")
    wants = root / "etc/systemd/system/sysinit.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    for unit, target in (("clusterdos-lab-net.service", "/etc/systemd/system/clusterdos-lab-net.service"),):
        link = wants / unit
        if not link.exists():
            link.symlink_to(target)
    mu = root / "etc/systemd/system/multi-user.target.wants"
    mu.mkdir(parents=True, exist_ok=True)
    if not (mu / "systemd-networkd.service").exists():
        (mu / "systemd-networkd.service").symlink_to("/lib/systemd/system/systemd-networkd.service")
    (root / "etc/fstab").write_text("/dev/vda / ext4 rw,relatime 0 1\n", encoding="utf-8")
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    initrds = sorted((root / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise LabError("the VM image has no kernel or initrd after installing linux-image-amd64")
    shutil.copy2(kernels[-1], out / "vmlinuz")
    shutil.copy2(initrds[-1], out / "initrd.img")
    disk = out / "disk.raw"
    disk.unlink(missing_ok=True)
    log(f"writing {DISK_SIZE} ext4 disk from the root filesystem")
    run(["mkfs.ext4", "-q", "-F", "-L", "root", "-d", str(root), str(disk), DISK_SIZE], timeout=900)
    shutil.rmtree(root)
    (out / "done").write_text(_key() + "\n", encoding="utf-8")
    return out


def _tap(spec: LabSpec, index: int) -> str:
    return f"cdt{hashlib.sha1(spec.name.encode()).hexdigest()[:8]}{index}"[:15]


def bridge_name(spec: LabSpec) -> str:
    return f"cdlv-{hashlib.sha1(spec.name.encode()).hexdigest()[:10]}"


def ensure_network(spec: LabSpec) -> str:
    br = bridge_name(spec)
    if run(["ip", "link", "show", br], check=False).returncode != 0:
        run(["ip", "link", "add", br, "type", "bridge"])
        run(["ip", "addr", "add", f"{spec.gateway}/{spec.network.prefixlen}", "dev", br])
    run(["ip", "link", "set", br, "up"])
    return br


def _vm_dir(spec: LabSpec, host: str) -> Path:
    return spec.state_dir / "vms" / host


def _pid(spec: LabSpec, host: str) -> int | None:
    try:
        pid = int((_vm_dir(spec, host) / "pid").read_text(encoding="ascii").strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start_hosts(spec: LabSpec, img: Path, pubkey_path: str) -> None:
    import base64

    key64 = base64.b64encode(Path(pubkey_path).read_bytes().strip()).decode()
    for index, host in enumerate(spec.hosts):
        if _pid(spec, host.name):
            continue
        vdir = _vm_dir(spec, host.name)
        vdir.mkdir(parents=True, exist_ok=True)
        disk = vdir / "disk.qcow2"
        if not disk.exists():
            run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(img / "disk.raw"), "-F", "raw", str(disk)])
        tap = _tap(spec, index)
        if run(["ip", "link", "show", tap], check=False).returncode != 0:
            run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"])
        run(["ip", "link", "set", tap, "master", spec.bridge])
        run(["ip", "link", "set", tap, "up"])
        digest = hashlib.sha1(f"{spec.name}/{host.name}".encode()).hexdigest()
        mac = "52:54:00:" + ":".join(digest[i:i + 2] for i in (0, 2, 4))
        uuid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
        append = " ".join([
            "root=/dev/vda", "rw", "console=ttyS0", "net.ifnames=0", "quiet",
            f"systemd.hostname={host.name}",
            f"clusterdos.ip={spec.host_ip(index)}/{spec.network.prefixlen}",
            f"clusterdos.key={key64}",
        ])
        memory = max(host.memory_mib, 1024)
        run([
            "qemu-system-x86_64", "-name", host.name, "-uuid", uuid,
            "-accel", "tcg,thread=multi,tb-size=256", "-cpu", "max", "-smp", "1", "-m", str(memory),
            "-kernel", str(img / "vmlinuz"), "-initrd", str(img / "initrd.img"), "-append", append,
            "-drive", f"file={disk},if=virtio,format=qcow2",
            "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=n0,mac={mac}",
            "-display", "none", "-serial", f"file:{vdir / 'console.log'}", "-monitor", "none",
            "-daemonize", "-pidfile", str(vdir / "pid"),
        ])


def remove(spec: LabSpec) -> None:
    for index, host in enumerate(spec.hosts):
        pid = _pid(spec, host.name)
        if pid:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if _pid(spec, host.name) is None:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
        run(["ip", "link", "del", _tap(spec, index)], check=False)
    run(["ip", "link", "del", bridge_name(spec)], check=False)
    shutil.rmtree(spec.state_dir / "vms", ignore_errors=True)


def status(spec: LabSpec) -> list[dict]:
    return [{"name": h.name, "state": "running" if _pid(spec, h.name) else "stopped"} for h in spec.hosts]


TOOLS = ("qemu-system-x86_64", "qemu-img", "mkfs.ext4", "chroot", "ip")
