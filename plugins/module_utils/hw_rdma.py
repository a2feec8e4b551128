# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""RDMA device (HCA) discovery from sysfs, for the rdma_facts module. Read-only."""

from __future__ import annotations

import os
import re
from typing import Any, Optional

from ansible_collections.clusterdos.cluster.plugins.module_utils.sysfs import entries, read

# "4: ACTIVE" -> "ACTIVE"; "5: LinkUp" -> "LinkUp".
_STATE = re.compile(r"^\s*\d+:\s*(\S+)")


def _state(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    m = _STATE.match(text)
    return m.group(1) if m else text


def _netdev(port_dir: str) -> Optional[str]:
    """The network interface under GID 0 (Ethernet/RoCE and IPoIB-less ports may have none)."""
    return read(os.path.join(port_dir, "gid_attrs", "ndevs", "0")) or None


def _driver(dev_dir: str) -> Optional[str]:
    link = os.path.join(dev_dir, "device", "driver")
    if os.path.islink(link):
        return os.path.basename(os.readlink(link))
    # Software devices (rxe, siw) have no PCI device; their name says the driver.
    name = os.path.basename(dev_dir)
    for prefix in ("rxe", "siw"):
        if name.startswith(prefix):
            return "rdma_" + prefix
    return None


def hcas(sysfs: str = "/sys") -> list[dict[str, Any]]:
    """The clusterdos_hw.hcas list (see docs/rdma.md), sorted by device name."""
    base = os.path.join(sysfs, "class", "infiniband")
    names = entries(base)
    out = []
    for name in names:
        dev = os.path.join(base, name)
        ports = []
        port_names = entries(os.path.join(dev, "ports"), key=lambda p: int(p) if p.isdigit() else 0)
        for p in port_names:
            pdir = os.path.join(dev, "ports", p)
            ports.append({
                "port": int(p) if p.isdigit() else p,
                "state": _state(read(os.path.join(pdir, "state"))),
                "phys_state": _state(read(os.path.join(pdir, "phys_state"))),
                "link_layer": read(os.path.join(pdir, "link_layer")),
                "rate": read(os.path.join(pdir, "rate")),
                "netdev": _netdev(pdir),
            })
        out.append({
            "name": name,
            "driver": _driver(dev),
            "node_type": _state(read(os.path.join(dev, "node_type"))),
            "node_guid": read(os.path.join(dev, "node_guid")),
            "fw_ver": read(os.path.join(dev, "fw_ver")),
            "board_id": read(os.path.join(dev, "board_id")),
            "ports": ports,
        })
    return out


def summary(found: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts the validation module and node labels read: devices, active ports by link layer."""
    active = [p for h in found for p in h["ports"] if p["state"] == "ACTIVE"]
    return {
        "hca_count": len(found),
        "active_ports": len(active),
        "active_infiniband_ports": len([p for p in active if p["link_layer"] == "InfiniBand"]),
        "active_ethernet_ports": len([p for p in active if p["link_layer"] == "Ethernet"]),
    }
