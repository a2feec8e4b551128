"""clusterdos_hw, the one source of a host's hardware: discovery, publishing, the
declared-count assertion, and its readers (Slurm GRES, the validation module).

Discovery runs for real on this machine (no GPU, no HCA: zero of each). Tests that need
GPUs point the same sysfs discovery at a fake tree they build (named *_fake_sysfs);
that stands in for GPU hardware, which this machine does not have.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils import hw_gpu, slurm_config
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import hardware
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import run_checks

from test_bad_input import ROOT, failure_messages, run_playbook


def pci(root: Path, address: str, vendor: str, device: str, klass: str = "0x030200") -> None:
    d = root / "bus" / "pci" / "devices" / address
    d.mkdir(parents=True)
    for name, value in (("vendor", vendor), ("device", device), ("class", klass)):
        (d / name).write_text(value + "\n")


@pytest.fixture
def h100x8_fake_sysfs(tmp_path: Path) -> Path:
    """A fake sysfs tree: 8 H100 SXM5 on the PCI bus (stands in for a GPU host)."""
    for i in range(8):
        pci(tmp_path, f"0000:{0x18 + i:02x}:00.0", "0x10de", "0x2330")
    return tmp_path


@pytest.mark.parametrize(("model", "kind"), [
    ("H100 SXM5 80GB", "h100"), ("NVIDIA H200 NVL", "h200"), ("Tesla V100 SXM2 32GB", "v100"),
    ("Instinct MI250X/MI250", "mi250x"), ("NVIDIA GeForce RTX 4090", "rtx"), (None, None), ("", None),
])
def test_gpu_type_is_the_models_first_word(model, kind):
    assert hw_gpu.gpu_type(model) == kind


def test_discovery_fake_sysfs_gives_type_and_inventory_shaped_list(h100x8_fake_sysfs):
    gpus = hw_gpu.gpu_facts(str(h100x8_fake_sysfs))
    assert (gpus["vendor"], gpus["count"], gpus["type"]) == ("nvidia", 8, "h100")
    assert hw_gpu.gpu_list(gpus) == [{"vendor": "nvidia", "type": "h100", "count": 8}]
    # A declared type names the GPUs; the count stays the discovered one.
    assert hw_gpu.gpu_list(gpus, [{"vendor": "nvidia", "type": "h100_sxm", "count": 4}]) == [
        {"vendor": "nvidia", "type": "h100_sxm", "count": 8}]


def test_no_gpu_is_an_empty_list():
    assert hw_gpu.gpu_list({"vendor": "none", "count": 0}) == []
    assert hw_gpu.gpu_list(None) == []


@pytest.mark.parametrize(("declared", "problem"), [
    ([{"vendor": "nvidia", "type": "h100", "count": 8}], None),
    ([{"vendor": "nvidia", "count": 4}, {"vendor": "nvidia", "count": 4}], None),
    ([{"vendor": "nvidia", "type": "h100", "count": 7}], "declares 7 nvidia GPU(s), but 8 nvidia were found"),
    ([{"vendor": "amd", "count": 8}], "declares 8 amd GPU(s), but 8 nvidia were found"),
])
def test_declared_count_against_found_fake_sysfs(h100x8_fake_sysfs, declared, problem):
    msg = hw_gpu.declared_mismatch(declared, hw_gpu.gpu_facts(str(h100x8_fake_sysfs)))
    if problem is None:
        assert msg is None
    else:
        assert problem in msg and "0000:18:00.0" in msg and "fix clusterdos_gpus" in msg


def test_declared_gpus_on_a_host_without_any():
    msg = hw_gpu.declared_mismatch([{"vendor": "nvidia", "count": 2}], {"vendor": "none", "count": 0, "pci_devices": []})
    assert msg.startswith("clusterdos_gpus declares 2 nvidia GPU(s), but none were found (no GPU on the PCI bus)")


def test_publish_keeps_other_keys_and_lays_extras_one_level_deep():
    current = {"hcas": [{"name": "rxe0"}], "gpus": {"count": 9, "stale": True}}
    out = hw_gpu.publish(current, "gpus", {"count": 8}, {"gpus": {"reboot_required": False}, "gpu_driver_managed_by": "host"})
    assert out == {"hcas": [{"name": "rxe0"}], "gpus": {"count": 8, "reboot_required": False}, "gpu_driver_managed_by": "host"}
    assert current["gpus"] == {"count": 9, "stale": True}


# --- Slurm reads the discovered fact ------------------------------------------------

def _hv(gpus=None, declared=None, override=None):
    hv = {"ansible_facts": {"processor_vcpus": 4}}
    if gpus is not None:
        hv["ansible_facts"]["clusterdos_hw"] = {"gpus": gpus}
    if declared is not None:
        hv["clusterdos_gpus"] = declared
    if override is not None:
        hv["slurm_node_gpus"] = override
    return hv


def test_slurm_gres_comes_from_the_discovered_gpus_fake_sysfs(h100x8_fake_sysfs):
    found = hw_gpu.gpu_facts(str(h100x8_fake_sysfs))
    hostvars = {"g1": _hv(found), "c1": _hv(hw_gpu.gpu_facts(str(h100x8_fake_sysfs / "nothing")))}
    assert slurm_config.node_record("g1", hostvars["g1"])["Gres"] == ["gpu:h100:8"]
    assert slurm_config.node_record("c1", hostvars["c1"])["Gres"] == []
    assert slurm_config.gres_records(["g1", "c1"], hostvars) == [{"NodeName": "g1", "AutoDetect": "nvml"}]


def test_slurm_discovered_wins_over_declared_and_override_wins_over_both():
    found = {"vendor": "nvidia", "count": 4, "type": "a100"}
    assert slurm_config.host_gpus(_hv(found, declared=[{"vendor": "nvidia", "type": "a100x", "count": 8}])) == [
        {"vendor": "nvidia", "type": "a100x", "count": 4}]
    # Before discovery (the controller-side preflight) the declaration is all there is.
    assert slurm_config.host_gpus(_hv(declared=[{"vendor": "nvidia", "count": 2}])) == [{"vendor": "nvidia", "count": 2}]
    # Discovered none: no GRES, whatever was declared (the hardware_facts role stops such a run).
    assert slurm_config.host_gpus(_hv({"vendor": "none", "count": 0}, declared=[{"vendor": "nvidia", "count": 2}])) == []
    override = [{"vendor": "nvidia", "type": "a100", "count": 2}]
    assert slurm_config.host_gpus(_hv(found, override=override)) == override


def test_node_gpus_is_what_slurm_reads_without_the_slurm_override():
    found = {"vendor": "nvidia", "count": 4, "type": "a100"}
    declared = [{"vendor": "nvidia", "type": "a100x", "count": 8}]
    assert hw_gpu.node_gpus(_hv(found, declared=declared)) == [{"vendor": "nvidia", "type": "a100x", "count": 4}]
    assert hw_gpu.node_gpus(_hv(declared=declared)) == declared
    assert hw_gpu.node_gpus(_hv({"vendor": "none", "count": 0}, declared=declared)) == []
    # slurm_node_gpus is what Slurm advertises, not what the host has.
    assert hw_gpu.node_gpus(_hv(found, override=declared)) == [{"vendor": "nvidia", "type": "a100", "count": 4}]
    assert hw_gpu.node_gpus(None) == []


# --- The validation module expects what was discovered ------------------------------

def test_the_validate_role_expects_the_discovered_gpus_once_the_host_was_read(tmp_path):
    """The validate role's default expectation (validate_node_gpus) on this machine (no GPU):
    before the host is read it is the declaration; after the hardware_facts role read the
    host (0 GPUs found), the declaration no longer makes validation expect 8 GPUs."""
    describe = {"name": "Describe", "ansible.builtin.include_role": {"name": "clusterdos.cluster.validate"}}
    show = {"name": "Show", "ansible.builtin.debug": {"var": "__validate_node.gpus"}}
    declared = [{"vendor": "nvidia", "type": "h100", "count": 8}]
    plays = [
        {"name": "before discovery", "hosts": "all", "gather_facts": False,
         "vars": {"clusterdos_gpus": declared}, "tasks": [describe, show]},
        {"name": "discovery", "hosts": "all", "gather_facts": False,
         "tasks": [{"name": "Discover", "ansible.builtin.include_role": {"name": "clusterdos.cluster.hardware_facts"}}]},
        {"name": "after discovery", "hosts": "all", "gather_facts": False,
         "vars": {"clusterdos_gpus": declared}, "tasks": [describe, show]},
    ]
    path = tmp_path / "validate_gpus.yml"
    path.write_text(json.dumps(plays))
    result = run_playbook(tmp_path, path, {}, {})
    assert result.returncode == 0, failure_messages(result)
    shown = [h["__validate_node.gpus"] for p in json.loads(result.stdout)["plays"] for t in p["tasks"]
             for h in t["hosts"].values() if "__validate_node.gpus" in h]
    assert shown == [{"nvidia.com/gpu": 8}, {}], shown

class _Commands:
    def __init__(self, outputs):
        self.outputs = outputs

    def __call__(self, argv, timeout=None, **_kw):
        from types import SimpleNamespace
        rc, out = self.outputs.get(argv[0], (1, ""))
        return SimpleNamespace(rc=rc, out=out, err="", reason=lambda: out or "failed")


def test_validation_fails_when_the_driver_sees_fewer_gpus_than_the_pci_bus_fake_sysfs(h100x8_fake_sysfs):
    smi = "".join(f"{i}, NVIDIA H100 80GB HBM3, GPU-{i}, 00000000:{0x18 + i:02X}:00.0, 0, 30\n" for i in range(7))
    ctx = hardware.HardwareContext(_Commands({"which": (0, "/usr/bin/x"), "nvidia-smi": (0, smi)}), [{"name": "g1"}],
                                   host="g1", hw=lambda: hardware.discover(str(h100x8_fake_sysfs)))
    result = {r.name: r for r in run_checks(hardware.CHECKS, {"hardware": ctx}, ["hardware.nvidia_gpus"], [], host="g1")}
    assert result["hardware.nvidia_gpus"].status == "failed"
    assert "7 GPUs found, the PCI bus shows 8" in result["hardware.nvidia_gpus"].detail


def test_validation_without_gpus_or_tools_skips_on_this_machine():
    ctx = hardware.HardwareContext(_Commands({}), [{"name": "c1"}], host="c1")
    result = {r.name: r for r in run_checks(hardware.CHECKS, {"hardware": ctx}, ["hardware"], [], host="c1")}
    assert {r.status for r in result.values()} == {"skipped"}, {n: r.detail for n, r in result.items()}


# --- The role, for real on this machine (no GPU) -------------------------------------

def _hardware_facts_play(tmp_path: Path) -> Path:
    path = tmp_path / "hardware_facts.yml"
    path.write_text(json.dumps([{"name": "hardware facts", "hosts": "all", "gather_facts": False, "tasks": [
        {"name": "Discover", "ansible.builtin.include_role": {"name": "clusterdos.cluster.hardware_facts"}},
        {"name": "Show", "ansible.builtin.debug": {"var": "ansible_facts['clusterdos_hw']"}}]}]))
    return path


def test_declared_gpus_missing_stop_the_run_naming_host_declared_and_found(tmp_path):
    result = run_playbook(tmp_path, _hardware_facts_play(tmp_path), {},
                          {"clusterdos_gpus": [{"vendor": "nvidia", "type": "h100", "count": 8}]})
    assert result.returncode != 0
    assert any(m.startswith("localhost: clusterdos_gpus declares 8 nvidia GPU(s), but none were found")
               for m in failure_messages(result)), failure_messages(result)


def test_no_declaration_publishes_zero_gpus_and_no_hcas(tmp_path):
    result = run_playbook(tmp_path, _hardware_facts_play(tmp_path), {}, {})
    assert result.returncode == 0, failure_messages(result)
    shown = [h["ansible_facts['clusterdos_hw']"] for p in json.loads(result.stdout)["plays"] for t in p["tasks"]
             for h in t["hosts"].values() if "ansible_facts['clusterdos_hw']" in h]
    assert shown and shown[0]["gpus"]["count"] == 0 and shown[0]["hcas"] == [] and shown[0]["rdma"]["hca_count"] == 0
    assert (ROOT / "roles" / "hardware_facts" / "tasks" / "main.yml").exists()
