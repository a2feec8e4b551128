"""validate.yml's hardware stage on the soft-RoCE VMs, for real.

playbooks/validate.yml runs against this lab's inventory with the hardware checks only,
strict: on each VM of the rdma group ibstat must show rxe0's port Active/LinkUp (one port
expected per rdma host, the validate role's default); no GPU is there and none is
expected, so the GPU checks are skipped with their reason. The report it writes on this
machine is read back. (Runs before test_reboot.py, which reboots the client.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
RDMA = sorted(yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]["children"]["rdma"]["hosts"])


@pytest.fixture(scope="module")
def report(tmp_path_factory, playbook):
    out = tmp_path_factory.mktemp("validation")
    res = playbook("validate.yml", "-e", json.dumps({"validate_checks": ["hardware"], "validate_strict": True,
                                                     "validate_report_dir": str(out)}), timeout=1200)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return json.loads((out / "validation.json").read_text())


def test_infiniband_check_passes_on_each_soft_roce_vm(report):
    ib = {c["host"]: c for c in report["checks"] if c["name"] == "hardware.infiniband"}
    assert sorted(ib) == RDMA, report["checks"]
    for host, check in ib.items():
        assert check["status"] == "passed", check
        assert check["data"]["active_ports"] >= 1, check
        assert "rxe0/1" in check["detail"] and "Ethernet" in check["detail"], check


def test_gpu_checks_skipped_with_the_reason(report):
    gpu = [c for c in report["checks"] if c["name"] in ("hardware.nvidia_gpus", "hardware.amd_gpus")]
    assert len(gpu) == 2 * len(RDMA), report["checks"]
    for check in gpu:
        assert check["status"] == "skipped" and "expected" in check["detail"], check
    assert report["summary"]["failed"] == 0
