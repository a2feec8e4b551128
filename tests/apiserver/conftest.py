"""Session fixtures: the catalog's real charts over HTTP, and one real API server for the session.

See realapi.py. Both read ../shared (beside the repository, read-only); without it these
tests fail with a message saying so (CI runs a clean clone with ../shared beside it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # noqa: E402

_AnsibleCollectionFinder(paths=[str(ROOT / ".cache" / "collections")])._install()

import realapi  # noqa: E402


@pytest.fixture(scope="session")
def chart_repo():
    """URL of ../shared/charts served as a Helm repository on 127.0.0.1 (a site's chart mirror)."""
    server, url = realapi.serve_charts()
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory):
    """One kube-apiserver + etcd for the whole session (no nodes: no pod ever runs)."""
    api = realapi.start_apiserver(tmp_path_factory.mktemp("apiserver"))
    yield api
    api.stop()
