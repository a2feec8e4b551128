# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Hardware checks on the host the module runs on: NVIDIA and AMD GPU count and
health, InfiniBand link state. Each applies when the hardware is there or its tool is
installed, and is skipped otherwise.

What is expected comes from the host's discovered hardware (the same sysfs discovery
that publishes the clusterdos_hw fact: GPUs on the PCI bus, InfiniBand ports), so a GPU
the driver lost or a tool missing on a GPU host fails. Counts the inventory gives for
the node (its GPUs, its ib_ports) take precedence; the hardware_facts role has already
checked declared GPUs against the PCI bus."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.clusterdos.cluster.plugins.module_utils import hw_gpu, hw_rdma
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    CheckFailed,
    CheckSkipped,
    Outcome,
    Runner,
)

NVIDIA_QUERY = "index,name,uuid,pci.bus_id,ecc.errors.uncorrected.volatile.total,temperature.gpu"


def parse_nvidia_smi(text: str) -> List[Dict[str, str]]:
    """`nvidia-smi --query-gpu=<NVIDIA_QUERY> --format=csv,noheader,nounits` -> one dict per GPU."""
    keys = NVIDIA_QUERY.split(",")
    gpus = []
    for line in text.splitlines():
        if line.strip():
            values = [v.strip() for v in line.split(",")]
            gpus.append(dict(zip(keys, values)))
    return gpus


def parse_rocm_smi(text: str) -> List[Dict[str, Any]]:
    """`rocm-smi --showproductname --showuniqueid --json` -> one dict per card."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    cards = [dict(v, card=k) for k, v in sorted(data.items()) if re.match(r"^card\d+$", k) and isinstance(v, dict)]
    return cards


def parse_ibstat(text: str) -> List[Dict[str, str]]:
    """`ibstat` -> one dict per port: ca, port, state, physical, rate, link_layer."""
    ports: List[Dict[str, str]] = []
    ca = ""
    port: Optional[Dict[str, str]] = None
    names = {"State": "state", "Physical state": "physical", "Rate": "rate", "Link layer": "link_layer"}
    for raw in text.splitlines():
        line = raw.strip()
        match = re.match(r"^CA '([^']+)'", line)
        if match:
            ca, port = match.group(1), None
            continue
        match = re.match(r"^Port (\d+):$", line)
        if match:
            port = {"ca": ca, "port": match.group(1)}
            ports.append(port)
            continue
        if port is not None and ":" in line:
            key, value = line.split(":", 1)
            if key in names:
                port[names[key]] = value.strip()
    return ports


def discover(sysfs: str = "/sys") -> Dict[str, Any]:
    """This host's clusterdos_hw (gpus, hcas), read the way gpu_facts and rdma_facts read it."""
    return {"gpus": hw_gpu.gpu_facts(sysfs), "hcas": hw_rdma.hcas(sysfs)}


_VENDOR_OF = {"nvidia.com/gpu": "nvidia", "amd.com/gpu": "amd"}


class HardwareContext:
    def __init__(self, run: Runner, nodes: List[Dict[str, Any]], host: str = "",
                 hw: Optional[Callable[[], Dict[str, Any]]] = None) -> None:
        self.run = run
        self.host = host
        self.node = next((n for n in nodes if n.get("name") == host), {}) if host else {}
        self._discover = hw or discover
        self._hw: Optional[Dict[str, Any]] = None

    @property
    def hw(self) -> Dict[str, Any]:
        """The discovered hardware, read once and only by the checks that need it."""
        if self._hw is None:
            self._hw = self._discover()
        return self._hw

    def expected_gpus(self, resource: str) -> int:
        declared = (self.node.get("gpus") or {}).get(resource)
        if declared is not None:
            return int(declared)
        found = hw_gpu.gpu_list(self.hw.get("gpus"))
        return sum(g["count"] for g in found if g["vendor"] == _VENDOR_OF.get(resource))

    def said_by(self, resource: str) -> str:
        """Who expects the GPUs, for messages: the inventory, or the PCI bus (discovered)."""
        return "inventory says" if (self.node.get("gpus") or {}).get(resource) is not None else "the PCI bus shows"

    def expected_ib_ports(self) -> int:
        """ib_ports from the inventory, else 1 when an InfiniBand port was discovered."""
        if self.node.get("ib_ports"):
            return int(self.node["ib_ports"])
        ib = [p for h in self.hw.get("hcas") or [] for p in h.get("ports") or [] if p.get("link_layer") == "InfiniBand"]
        return 1 if ib else 0


