"""base's swap-off on QEMU VMs (a container has no swap of its own, so only a VM runs it).

prepare.yml gave each VM an active 64 MiB swap file listed in /etc/fstab, as a stock
install has, before base ran. base must have turned it off, commented out its fstab line
and masked swap.target; test_reboot.py checks swap stays off after a real reboot.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

INVENTORY = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "inventory" / "clusterdos_lab.yml"
HOSTS = yaml.safe_load(INVENTORY.read_text())["all"]["hosts"]

testinfra_hosts = [f"ansible://{name}" for name in HOSTS]


def test_no_swap_is_active(host):
    swaps = host.file("/proc/swaps").content_string.splitlines()
    assert swaps[1:] == [], swaps


def test_the_swap_file_is_commented_out_in_fstab(host):
    lines = host.file("/etc/fstab").content_string.splitlines()
    assert not [line for line in lines if line.startswith("/swapfile ")], lines
    assert [line for line in lines if line.startswith("# /swapfile ")], lines


def test_swap_target_is_masked(host):
    assert host.run("systemctl is-enabled swap.target").stdout.strip() == "masked"
