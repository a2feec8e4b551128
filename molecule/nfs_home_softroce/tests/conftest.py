"""Shared by this scenario's test files: ansible-playbook with one of the collection's
playbooks against the lab, in the environment the scenario's own steps give it (this
checkout's collection, the scenario's ansible.cfg, no colour)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
ROOT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))


@pytest.fixture(scope="session")
def playbook():
    """playbook(NAME, *ARGS, timeout=S): playbooks/NAME run against the lab's inventory; the
    completed process (output captured as text), whatever its exit status."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"))
    if (EPHEMERAL / "ansible.cfg").exists():
        env["ANSIBLE_CONFIG"] = str(EPHEMERAL / "ansible.cfg")

    def run(name: str, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
        return subprocess.run(["ansible-playbook", "-i", str(EPHEMERAL / "inventory"), str(ROOT / "playbooks" / name), *args],
                              capture_output=True, text=True, env=env, timeout=timeout, check=False)

    return run
