"""playbooks/preflight.yml refuses bad inventories with a message that says what to fix.

Runs the real playbook on the controller against small inventories; no host is contacted.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"


def run_preflight(tmp_path: Path, inventory: dict) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "hosts.yml"
    inv.write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{BIN}:{os.environ['PATH']}")
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inv), str(ROOT / "playbooks" / "preflight.yml")],
                          capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize(
    "extra",
    [
        {"clusterdos_package_proxy": "http://10.0.0.254:3142"},
        # Letters the URL patterns' escapes could be confused with (\s, \S): a proxy host
        # with an "s", a Slurm site repository with its key by URL.
        {"clusterdos_package_proxy": "http://squid.site.example:3128/"},
    ],
    ids=["proxy", "proxy-host-with-s"],
)
def test_good_inventory_passes(tmp_path, extra):
    inv = {"all": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}, "node2": {"ansible_host": "10.0.0.2"}},
                   "vars": extra}}
    result = run_preflight(tmp_path, inv)
    assert result.returncode == 0, result.stdout + result.stderr


def test_slurm_site_repository_with_a_key_url_passes(tmp_path):
    inv = {"all": {"vars": {"slurm_apt_repository": "deb [signed-by=/etc/apt/keyrings/slurm.asc] http://mirror.example/s bookworm main",
                            "slurm_apt_repository_key_url": "https://mirror.example/keys/slurm.asc",
                            "slurm_accounting_enabled": False},
                   "children": {"slurm_controller": {"hosts": {"ctl": {"ansible_host": "10.0.0.1"}}},
                                "slurm_compute": {"hosts": {"c1": {"ansible_host": "10.0.0.2"}}}}}}
    result = run_preflight(tmp_path, inv)
    assert result.returncode == 0, result.stdout + result.stderr
    bad = {"all": {**inv["all"], "vars": {**inv["all"]["vars"], "slurm_apt_repository_key_url": "ftp://x/slurm.asc"}}}
    result = run_preflight(tmp_path, bad)
    assert result.returncode != 0
    assert "slurm_apt_repository must be a one-line 'deb ...' source" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("inventory", "message"),
    [
        ({"all": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}, "node2": {"clusterdos_node_ip": "10.0.0.1"}}}},
         "Two hosts share a node address: ['10.0.0.1']"),
        ({"all": {"hosts": {"Node_1": {"ansible_host": "10.0.0.1"}}}}, "fix Node_1"),
        ({"all": {"hosts": {"node1": {"ansible_host": "10.0.0.1"}}, "vars": {"clusterdos_package_proxy": "proxy:3142"}}},
         "clusterdos_package_proxy must look like http://HOST:PORT"),
    ],
    ids=["duplicate-address", "bad-hostname", "bad-proxy"],
)
def test_bad_inventory_is_refused_with_a_reason(tmp_path, inventory, message):
    result = run_preflight(tmp_path, inventory)
    assert result.returncode != 0
    assert message in result.stdout
