# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Filters that read the inventory the same way in every role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_addresses
short_description: The cluster address of each host in a list
version_added: 0.1.0
description:
  - For each host name returns C(name) and C(address), taking the address from
    C(clusterdos_node_ip), then C(ansible_host) when it is an IP address, then the
    gathered default IPv4 address. C(address) is C(None) when none is known.
positional: hostvars
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) mapping.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Hosts with no known address
  ansible.builtin.debug:
    msg: "{{ groups['all'] | clusterdos.cluster.node_addresses(hostvars) | selectattr('address', 'none') | list }}"
"""

RETURN = r"""
_value:
  description: One mapping per host, in input order, with keys C(name) and C(address).
  type: list
  elements: dict
"""

import ipaddress
from typing import Any, Mapping


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def node_address(hostvars: Mapping[str, Any], name: str) -> str | None:
    hv = hostvars.get(name) or {}
    explicit = hv.get("clusterdos_node_ip")
    if explicit:
        return str(explicit)
    if _is_ip(hv.get("ansible_host", "")):
        return str(hv["ansible_host"])
    facts = hv.get("ansible_facts") or {}
    default = facts.get("default_ipv4") or {}
    return str(default["address"]) if default.get("address") else None


def node_addresses(hosts: list[str], hostvars: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"name": h, "address": node_address(hostvars, h)} for h in hosts]


class FilterModule:
    """clusterdos.cluster inventory filters."""

    def filters(self) -> dict[str, Any]:
        return {"node_addresses": node_addresses}
