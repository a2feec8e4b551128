"""Shared by this scenario's test files: ansible-playbook with one of the collection's
playbooks against the lab, as the scenario's converge runs it (molecule/_shared/lab_playbook.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])


@pytest.fixture(scope="session")
def playbook():
    """playbook(NAME, *ARGS, timeout=S): playbooks/NAME run against the lab's inventory as the
    converge runs it (molecule/_shared/lab_playbook.py); the completed process (output
    captured as text), whatever its exit status."""

    def run(name: str, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
        return lab_playbook.run(name, *args, inventories=[EPHEMERAL / "inventory"], timeout=timeout)

    return run
