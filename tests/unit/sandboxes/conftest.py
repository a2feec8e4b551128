"""The role_runner fixture: play a role's tasks on this machine (see role_runner.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "clusterdos_unit_role_runner", Path(__file__).resolve().parents[1] / "sandboxes" / "role_runner.py")
_RUNNER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_RUNNER)


@pytest.fixture
def role_runner(tmp_path):
    def _run(*args, **kwargs):
        return _RUNNER.run_role(tmp_path, *args, **kwargs)
    return _run
