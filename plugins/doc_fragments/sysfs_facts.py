# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Documentation shared by the read-only fact modules that read sysfs."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  sysfs_root:
    description: Where sysfs is mounted. Tests point it at a tree they build.
    type: path
    default: /sys
attributes:
  check_mode:
    description: Reads only; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
"""
