# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Reading sysfs for the fact modules: a file's text and a directory's entries, or nothing."""

from __future__ import annotations

import os
from typing import Callable, List, Optional


def read(path: str) -> Optional[str]:
    """The file's text without surrounding space, or None when it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def entries(path: str, key: Optional[Callable[[str], object]] = None) -> List[str]:
    """The directory's entries, sorted (by ``key`` when given); empty when it does not exist."""
    try:
        return sorted(os.listdir(path), key=key)  # type: ignore[arg-type]
    except OSError:
        return []
