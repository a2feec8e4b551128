"""Shared by this scenario's test files: the lab's inventory and members, a testinfra host
per member, and the collection's playbooks run against the lab as a site runs them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import testinfra
import yaml

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
INVENTORY = EPHEMERAL / "inventory"
LAB = yaml.safe_load((INVENTORY / "clusterdos_lab.yml").read_text())["all"]
MEMBERS = sorted(LAB["children"]["kube_control_plane"]["hosts"])


def host(name):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(INVENTORY))


def run_playbook(name: str, extra: dict | None = None) -> subprocess.CompletedProcess:
    """playbooks/NAME on molecule's inventory (the scenario's variables), as a site runs it."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(PROJECT / ".cache" / "collections"),
               CLUSTERDOS_ROOT=str(PROJECT), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               # One line per result (molecule's yaml result format folds long messages).
               ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    if (EPHEMERAL / "ansible.cfg").exists():
        env["ANSIBLE_CONFIG"] = str(EPHEMERAL / "ansible.cfg")
    env["PATH"] = f"{PROJECT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    argv = ["ansible-playbook", "-i", str(INVENTORY), str(PROJECT / "playbooks" / name)]
    if extra:
        argv += ["-e", json.dumps(extra)]
    return subprocess.run(argv, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=900, check=False)


def tail(run: subprocess.CompletedProcess) -> str:
    return run.stdout[-5000:] + run.stderr[-2000:]
