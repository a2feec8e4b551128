"""Hardware checks on recorded command outputs (fixtures/hardware_cases.yml)."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import hardware
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import run_checks

from conftest import FIXTURES, RecordedCommands, load_cases

CASES_FILE = "hardware_cases.yml"
BASE = yaml.safe_load((FIXTURES / CASES_FILE).read_text())


@pytest.mark.parametrize("case", load_cases(CASES_FILE))
def test_hardware_checks_on_recorded_outputs(case):
    recorded = dict(BASE["recorded"], **(case.get("recorded") or {}))
    node = case["node"]
    ctx = hardware.HardwareContext(RecordedCommands(recorded), [node, {"name": "other", "gpus": {"nvidia.com/gpu": 1}}],
                                   host=node["name"])
    results = {r.name: r for r in run_checks(hardware.CHECKS, {"hardware": ctx}, case.get("checks", ["hardware"]), [],
                                             host=node["name"])}
    assert set(results) == set(case["expect"])
    for name, (status, text) in case["expect"].items():
        assert results[name].status == status, (name, results[name].detail)
        assert text in results[name].detail, (name, results[name].detail)
        assert results[name].host == node["name"]


def test_parse_ibstat_ports():
    ports = hardware.parse_ibstat((FIXTURES / "commands" / "ibstat_cx7x2.txt").read_text())
    assert [(p["ca"], p["port"], p["state"], p["physical"], p["rate"], p["link_layer"]) for p in ports] == [
        ("mlx5_0", "1", "Active", "LinkUp", "400", "InfiniBand"),
        ("mlx5_1", "1", "Active", "LinkUp", "400", "InfiniBand"),
        ("mlx5_2", "1", "Down", "Disabled", "40", "Ethernet"),
    ]


def test_parse_nvidia_smi_fields():
    gpus = hardware.parse_nvidia_smi((FIXTURES / "commands" / "nvidia_smi_h100x8.csv").read_text())
    assert len(gpus) == 8
    assert gpus[1]["pci.bus_id"] == "00000000:2A:00.0"
    assert gpus[7]["ecc.errors.uncorrected.volatile.total"] == "0"


def test_rocm_smi_non_json_output_has_no_cards():
    assert hardware.parse_rocm_smi("ERROR:root:Driver not initialized (amdgpu not found in modules)\n") == []
