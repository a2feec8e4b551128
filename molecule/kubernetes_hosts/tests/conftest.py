"""Shared helpers for the kubernetes_hosts verify tests: the lab hosts by name, the
scenario's variables (expectations come from molecule.yml, never from what a role wrote),
and ansible-playbook runs against molecule's own inventory.

Test modules run in file order; test_reset.py comes last because reset.yml removes the
fixture admin.conf the others use (it restores it afterwards, so verify can run again).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
INVENTORY = EPHEMERAL / "inventory"
GROUP_VARS = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["inventory"]["group_vars"]
LOGIN = "k8s-login"
CP = "k8s-cp"


def lab_host(name: str):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(INVENTORY))


@pytest.fixture(scope="session")
def login():
    return lab_host(LOGIN)


@pytest.fixture(scope="session")
def cp():
    return lab_host(CP)


def run_playbook(playbook: Path | str, *args: str) -> subprocess.CompletedProcess[str]:
    """ansible-playbook on the lab hosts, as the converge runs it (molecule/_shared/lab_playbook.py)."""
    return lab_playbook.run(playbook, *args, inventories=[INVENTORY], timeout=600)


def recap(run: subprocess.CompletedProcess[str], host: str) -> dict[str, int]:
    """The PLAY RECAP counters of one host, e.g. {'ok': 6, 'changed': 0, 'failed': 0, ...}."""
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(host + " ") and "ok=" in ln]
    assert lines, f"no recap line for {host}:\n{run.stdout[-3000:]}"
    return {k: int(v) for k, v in (f.split("=") for f in lines[-1].split(":", 1)[1].split())}


def host_state(host) -> str:
    """What a refused run must leave untouched: installed packages, /usr/local/bin, the
    systemd units, /etc/apt (sources, keyrings) and /etc/kubernetes, with sizes and times."""
    return host.check_output(
        "dpkg-query -W -f '${Package} ${Version} ${Status}\\n'; "
        "find /usr/local/bin /etc/systemd/system /etc/apt /etc/kubernetes -printf '%p %s %T@\\n' 2>/dev/null | sort")
