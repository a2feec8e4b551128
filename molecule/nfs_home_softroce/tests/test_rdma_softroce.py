"""Verify the rdma role on two QEMU VMs: soft-RoCE devices that really move data.

Expectations come from the lab's inventory (addresses) and the scenario's group_vars.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import pytest
import yaml

INVENTORY = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "inventory" / "clusterdos_lab.yml"
HOSTS = yaml.safe_load(INVENTORY.read_text())["all"]["hosts"]
SERVER, CLIENT = sorted(HOSTS)[1], sorted(HOSTS)[0]

testinfra_hosts = [f"ansible://{name}" for name in HOSTS]


def test_rxe0_is_an_active_roce_device(host):
    out = host.check_output("ibv_devinfo -d rxe0")
    assert re.search(r"hca_id:\s+rxe0", out)
    assert re.search(r"state:\s+PORT_ACTIVE", out)
    assert re.search(r"link_layer:\s+Ethernet", out)
    assert host.check_output("rdma link show rxe0/1").split()[-1] == "eth0"


def test_rdma_facts_module_reports_the_device(host):
    facts = host.ansible("clusterdos.cluster.rdma_facts", check=False)
    rxe = [h for h in facts["hcas"] if h["name"] == "rxe0"]
    assert rxe and rxe[0]["driver"] == "rdma_rxe"
    port = rxe[0]["ports"][0]
    assert (port["state"], port["link_layer"], port["netdev"]) == ("ACTIVE", "Ethernet", "eth0")
    assert facts["summary"]["active_ethernet_ports"] >= 1


def test_modules_persisted_and_loaded(host):
    conf = host.file("/etc/modules-load.d/60-clusterdos-rdma.conf").content_string.split()
    for module in ("ib_core", "ib_uverbs", "rdma_ucm", "rdma_rxe"):
        assert module in conf
        assert host.file(f"/sys/module/{module}").is_directory, module


def test_soft_roce_unit_enabled_for_next_boot(host):
    unit = host.service("clusterdos-soft-roce")
    assert unit.is_enabled
    assert host.run("systemctl is-active clusterdos-soft-roce").stdout.strip() == "active"


def test_roce_defaults_applied_through_configfs(host):
    base = "/sys/kernel/config/rdma_cm/rxe0/ports/1"
    assert host.file(f"{base}/default_roce_mode").content_string.strip() == "RoCE v2"
    assert host.file(f"{base}/default_roce_tos").content_string.strip() == "106"


def test_memlock_unlimited_for_rdma(host):
    assert "memlock    unlimited" in host.file("/etc/security/limits.d/90-clusterdos-rdma.conf").content_string
    for tool in ("ib_write_bw", "ibstat", "ibv_devinfo"):
        assert host.exists(tool), tool


# perftest has no deadline of its own: a transfer that stalls (seen once in a CI run, where
# the VMs share two loaded cores) waits for ever, so every ib_write_bw runs under timeout(1),
# and a stalled round is retried with a fresh server. Each round's output is kept for the
# failure message.
PERFTEST = "ib_write_bw -d rxe0 -x 1 -s 65536 -n 200"
ROUNDS = 3


def _ib_write_bw_round(server, client, server_ip):
    server.run("systemctl stop ib-write-bw-server 2>/dev/null; systemctl reset-failed ib-write-bw-server 2>/dev/null")
    # The server runs as a transient unit (outlives this SSH session) and exits after one test.
    # GID index 1 is the IPv4-mapped (RoCE v2) address of eth0 (0 is link-local). Not -R:
    # Debian's perftest 4.5 client segfaults with rdma_cm on rxe (seen in this lab).
    server.check_output("systemd-run --unit ib-write-bw-server --collect "
                        f"sh -c 'timeout 150 {PERFTEST} > /tmp/ib_write_bw.server 2>&1'")
    # Readiness wait for the server's listener: an attempt before it listens fails at once
    # (connection refused) and is tried again; one that times out (rc 124) stalled in the
    # transfer, and this round ends.
    result = client.run(
        f"for i in $(seq 1 30); do timeout 90 {PERFTEST} {server_ip} > /tmp/ib_write_bw.client 2>&1; rc=$?; "
        "[ $rc -eq 0 ] && exit 0; [ $rc -eq 124 ] && exit 124; sleep 2; done; exit 1")
    return result.rc, client.file("/tmp/ib_write_bw.client").content_string


@pytest.mark.parametrize("pair", [(SERVER, CLIENT)])
def test_ib_write_bw_moves_data_between_the_vms(pair):
    import testinfra

    server_name, client_name = pair
    server = testinfra.get_host(f"ansible://{server_name}", ansible_inventory=os.environ.get("MOLECULE_INVENTORY_FILE"))
    client = testinfra.get_host(f"ansible://{client_name}", ansible_inventory=os.environ.get("MOLECULE_INVENTORY_FILE"))
    server_ip = HOSTS[server_name]["clusterdos_node_ip"]
    failed = []
    for attempt in range(1, ROUNDS + 1):
        rc, out = _ib_write_bw_round(server, client, server_ip)
        if rc == 0:
            break
        failed.append(f"round {attempt}: rc {rc}\n{out}")
    server.run("systemctl stop ib-write-bw-server 2>/dev/null; systemctl reset-failed ib-write-bw-server 2>/dev/null")
    assert rc == 0, "\n".join(failed)
    if failed:
        # Passed after a stalled or failed round: said in the run's warnings summary.
        warnings.warn(f"ib_write_bw passed in round {len(failed) + 1}; before it:\n" + "\n".join(failed), stacklevel=1)
    # Result row: #bytes #iterations BW peak BW average MsgRate
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*65536\s+200\s", line)]
    assert rows, out
    assert float(rows[0][3]) > 0, out
    assert "RDMA_Write" in out and "rxe0" in out
