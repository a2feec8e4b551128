"""Run the collection's playbooks on the controller against inventories written by tests."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def run_playbook(playbook: Path, inventory: dict, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run(["ansible-playbook", "-i", str(inv), str(playbook), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def inventory(control_planes: int = 3, workers: int = 2, **group_vars) -> dict:
    cps = {f"cp{i}": {"clusterdos_node_ip": f"192.168.10.{10 + i}"} for i in range(1, control_planes + 1)}
    wks = {f"gpu{i}": {"clusterdos_node_ip": f"192.168.10.{100 + i}"} for i in range(1, workers + 1)}
    base = {"kubernetes_cluster_endpoint_mode": "kube_vip", "kubernetes_cluster_endpoint": "192.168.10.5",
            "kubernetes_cluster_node_cidr": "192.168.10.0/24"} if control_planes > 1 else {}
    base.update(group_vars)
    return {"all": {"vars": base, "children": {
        "kube_control_plane": {"hosts": cps},
        "kube_node": {"hosts": wks},
        "login": {"hosts": {}},
        "slurm_compute": {"hosts": {}},
    }}}


@pytest.fixture
def playbook():
    return run_playbook
