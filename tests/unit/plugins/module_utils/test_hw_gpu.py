"""hw_gpu: GPU discovery from a sysfs tree built per test, and the kernel-module rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils import hw_gpu


def pci(root: Path, address: str, vendor: str, device: str, klass: str) -> None:
    d = root / "bus" / "pci" / "devices" / address
    d.mkdir(parents=True)
    (d / "vendor").write_text(vendor + "\n")
    (d / "device").write_text(device + "\n")
    (d / "class").write_text(klass + "\n")


def module(root: Path, name: str, version: str | None = None) -> None:
    d = root / "module" / name
    d.mkdir(parents=True)
    if version:
        (d / "version").write_text(version + "\n")


@pytest.fixture
def hgx(tmp_path: Path) -> Path:
    """An HGX H100 board: 8 GPUs, 4 NVSwitches, a NIC, the host bridge; driver 570 loaded."""
    pci(tmp_path, "0000:00:00.0", "0x8086", "0x09a2", "0x060000")
    for i in range(8):
        pci(tmp_path, f"0000:{0x18 + i:02x}:00.0", "0x10de", "0x2330", "0x030200")
    for i in range(4):
        pci(tmp_path, f"0000:{0x05 + i:02x}:00.0", "0x10de", "0x22a3", "0x068000")
    pci(tmp_path, "0000:2a:00.0", "0x15b3", "0x1021", "0x020700")
    module(tmp_path, "nvidia", "570.172.08")
    return tmp_path


def test_hgx_board(hgx):
    got = hw_gpu.gpu_facts(str(hgx))
    assert got["vendor"] == "nvidia"
    assert got["count"] == 8
    assert got["model"] == "H100 SXM5 80GB"
    assert got["architecture"] == "hopper"
    assert got["nvswitch_count"] == 4
    assert got["driver_loaded"] is True
    assert got["driver_version"] == "570.172.08"
    assert got["nouveau_loaded"] is False
    assert got["pci_devices"][0] == {"address": "0000:18:00.0", "device": "0x2330"}


def test_nvidia_smi_names_the_model_and_is_called_with_this_argv(hgx):
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "00000000:18:00.0, NVIDIA H100 80GB HBM3, 570.172.08\n" * 8, ""

    got = hw_gpu.gpu_facts(str(hgx), run=run, nvidia_smi="/usr/bin/nvidia-smi")
    assert calls == [["/usr/bin/nvidia-smi", "--query-gpu=pci.bus_id,name,driver_version", "--format=csv,noheader"]]
    assert got["model"] == "NVIDIA H100 80GB HBM3"


def test_nvidia_smi_failure_is_reported_not_raised(tmp_path):
    pci(tmp_path, "0000:18:00.0", "0x10de", "0x2330", "0x030200")
    got = hw_gpu.gpu_facts(str(tmp_path), run=lambda argv: (9, "", "NVIDIA-SMI has failed\n"), nvidia_smi="nvidia-smi")
    assert got["nvidia_smi_error"] == "NVIDIA-SMI has failed"
    assert got["driver_loaded"] is False and got["driver_version"] is None


def test_no_gpu(tmp_path):
    pci(tmp_path, "0000:00:02.0", "0x1234", "0x1111", "0x030000")  # QEMU's stdvga
    got = hw_gpu.gpu_facts(str(tmp_path), run=lambda argv: pytest.fail("nvidia-smi must not run"), nvidia_smi="x")
    assert (got["vendor"], got["count"], got["architecture"], got["model"]) == ("none", 0, None, None)


def test_missing_sysfs_is_no_gpu(tmp_path):
    assert hw_gpu.gpu_facts(str(tmp_path / "nothing"))["vendor"] == "none"


def test_unknown_nvidia_device_and_nouveau(tmp_path):
    pci(tmp_path, "0000:01:00.0", "0x10de", "0x9999", "0x030000")
    pci(tmp_path, "0000:01:00.1", "0x10de", "0x10f0", "0x040300")  # its HDMI audio function: not a GPU
    module(tmp_path, "nouveau")
    got = hw_gpu.gpu_facts(str(tmp_path))
    assert (got["count"], got["architecture"], got["nouveau_loaded"]) == (1, "unknown", True)


def test_amd_instinct_and_amdgpu_version(tmp_path):
    pci(tmp_path, "0000:00:02.0", "0x1002", "0x1234", "0x030000")  # an AMD BMC/IGP we do not count
    for i in range(8):
        pci(tmp_path, f"0000:{0x10 + i:02x}:00.0", "0x1002", "0x74a1", "0x038000")
    module(tmp_path, "amdgpu", "6.12.12")
    got = hw_gpu.gpu_facts(str(tmp_path))
    assert (got["vendor"], got["count"], got["model"], got["architecture"]) == ("amd", 8, "Instinct MI300X", "cdna3")
    assert got["driver_version"] == "6.12.12"


def test_mixed_vendors(tmp_path):
    pci(tmp_path, "0000:18:00.0", "0x10de", "0x2330", "0x030200")
    pci(tmp_path, "0000:19:00.0", "0x1002", "0x74a1", "0x038000")
    assert hw_gpu.gpu_facts(str(tmp_path))["vendor"] == "mixed"


@pytest.mark.parametrize(
    ("archs", "flavor", "problem"),
    [
        (["hopper"], "open", None),
        (["turing"], "open", None),
        (["volta"], "open", "Turing or newer"),
        (["pascal", "ampere"], "open", "pascal"),
        (["blackwell"], "proprietary", "only with the open kernel modules"),
        (["hopper"], "proprietary", None),
        (["unknown"], "open", None),
        ([], "open", None),
    ],
)
def test_kernel_module_rules(archs, flavor, problem):
    got = hw_gpu.open_modules_problem(archs, flavor)
    if problem is None:
        assert got is None
    else:
        assert problem in got


def test_parse_nvidia_smi_skips_junk():
    rows = hw_gpu.parse_nvidia_smi("\n00000000:18:00.0, NVIDIA B200, 580.65.06\nNo devices were found\n")
    assert rows == [{"pci_bus_id": "00000000:18:00.0", "name": "NVIDIA B200", "driver_version": "580.65.06"}]
