"""What a lab is: its name, backend, network and hosts (with inventory groups).

A lab is described by a layout file (YAML) or by command-line host specs, and is
validated here before anything on the machine changes.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .util import LabError

NAME_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}$")
HOST_RE = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
GROUP_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
BACKENDS = ("podman", "qemu")
# Subnets are drawn from this block, one /24 per lab, picked from the lab's name.
SUBNET_POOL = ipaddress.ip_network("10.213.0.0/16")

STATE_ROOT = Path(os.environ.get("CLUSTERDOS_LAB_STATE", "/var/lib/clusterdos-lab"))
DEFAULT_CACHE_ROOT = Path("/var/cache/clusterdos-lab")
CACHE_ROOT = Path(os.environ.get("CLUSTERDOS_LAB_CACHE", str(DEFAULT_CACHE_ROOT)))
LAYOUT_DIR = Path(__file__).resolve().parent.parent / "layouts"


@dataclass
class HostSpec:
    name: str
    groups: list[str] = field(default_factory=list)
    memory_mib: int = 512
    # CPUs the host may run on (podman --cpuset-cpus), e.g. "1" or "1-3"; "" = any.
    cpuset: str = ""


@dataclass
class LabSpec:
    name: str
    backend: str = "podman"
    subnet: str = ""
    hosts: list[HostSpec] = field(default_factory=list)
    # Variables written into the inventory for every host (group "all").
    vars: dict = field(default_factory=dict)
    # The host-side bridge interface; podman names it when it creates the network.
    bridge: str = ""

    @property
    def state_dir(self) -> Path:
        return STATE_ROOT / self.name

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.ip_network(self.subnet)

    @property
    def gateway(self) -> str:
        return str(self.network.network_address + 1)

    def host_ip(self, index: int) -> str:
        return str(self.network.network_address + 10 + index)

    @property
    def chain(self) -> str:
        """The lab's own iptables chain (at most 28 characters)."""
        return "CDL-" + hashlib.sha1(self.name.encode()).hexdigest()[:10].upper()


def default_subnet(name: str) -> str:
    """A /24 from SUBNET_POOL chosen by the lab name, so a lab keeps its addresses."""
    return candidate_subnets(name)[0]


def candidate_subnets(name: str) -> list[str]:
    """The /24s of SUBNET_POOL a new lab may take, its name's own first, then the next ones
    (wrapping round), for when that one is already used on this machine."""
    index = int(hashlib.sha1(name.encode()).hexdigest(), 16) % 250 + 1
    pool = [str(net) for net in SUBNET_POOL.subnets(new_prefix=24)][1:251]
    return pool[index - 1:] + pool[:index - 1]


def parse_host_arg(text: str) -> HostSpec:
    """`name` or `name=group1,group2`."""
    name, _, groups = text.partition("=")
    return HostSpec(name=name.strip(), groups=[g.strip() for g in groups.split(",") if g.strip()])


def load_layout(ref: str) -> dict:
    """A layout by name (lab/layouts/NAME.yml) or by path."""
    path = Path(ref)
    if not path.exists():
        path = LAYOUT_DIR / f"{ref}.yml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in LAYOUT_DIR.glob("*.yml")))
        raise LabError(f"layout {ref!r} not found (known layouts: {known}; or give a path to a YAML file)")
    with path.open(encoding="utf-8") as fh:
        data = yaml.safe_load(fh) or {}
    if not isinstance(data, dict):
        raise LabError(f"layout {path}: expected a mapping at the top level")
    return data


def build_spec(name: str, backend: str | None, subnet: str | None, hosts: list[str],
               count: int | None, layout: str | None, memory_mib: int | None,
               cpuset: str | None = None) -> LabSpec:
    data: dict = load_layout(layout) if layout else {}
    host_specs: list[HostSpec] = []
    for entry in data.get("hosts", []) or []:
        if not isinstance(entry, dict) or "name" not in entry:
            raise LabError(f"layout host entry {entry!r}: expected a mapping with 'name' and 'groups'")
        host_specs.append(HostSpec(name=str(entry["name"]), groups=list(entry.get("groups") or []),
                                   memory_mib=int(entry.get("memory_mib", 512)),
                                   cpuset=str(entry.get("cpuset", ""))))
    host_specs += [parse_host_arg(h) for h in hosts]
    if count:
        host_specs += [HostSpec(name=f"{name}-{i}", groups=["lab"]) for i in range(1, count + 1)]
    if memory_mib:
        for h in host_specs:
            h.memory_mib = memory_mib
    if cpuset:
        for h in host_specs:
            h.cpuset = cpuset
    spec = LabSpec(
        name=name,
        backend=backend or data.get("backend", "podman"),
        subnet=subnet or data.get("subnet") or default_subnet(name),
        hosts=host_specs,
        vars=dict(data.get("vars") or {}),
    )
    validate(spec)
    return spec


def validate(spec: LabSpec) -> None:
    if not NAME_RE.match(spec.name):
        raise LabError(f"lab name {spec.name!r}: use 1-31 lowercase letters, digits and dashes, starting with a letter")
    if spec.backend not in BACKENDS:
        raise LabError(f"backend {spec.backend!r}: choose one of {', '.join(BACKENDS)}")
    try:
        net = ipaddress.ip_network(spec.subnet)
    except ValueError as exc:
        raise LabError(f"subnet {spec.subnet!r} is not a network address: {exc}") from exc
    if net.version != 4 or not net.is_private or net.prefixlen > 26:
        raise LabError(f"subnet {spec.subnet}: use a private IPv4 network of /26 or larger")
    if not spec.hosts:
        raise LabError("no hosts: give --hosts N, --host NAME[=GROUPS], or --layout")
    if len(spec.hosts) > net.num_addresses - 12:
        raise LabError(f"{len(spec.hosts)} hosts do not fit in {spec.subnet}")
    seen: set[str] = set()
    for h in spec.hosts:
        if not HOST_RE.match(h.name):
            raise LabError(f"host name {h.name!r}: use lowercase letters, digits and dashes, starting with a letter")
        if h.name in seen:
            raise LabError(f"host name {h.name!r} is given twice")
        seen.add(h.name)
        for g in h.groups:
            if not GROUP_RE.match(g) or g in ("all", "ungrouped"):
                raise LabError(f"host {h.name}: group {g!r} is not a valid inventory group name")
        if h.memory_mib < 128:
            raise LabError(f"host {h.name}: memory_mib {h.memory_mib} is below 128")
        if h.cpuset:
            validate_cpuset(h.name, h.cpuset, spec.backend)


CPUSET_RE = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


def cpuset_cpus(text: str) -> set[int]:
    """The CPU numbers of a cpuset list such as "1", "1-3" or "0,2-3"."""
    cpus: set[int] = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def validate_cpuset(host: str, text: str, backend: str) -> None:
    if backend != "podman":
        raise LabError(f"host {host}: cpuset {text!r} applies to podman hosts only (backend {backend})")
    if not CPUSET_RE.match(text) or any(int(b) < int(a) for a, b in re.findall(r"(\d+)-(\d+)", text)):
        raise LabError(f"host {host}: cpuset {text!r} is not a CPU list; write it like 1, 1-3 or 0,2-3")
    usable = os.sched_getaffinity(0)
    missing = sorted(cpuset_cpus(text) - usable)
    if missing:
        raise LabError(f"host {host}: cpuset {text!r} names CPU(s) {', '.join(map(str, missing))} that this "
                       f"machine does not offer (usable: {', '.join(map(str, sorted(usable)))})")
