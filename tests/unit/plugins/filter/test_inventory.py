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


def test_preflight_pending_until_each_kind_of_check_passed():
    """The preflight plays' and the stages' host-check plays' `hosts:`: their own pattern
    until the run marks those checks passed on localhost, then a pattern matching none."""
    from ansible.errors import AnsibleFilterError

    from ansible_collections.clusterdos.cluster.plugins.filter.inventory import NO_HOSTS, preflight_pending

    assert preflight_pending("localhost", {}) == "localhost"  # the run's first play: no hostvars yet
    assert preflight_pending("localhost", {"localhost": {}}) == "localhost"
    inventory_done = {"localhost": {"__clusterdos_preflight_passed": True}}
    assert preflight_pending("localhost", inventory_done) == NO_HOSTS
    # The inventory checks passing says nothing of the host checks, and the other way round.
    assert preflight_pending("rdma:&all", inventory_done, "hosts") == "rdma:&all"
    hosts_done = {"localhost": {"__clusterdos_host_checks_passed": True}}
    assert preflight_pending("rdma:&all", hosts_done, "hosts") == NO_HOSTS
    assert preflight_pending("localhost", hosts_done) == "localhost"
    with pytest.raises(AnsibleFilterError, match="checks must be one of"):
        preflight_pending("all", hosts_done, "host")


def test_preflight_passed_reads_the_same_markers():
    from ansible_collections.clusterdos.cluster.plugins.filter.inventory import preflight_passed

    assert preflight_passed({}) is False
    assert preflight_passed({"localhost": {"__clusterdos_preflight_passed": True}}) is True
    assert preflight_passed({"localhost": {"__clusterdos_preflight_passed": True}}, "hosts") is False
    assert preflight_passed({"localhost": {"__clusterdos_host_checks_passed": True}}, "hosts") is True
