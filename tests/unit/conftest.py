"""Make the lab package and the collection importable in unit tests.

The collection resolves as `ansible_collections.clusterdos.cluster` through the link
`make setup` creates under .cache/collections, using ansible-core's own loader.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lab"))

from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # noqa: E402

_AnsibleCollectionFinder(paths=[str(ROOT / ".cache" / "collections")])._install()
