"""Bad input is refused before any change, with a message saying what to fix.

Runs the real preflight entry points (playbooks/gpu_preflight.yml and each role's
tasks/preflight.yml) with ansible-playbook against this machine (Debian 12, no GPU):
they only read (facts, sysfs), so nothing here changes. Each case asserts the exact
message a user would see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from playbook_outcome import host_outcomes, run_json

ROOT = Path(__file__).resolve().parents[3]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"

pytestmark = pytest.mark.skipif(not ANSIBLE_PLAYBOOK.exists(), reason="ansible-playbook not in this venv")


def run_playbook(tmp_path: Path, playbook: str | Path, groups: dict[str, dict], host_vars: dict) -> subprocess.CompletedProcess:
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": sys.executable, **host_vars}},
                         "children": groups}}
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump(inventory))
    return run_json(inv, Path(playbook), timeout=300)


def role_preflight(tmp_path: Path, role: str) -> Path:
    play = [{"name": f"{role} preflight", "hosts": "all", "gather_facts": True,
             "gather_subset": ["!all", "!min", "distribution", "platform", "virtual", "network"],
             "tasks": [{"name": "Preflight", "ansible.builtin.include_role": {"name": f"clusterdos.cluster.{role}",
                                                                             "tasks_from": "preflight.yml"}}]}]
    path = tmp_path / f"{role}.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    return path


def failure_messages(result: subprocess.CompletedProcess) -> list[str]:
    data = json.loads(result.stdout)
    msgs = []
    for play in data["plays"]:
        for task in play["tasks"]:
            for res in task["hosts"].values():
                if res.get("failed"):
                    msgs.append(res.get("msg", ""))
                    msgs += [r.get("msg", "") for r in res.get("results", []) if r.get("failed") or r.get("evaluated_to") is False]
    return msgs


NVIDIA = {"gpu_nvidia": {"hosts": {"localhost": {}}}}
AMD = {"gpu_amd": {"hosts": {"localhost": {}}}}

# The roles' own preflights check each host on its own: every case below is one host of a
# single run (all of them this machine, connection local), its inputs that host's
# variables, each role's preflight on the hosts of its group. One process start-up and one fact pass per
# host instead of a run per case; each case passes or fails on its own host's results.
NVIDIA_REFUSED = [
    ("branch unknown for the OS", {"nvidia_gpu_driver_branch": "390"},
     "Driver branch 390 is not published for debian12"),
    ("open modules before Turing", {"nvidia_gpu_architecture": "pascal", "nvidia_gpu_kernel_modules": "open"},
     "the open kernel modules need Turing or newer; this host has pascal GPUs"),
    ("proprietary modules on Blackwell", {"nvidia_gpu_architecture": "blackwell", "nvidia_gpu_kernel_modules": "proprietary"},
     "blackwell GPUs run only with the open kernel modules"),
    ("fabric manager without a host driver", {"nvidia_gpu_driver_managed_by": "operator", "nvidia_gpu_fabricmanager": True},
     "there is no host driver for fabric manager to match"),
    ("exact version outside the branch", {"nvidia_gpu_driver_branch": "570", "nvidia_gpu_driver_version": "580.65.06"},
     "nvidia_gpu_driver_version 580.65.06 is not a 570.x version"),
    ("os packages lack the branch", {"nvidia_gpu_driver_source": "os", "nvidia_gpu_driver_branch": "570"},
     "Driver branch 570 is not published for debian12 (distribution packages)"),
]
NVIDIA_GOOD = {"nvidia_gpu_driver_branch": "580", "nvidia_gpu_architecture": "hopper"}
AMD_REFUSED = [
    ({"amd_gpu_driver": "builtin"}, "amd_gpu_driver dkms or inbox (got builtin)"),
    ({"amd_gpu_rocm_version": "latest"}, "amd_gpu_rocm_version like 6.4.1 (got latest)"),
]
RDMA_REFUSED = [
    ({"rdma_soft_roce_devices": [{"name": "rxe0", "netdev": "nosuchnic0"}]}, "needs name (rxe0) and netdev"),
    ({"rdma_ipoib_interfaces": [{"name": "ib0", "address": "10.0.0.5"}]}, "address as CIDR"),
    ({"rdma_roce_settings": [{"device": "mlx5_0", "mode": "RoCE v3"}]}, "mode one of"),
    ({"rdma_stack": "mofed"}, "rdma_stack must be inbox or doca (got mofed)"),
]
# role -> its group -> {host: that case's variables}
ROLE_CASES = {
    "nvidia_gpu": ("gpu_nvidia", {**{f"nvidia{i}": host_vars for i, (_, host_vars, _) in enumerate(NVIDIA_REFUSED)},
                                  "nvidia_good": NVIDIA_GOOD}),
    "amd_gpu": ("gpu_amd", {f"amd{i}": host_vars for i, (host_vars, _) in enumerate(AMD_REFUSED)}),
    "rdma": ("rdma", {f"rdma{i}": host_vars for i, (host_vars, _) in enumerate(RDMA_REFUSED)}),
}


@pytest.fixture(scope="module")
def role_results(tmp_path_factory) -> dict[str, dict]:
    """{host: {"failed": bool, "msgs": [...]}} for every case of ROLE_CASES, from one run."""
    tmp = tmp_path_factory.mktemp("role_preflights")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {group: {"hosts": {host: {**local, **host_vars} for host, host_vars in cases.items()}}
                                      for group, cases in ROLE_CASES.values()}}}
    (tmp / "inventory.yml").write_text(yaml.safe_dump(inventory))
    # One play: a play whose hosts all failed would end the run before the next role's play.
    plays = [{"name": "Role preflights", "hosts": "all", "gather_facts": True,
              "gather_subset": ["!all", "!min", "distribution", "platform", "virtual", "network"],
              "tasks": [{"name": f"Preflight ({role})", "ansible.builtin.include_role": {"name": f"clusterdos.cluster.{role}",
                                                                                       "tasks_from": "preflight.yml"},
                         "when": f"inventory_hostname in groups['{group}']"}
                        for role, (group, _) in ROLE_CASES.items()]}]
    (tmp / "preflights.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0"}
    result = subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(tmp / "inventory.yml"), str(tmp / "preflights.yml")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    hosts = {host for _, cases in ROLE_CASES.values() for host in cases}
    return host_outcomes(json.loads(result.stdout), hosts, result.stdout[-2000:] + result.stderr[-2000:])


@pytest.mark.parametrize(
    ("case", "host", "expected"),
    [(case, f"nvidia{i}", expected) for i, (case, _, expected) in enumerate(NVIDIA_REFUSED)],
    ids=[case for case, _, _ in NVIDIA_REFUSED],
)
def test_nvidia_role_refuses(role_results, case, host, expected):
    assert role_results[host]["failed"], case
    assert any(expected in m for m in role_results[host]["msgs"]), (case, role_results[host]["msgs"])


def test_nvidia_role_accepts_good_input(role_results):
    assert not role_results["nvidia_good"]["failed"], role_results["nvidia_good"]["msgs"]


def test_both_vendors_on_one_host_refused_by_both_roles_and_the_inventory_check(tmp_path):
    both = {**NVIDIA, **AMD}
    for role, group in (("nvidia_gpu", "gpu_amd"), ("amd_gpu", "gpu_nvidia")):
        result = run_playbook(tmp_path, role_preflight(tmp_path, role), both, {})
        assert result.returncode != 0
        assert any(f"is in both the {'NVIDIA' if role == 'nvidia_gpu' else 'AMD'} group and {group}" in m
                   for m in failure_messages(result)), failure_messages(result)
    result = run_playbook(tmp_path, ROOT / "playbooks" / "gpu_preflight.yml", both, {})
    assert result.returncode != 0
    assert any("localhost is\n" in m or "localhost is in both gpu_nvidia and gpu_amd" in m.replace("\n", " ")
               for m in failure_messages(result)), failure_messages(result)


def test_inventory_check_fabric_manager_and_old_gpus(tmp_path):
    groups = {"gpu_nvidia": {"hosts": {"localhost": {}}}}
    result = run_playbook(tmp_path, ROOT / "playbooks" / "gpu_preflight.yml", groups,
                          {"nvidia_gpu_driver_managed_by": "operator", "nvidia_gpu_fabricmanager": True})
    assert any("no host driver for fabric manager to match" in m for m in failure_messages(result))
    result = run_playbook(tmp_path, ROOT / "playbooks" / "gpu_preflight.yml", groups, {"nvidia_gpu_architecture": "volta"})
    assert any("older than Turing" in m for m in failure_messages(result))
    result = run_playbook(tmp_path, ROOT / "playbooks" / "gpu_preflight.yml", groups,
                          {"nvidia_gpu_architecture": "volta", "nvidia_gpu_kernel_modules": "proprietary"})
    assert result.returncode == 0, failure_messages(result)


@pytest.mark.parametrize(("host", "expected"), [(f"amd{i}", expected) for i, (_, expected) in enumerate(AMD_REFUSED)],
                         ids=[f"host_vars{i}-{expected}" for i, (_, expected) in enumerate(AMD_REFUSED)])
def test_amd_role_refuses(role_results, host, expected):
    assert role_results[host]["failed"]
    assert any(expected in m.replace("\n", " ") for m in role_results[host]["msgs"]), role_results[host]["msgs"]


@pytest.mark.parametrize(("host", "expected"), [(f"rdma{i}", expected) for i, (_, expected) in enumerate(RDMA_REFUSED)],
                         ids=[f"host_vars{i}-{expected}" for i, (_, expected) in enumerate(RDMA_REFUSED)])
def test_rdma_role_refuses(role_results, host, expected):
    assert role_results[host]["failed"]
    assert any(expected in m for m in role_results[host]["msgs"]), role_results[host]["msgs"]
