# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""GPU discovery from sysfs and the vendor tools, for the gpu_facts module.

Everything here reads; nothing changes the host. The sysfs root is a parameter so
that unit tests can point it at a tree they build.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Mapping, Optional

from ansible_collections.clusterdos.cluster.plugins.module_utils.sysfs import entries, read

# PCI vendor IDs.
NVIDIA = "0x10de"
AMD = "0x1002"
# PCI classes (first 4 hex digits of the class): display VGA, 3D controller, display other.
_GPU_CLASSES = ("0x0300", "0x0302", "0x0380")
# NVSwitch shows as a bridge of class 0x0680 from NVIDIA.
_NVSWITCH_CLASS = "0x0680"

# NVIDIA device IDs of data-centre GPUs that decide kernel-module choice, by
# architecture. Not exhaustive: unknown IDs give architecture "unknown", and the
# role then asks for nvidia_gpu_architecture.
_NVIDIA_ARCH_BY_DEVICE: dict[str, tuple[str, str]] = {
    "0x15f7": ("pascal", "Tesla P100 PCIe 12GB"),
    "0x15f8": ("pascal", "Tesla P100 PCIe 16GB"),
    "0x15f9": ("pascal", "Tesla P100 SXM2 16GB"),
    "0x1b38": ("pascal", "Tesla P40"),
    "0x1db1": ("volta", "Tesla V100 SXM2 16GB"),
    "0x1db4": ("volta", "Tesla V100 PCIe 16GB"),
    "0x1db5": ("volta", "Tesla V100 SXM2 32GB"),
    "0x1db6": ("volta", "Tesla V100 PCIe 32GB"),
    "0x1eb8": ("turing", "Tesla T4"),
    "0x20b0": ("ampere", "A100 SXM4 40GB"),
    "0x20b2": ("ampere", "A100 SXM4 80GB"),
    "0x20b5": ("ampere", "A100 PCIe 80GB"),
    "0x20f1": ("ampere", "A100 PCIe 40GB"),
    "0x2235": ("ampere", "A40"),
    "0x2236": ("ampere", "A10"),
    "0x26b5": ("ada", "L40"),
    "0x26b9": ("ada", "L40S"),
    "0x27b8": ("ada", "L4"),
    "0x2330": ("hopper", "H100 SXM5 80GB"),
    "0x2331": ("hopper", "H100 PCIe"),
    "0x2335": ("hopper", "H200 SXM 141GB"),
    "0x2339": ("hopper", "H100 SXM5 94GB"),
    "0x233b": ("hopper", "H200 NVL"),
    "0x2342": ("hopper", "GH200"),
    "0x2901": ("blackwell", "B200"),
    "0x2941": ("blackwell", "GB200"),
}
_AMD_MODEL_BY_DEVICE: dict[str, tuple[str, str]] = {
    "0x738c": ("cdna1", "Instinct MI100"),
    "0x7408": ("cdna2", "Instinct MI250X"),
    "0x740c": ("cdna2", "Instinct MI250X/MI250"),
    "0x740f": ("cdna2", "Instinct MI210"),
    "0x74a1": ("cdna3", "Instinct MI300X"),
    "0x74a5": ("cdna3", "Instinct MI325X"),
    "0x74a0": ("cdna3", "Instinct MI300A"),
}
# Ordered oldest first; the open kernel modules need Turing or newer, and
# Blackwell needs them.
NVIDIA_ARCHITECTURES = ("kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
OPEN_MODULES_MIN = "turing"
OPEN_MODULES_REQUIRED_FROM = "blackwell"

Runner = Callable[[list[str]], tuple[int, str, str]]


def pci_devices(sysfs: str = "/sys") -> list[dict[str, str]]:
    """Every PCI function with its address, vendor, device and class."""
    base = os.path.join(sysfs, "bus", "pci", "devices")
    names = entries(base)
    out = []
    for name in names:
        path = os.path.join(base, name)
        vendor, device, klass = (read(os.path.join(path, f)) for f in ("vendor", "device", "class"))
        if vendor and device and klass:
            out.append({"address": name, "vendor": vendor.lower(), "device": device.lower(), "class": klass.lower()})
    return out


def _is_gpu(dev: dict[str, str]) -> bool:
    return dev["class"][:6] in _GPU_CLASSES


def parse_nvidia_smi(text: str) -> list[dict[str, str]]:
    """Rows of `nvidia-smi --query-gpu=pci.bus_id,name,driver_version --format=csv,noheader`."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0]:
            rows.append({"pci_bus_id": parts[0], "name": parts[1], "driver_version": parts[2]})
    return rows


def _most_common(values: list[str]) -> Optional[str]:
    if not values:
        return None
    return max(sorted(set(values)), key=values.count)


def gpu_facts(sysfs: str = "/sys", run: Optional[Runner] = None, nvidia_smi: Optional[str] = None) -> dict[str, Any]:
    """What a host has: the clusterdos_hw.gpus mapping (see docs/gpu.md).

    vendor is "nvidia", "amd", "mixed" or "none"; model and architecture describe the
    most common GPU; driver_version is what the loaded kernel module reports.
    """
    devices = pci_devices(sysfs)
    nvidia = [d for d in devices if d["vendor"] == NVIDIA and _is_gpu(d)]
    amd = [d for d in devices if d["vendor"] == AMD and _is_gpu(d) and d["device"] in _AMD_MODEL_BY_DEVICE]
    nvswitches = [d for d in devices if d["vendor"] == NVIDIA and d["class"][:6] == _NVSWITCH_CLASS]
    if nvidia and amd:
        vendor = "mixed"
    elif nvidia:
        vendor = "nvidia"
    elif amd:
        vendor = "amd"
    else:
        vendor = "none"
    gpus = nvidia or amd
    table = _NVIDIA_ARCH_BY_DEVICE if vendor != "amd" else _AMD_MODEL_BY_DEVICE
    known = [table[d["device"]] for d in gpus if d["device"] in table]
    architecture = _most_common([k[0] for k in known]) or ("unknown" if gpus else None)
    model = _most_common([k[1] for k in known])
    module = "amdgpu" if vendor == "amd" else "nvidia"
    loaded = os.path.isdir(os.path.join(sysfs, "module", module))
    driver_version = read(os.path.join(sysfs, "module", module, "version")) if loaded else None
    smi_error = None
    if vendor in ("nvidia", "mixed") and run is not None and nvidia_smi:
        rc, out, err = run([nvidia_smi, "--query-gpu=pci.bus_id,name,driver_version", "--format=csv,noheader"])
        rows = parse_nvidia_smi(out) if rc == 0 else []
        if rows:
            model = _most_common([r["name"] for r in rows])
            driver_version = driver_version or rows[0]["driver_version"]
        elif rc != 0:
            smi_error = (err or out).strip()[:200]
    return {
        "vendor": vendor,
        "count": len(gpus),
        "model": model,
        "type": gpu_type(model),
        "architecture": architecture,
        "architectures": sorted({k[0] for k in known}),
        "pci_devices": [{"address": d["address"], "device": d["device"]} for d in gpus],
        "nvswitch_count": len(nvswitches),
        "driver_loaded": loaded,
        "driver_version": driver_version,
        "nouveau_loaded": os.path.isdir(os.path.join(sysfs, "module", "nouveau")),
        "nvidia_smi_error": smi_error,
    }


# Words of a model name that say nothing about the GPU itself ("NVIDIA H100 80GB HBM3",
# "Tesla V100 SXM2 16GB", "Instinct MI300X").
_VENDOR_WORDS = ("nvidia", "tesla", "geforce", "amd", "instinct", "radeon")


def gpu_type(model: Optional[str]) -> Optional[str]:
    """A short GPU type for Slurm GRES and node labels: "H100 SXM5 80GB" -> "h100",
    "NVIDIA H200 NVL" -> "h200", "Instinct MI250X/MI250" -> "mi250x"; None when unknown.

    With AutoDetect=nvml Slurm matches the type in slurm.conf as a substring of the name
    NVML reports, so the model's first word is enough.
    """
    for word in re.split(r"[\s/]+", (model or "").lower()):
        word = re.sub(r"[^a-z0-9]", "", word)
        if word and word not in _VENDOR_WORDS:
            return word
    return None


def gpu_list(gpus: Optional[Mapping[str, Any]], declared: Optional[list] = None) -> list[dict[str, Any]]:
    """Discovered GPUs (clusterdos_hw.gpus) as the inventory writes them: [{vendor, type, count}].

    Empty with no GPU. A declared entry of the same vendor with a type keeps that name
    (a site may call its H100s "h100_sxm"); the count is always the discovered one.
    """
    if not gpus or not int(gpus.get("count") or 0):
        return []
    vendor = "nvidia" if gpus.get("vendor") == "mixed" else str(gpus.get("vendor"))
    named = [d.get("type") for d in declared or [] if str(d.get("vendor", "")).lower() == vendor and d.get("type")]
    kind = named[0] if named else gpus.get("type") or gpu_type(gpus.get("model"))
    return [{"vendor": vendor, "type": kind, "count": int(gpus["count"])} if kind
            else {"vendor": vendor, "count": int(gpus["count"])}]


def node_gpus(hv: Optional[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A host's GPUs as [{vendor, type, count}] from its variables (hostvars[host]).

    The discovered ansible_facts.clusterdos_hw.gpus once the host was read (the source of
    truth; the declared clusterdos_gpus only names the type), else the declared
    clusterdos_gpus (a run that has not read the host). Slurm, the GPU stage's labels and
    validation all read a host's GPUs through this.
    """
    hv = hv or {}
    declared = list(hv.get("clusterdos_gpus") or [])
    facts = hv.get("ansible_facts") or {}
    found = (facts.get("clusterdos_hw") or {}).get("gpus") if isinstance(facts, Mapping) else None
    if found is not None:
        return gpu_list(found, declared)
    return [dict(g) for g in declared]


def declared_mismatch(declared: Optional[list], gpus: Optional[Mapping[str, Any]]) -> Optional[str]:
    """Why the GPUs a host declares (clusterdos_gpus) differ from what was found, or None.

    Compares the count per vendor; the message says what was declared, what was found
    (with PCI addresses) and how to fix it. The caller adds the host's name.
    """
    want: dict[str, int] = {}
    for entry in declared or []:
        vendor = str(entry.get("vendor", "")).lower()
        want[vendor] = want.get(vendor, 0) + int(entry.get("count", 1))
    have = {g["vendor"]: g["count"] for g in gpu_list(gpus)}
    if {v: c for v, c in want.items() if c} == have:
        return None
    said = ", ".join(f"{c} {v}" for v, c in sorted(want.items())) or "none"
    found = ", ".join(f"{c} {v}" for v, c in sorted(have.items())) or "none"
    where = ", ".join(d["address"] for d in (gpus or {}).get("pci_devices") or []) or "no GPU on the PCI bus"
    return (f"clusterdos_gpus declares {said} GPU(s), but {found} were found ({where}): "
            "fix clusterdos_gpus in the inventory, or check the hardware (lspci -d 10de: / lspci -d 1002:).")


def publish(current: Optional[Mapping[str, Any]], key: str, found: Any, extra: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """clusterdos_hw after a discovery: `current` with `key` replaced by what was found and
    the caller's extra keys laid over it (one level deep, so extra {"gpus": {...}} adds to
    the discovered GPUs instead of replacing them)."""
    out = dict(current or {})
    out[key] = found
    for name, value in (extra or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(name), Mapping):
            out[name] = {**out[name], **value}
        else:
            out[name] = value
    return out


def open_modules_problem(architectures: list[str], flavor: str) -> Optional[str]:
    """Why `flavor` ("open" or "proprietary") cannot drive GPUs of these architectures, or None."""
    order = {a: i for i, a in enumerate(NVIDIA_ARCHITECTURES)}
    known = [a for a in architectures if a in order]
    if flavor == "open":
        old = sorted(a for a in set(known) if order[a] < order[OPEN_MODULES_MIN])
        if old:
            return (f"the open kernel modules need {OPEN_MODULES_MIN.capitalize()} or newer; "
                    f"this host has {', '.join(old)} GPUs: set nvidia_gpu_kernel_modules: proprietary")
    elif flavor == "proprietary":
        new = sorted(a for a in set(known) if order[a] >= order[OPEN_MODULES_REQUIRED_FROM])
        if new:
            return (f"{', '.join(new)} GPUs run only with the open kernel modules: "
                    "set nvidia_gpu_kernel_modules: open")
    return None
