"""node_addresses: the address every role uses for a host."""

from __future__ import annotations

import pytest

from ansible_collections.clusterdos.cluster.plugins.filter.inventory import node_addresses

HOSTVARS = {
    "explicit": {"clusterdos_node_ip": "10.0.0.5", "ansible_host": "10.9.9.9"},
    "by_ansible_host": {"ansible_host": "10.0.0.6"},
    "by_name_and_facts": {"ansible_host": "gpu7.example", "ansible_facts": {"default_ipv4": {"address": "10.0.0.7"}}},
    "unknown": {"ansible_host": "gpu8.example"},
}


@pytest.mark.parametrize(
    ("host", "address"),
    [("explicit", "10.0.0.5"), ("by_ansible_host", "10.0.0.6"), ("by_name_and_facts", "10.0.0.7"), ("unknown", None)],
)
def test_address_precedence(host, address):
    assert node_addresses([host], HOSTVARS) == [{"name": host, "address": address}]


def test_host_missing_from_hostvars_has_no_address():
    assert node_addresses(["ghost"], HOSTVARS) == [{"name": "ghost", "address": None}]


def test_order_is_kept():
    names = ["unknown", "explicit", "by_ansible_host"]
    assert [e["name"] for e in node_addresses(names, HOSTVARS)] == names
