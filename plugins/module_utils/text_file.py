# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Write a text file only when its content differs, atomically: the modules that write
files on a host (cluster_report's reports, converge_stamp's records) share this."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Optional, Tuple


def write_text(module: Any, path: str, text: str, dir_mode: int = 0o755,
               mode: Optional[int] = None) -> Tuple[bool, Optional[str]]:
    """Write TEXT to PATH unless it already holds it; nothing is written in check mode.

    Returns (changed, the text before, or None when there was no file). The directory is
    created with DIR_MODE when missing; MODE, when given, is set on a file written here.
    """
    before = None
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            before = handle.read()
    if before == text:
        return False, before
    if module.check_mode:
        return True, before
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, dir_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path))
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    module.atomic_move(tmp, path)
    if mode is not None:
        os.chmod(path, mode)
    return True, before
