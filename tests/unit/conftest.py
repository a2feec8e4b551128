"""Make the lab package and the collection importable in unit tests.

The collection resolves as `ansible_collections.clusterdos.cluster` through the link
`make setup` creates under .cache/collections, using ansible-core's own loader.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab"))
# Helpers shared by the unit tests (playbook_outcome).
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # noqa: E402

_AnsibleCollectionFinder(paths=[str(ROOT / ".cache" / "collections")])._install()


import importlib.util  # noqa: E402

import pytest  # noqa: E402

# The role_runner fixture (sandboxes and storage tests): play a role's tasks on this
# machine, see role_runner.py.
_SPEC = importlib.util.spec_from_file_location("clusterdos_unit_role_runner", ROOT / "tests" / "unit" / "role_runner.py")
_RUNNER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_RUNNER)


@pytest.fixture
def role_runner(tmp_path):
    def _run(*args, **kwargs):
        return _RUNNER.run_role(tmp_path, *args, **kwargs)
    return _run
