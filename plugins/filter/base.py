# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Filters for the base role (logic in module_utils.sysctl_config)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: sysctl_overrides
short_description: The sysctls another sysctl.d file sets differently after the role's own drop-in
version_added: 0.1.0
description:
  - Reads the output of C(systemd-analyze cat-config sysctl.d) (every file systemd-sysctl applies at boot, in order,
    each after a C(# /path) line) and returns each wanted key that a file applied after O(own_file) sets to another
    value, so that the host would boot with that value.
  - Files apply sorted by name whatever their directory; O(own_file) need not exist yet.
options:
  _input:
    description: The output of C(systemd-analyze cat-config sysctl.d).
    type: str
    required: true
  wanted:
    description: The keys and values the role writes.
    type: dict
    required: true
  own_file:
    description: The role's drop-in (C(base_sysctl_file)).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Stop where a later file overrides the role's sysctls
  ansible.builtin.assert:
    that: cat_config.stdout | clusterdos.cluster.sysctl_overrides(base_sysctl_config, base_sysctl_file) | length == 0
"""

RETURN = r"""
_value:
  description: One C({key, value, wanted, file}) per overridden key, sorted by key.
  type: list
  elements: dict
"""

from typing import Any, Mapping

from ansible_collections.clusterdos.cluster.plugins.module_utils import sysctl_config


def sysctl_overrides(cat_config: str, wanted: Mapping[str, Any], own_file: str) -> list[dict[str, str]]:
    return sysctl_config.overrides(str(cat_config or ""), wanted or {}, str(own_file))


class FilterModule:
    """clusterdos.cluster base filters."""

    def filters(self) -> dict[str, Any]:
        return {"sysctl_overrides": sysctl_overrides}
