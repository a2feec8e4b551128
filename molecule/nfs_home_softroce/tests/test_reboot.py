"""Reboot the client VM for real (this file runs last: the other tests used the live
state); what the roles set up comes back at boot with no help: the NFS mounts from
/etc/fstab, and rxe0 with its RoCE defaults from the rdma role's units; swap stays off
(base commented out the swap file's fstab line and masked swap.target).
"""

from __future__ import annotations

import os
from pathlib import Path

import testinfra
import yaml

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
LAB = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]
SERVER = "nfs-server"
CLIENT = sorted(LAB["children"]["nfs_client"]["hosts"])[-1]
MOUNTS = {"/home": "/home", "/scratch": "/srv/scratch"}


def _host(name):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(EPHEMERAL / "inventory"))


def test_mounts_and_soft_roce_come_back_after_a_real_reboot():
    client = _host(CLIENT)
    boot_before = client.check_output("cat /proc/sys/kernel/random/boot_id")
    client.ansible("ansible.builtin.reboot", "reboot_timeout=900", check=False)
    rebooted = _host(CLIENT)
    assert rebooted.check_output("cat /proc/sys/kernel/random/boot_id") != boot_before
    for mountpoint, export in MOUNTS.items():
        mount = rebooted.mount_point(mountpoint)
        assert mount.exists and mount.filesystem == "nfs4", mountpoint
        assert mount.device == f"{LAB['hosts'][SERVER]['clusterdos_node_ip']}:{export}"
    devinfo = rebooted.check_output("ibv_devinfo -d rxe0")
    assert "PORT_ACTIVE" in devinfo, devinfo
    mode = rebooted.file("/sys/kernel/config/rdma_cm/rxe0/ports/1/default_roce_mode")
    assert mode.content_string.strip() == "RoCE v2"
    # base turned swap off for good: the swap file prepare.yml listed in fstab stays off.
    assert rebooted.file("/proc/swaps").content_string.splitlines()[1:] == []
