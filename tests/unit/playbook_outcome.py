"""Run a playbook with ansible's json stdout callback, and read its per-host outcome.

run_json is the unit tests' one way to run ansible-playbook for a machine-readable result;
host_outcomes serves the tests that run many cases as one run, one host per case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


def run_json(inventory: Path, playbook: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """ansible-playbook (this checkout's: its ansible.cfg, its collection link) on INVENTORY
    with the json stdout callback, from the checkout's root; ARGS go before the playbook."""
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.json",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
           "PATH": f"{ANSIBLE_PLAYBOOK.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(ANSIBLE_PLAYBOOK), "-i", str(inventory), *args, str(playbook)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def local_inventory(path: Path, hosts: Iterable[str]) -> Path:
    """Write an inventory of HOSTS, each this machine (connection local, this Python), to PATH."""
    path.write_text(json.dumps({"all": {"hosts": {h: {} for h in hosts},
                                        "vars": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}))
    return path


def host_outcomes(data: dict[str, Any], hosts: Iterable[str], context: str = "") -> dict[str, dict[str, Any]]:
    """{host: {"failed": bool, "msgs": [...], "stats": recap}} for HOSTS from the json callback's DATA.

    A failed task's msg and its failed loop items' msgs are collected. Every host must be in
    the recap, unreachable nowhere, and failed there exactly when a task failed (CONTEXT is
    added to the assertion messages).
    """
    outcome = {host: {"failed": False, "msgs": [], "stats": data["stats"].get(host)} for host in hosts}
    for play in data["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if host in outcome and res.get("failed"):
                    outcome[host]["failed"] = True
                    outcome[host]["msgs"].append(res.get("msg", ""))
                    outcome[host]["msgs"] += [r.get("msg", "") for r in res.get("results", [])
                                              if r.get("failed") or r.get("evaluated_to") is False]
    for host, case in outcome.items():
        assert case["stats"] is not None, f"{host} is missing from the recap: {context}"
        assert case["stats"]["unreachable"] == 0 and bool(case["stats"]["failures"]) == case["failed"], (host, case)
    return outcome