def _installed(ctx: HardwareContext, tool: str, expected: int, what: str) -> bool:
    """True when the tool answers; skip or fail (when the inventory expects hardware) otherwise."""
    res = ctx.run(["which", tool], timeout=30)
    if res.rc == 0:
        return True
    if expected:
        raise CheckFailed("%s not found on %s, but the inventory expects %d %s" % (tool, ctx.host or "this host", expected, what))
    raise CheckSkipped("no %s expected and %s is not installed" % (what, tool))


def check_nvidia(ctx: HardwareContext) -> Outcome:
    expected = ctx.expected_gpus("nvidia.com/gpu")
    _installed(ctx, "nvidia-smi", expected, "NVIDIA GPUs")
    res = ctx.run(["nvidia-smi", "--query-gpu=%s" % NVIDIA_QUERY, "--format=csv,noheader,nounits"], timeout=60)
    if res.rc != 0:
        raise CheckFailed("nvidia-smi failed (driver not loaded?): %s" % res.reason())
    gpus = parse_nvidia_smi(res.out)
    problems = []
    if expected and len(gpus) != expected:
        problems.append("%d GPUs found, %s %d" % (len(gpus), ctx.said_by("nvidia.com/gpu"), expected))
    for gpu in gpus:
        ecc = gpu.get("ecc.errors.uncorrected.volatile.total", "")
        if ecc.isdigit() and int(ecc) > 0:
            problems.append("GPU %s (%s) has %s uncorrected ECC errors" % (gpu.get("index"), gpu.get("pci.bus_id"), ecc))
    if problems:
        raise CheckFailed("; ".join(problems))
    models = sorted({g.get("name", "?") for g in gpus})
    return Outcome("%d NVIDIA GPUs healthy (%s)" % (len(gpus), ", ".join(models)),
                   {"gpus": len(gpus), "models": models})


def check_amd(ctx: HardwareContext) -> Outcome:
    expected = ctx.expected_gpus("amd.com/gpu")
    _installed(ctx, "rocm-smi", expected, "AMD GPUs")
    res = ctx.run(["rocm-smi", "--showproductname", "--showuniqueid", "--json"], timeout=60)
    cards = parse_rocm_smi(res.out)
    if res.rc != 0 and not cards:
        raise CheckFailed("rocm-smi failed (amdgpu not loaded?): %s" % res.reason())
    if expected and len(cards) != expected:
        raise CheckFailed("%d AMD GPUs found, %s %d" % (len(cards), ctx.said_by("amd.com/gpu"), expected))
    if not cards:
        raise CheckSkipped("rocm-smi found no AMD GPU and none is expected")
    models = sorted({str(c.get("Card series") or c.get("Card SKU") or c.get("Card model") or "?") for c in cards})
    return Outcome("%d AMD GPUs (%s)" % (len(cards), ", ".join(models)), {"gpus": len(cards), "models": models})


def check_infiniband(ctx: HardwareContext) -> Outcome:
    expected = ctx.expected_ib_ports()
    _installed(ctx, "ibstat", expected, "InfiniBand ports")
    res = ctx.run(["ibstat"], timeout=60)
    ports = parse_ibstat(res.out)
    if not ports:
        if expected:
            raise CheckFailed("ibstat lists no HCA port, the inventory expects %d%s" % (
                expected, ": %s" % res.reason() if res.rc != 0 else ""))
        raise CheckSkipped("ibstat found no HCA and none is expected")
    active = [p for p in ports if p.get("state") == "Active" and p.get("physical") == "LinkUp"]
    down = ["%s/%s %s/%s" % (p["ca"], p["port"], p.get("state"), p.get("physical")) for p in ports if p not in active]
    if len(active) < max(expected, 1):
        raise CheckFailed("%d of %d ports Active/LinkUp (expected at least %d); down: %s" % (
            len(active), len(ports), max(expected, 1), ", ".join(down)))
    detail = "%d ports Active/LinkUp (%s)" % (len(active), ", ".join(
        "%s/%s %s Gb/s %s" % (p["ca"], p["port"], p.get("rate", "?"), p.get("link_layer", "")) for p in active))
    if down:
        detail += "; not in use: %s" % ", ".join(down)
    return Outcome(detail, {"active_ports": len(active), "ports": len(ports)})


CHECKS = [
    Check("hardware.nvidia_gpus", "nvidia-smi: GPU count matches the inventory, no uncorrected ECC errors", check_nvidia),
    Check("hardware.amd_gpus", "rocm-smi: GPU count matches the inventory", check_amd),
    Check("hardware.infiniband", "ibstat: HCA ports Active and LinkUp", check_infiniband),
]
