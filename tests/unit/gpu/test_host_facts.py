"""hardware_facts' `host_facts`: the run's first read of a host gathers Ansible's own facts in
the same module call. Run for real on this machine (connection local) beside
ansible.builtin.setup: every fact the collection's roles and the fast path's digest read has
setup's value, and the hardware subset's slow reads (mounts, block devices, DMI) are left out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp as cs
from playbook_outcome import run_json

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: setup
      ansible.builtin.setup:
      register: setup
    - name: ours
      clusterdos.cluster.hardware_facts:
        host_facts: true
      register: ours
    - name: hardware only
      clusterdos.cluster.hardware_facts:
      register: hardware_only
"""

# Besides the digest's FACT_KEYS: what roles and templates read (grep ansible_facts in roles/).
READ_BY_ROLES = ("os_family", "swaptotal_mb", "interfaces", "service_mgr", "pkg_mgr", "kernel_version", "python_version",
                 "all_ipv4_addresses", "selinux", "apparmor", "env", "user_id", "lsb", "dns", "date_time")


def test_host_facts_equal_setups_where_the_roles_read_them(tmp_path: Path):
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local",
                                                              "ansible_python_interpreter": sys.executable}}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    res = run_json(inventory, tmp_path / "play.yml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    results = {t["task"]["name"]: t["hosts"]["h1"] for t in json.loads(res.stdout)["plays"][0]["tasks"]}
    setup = {k.removeprefix("ansible_"): v for k, v in results["setup"]["ansible_facts"].items()}
    ours = {k.removeprefix("ansible_"): v for k, v in results["ours"]["ansible_facts"].items()}
    for key in set(cs.FACT_KEYS) - {"clusterdos_hw"} | set(READ_BY_ROLES):
        if key in ("interfaces", "all_ipv4_addresses"):
            assert sorted(ours[key]) == sorted(setup[key]), key
        elif key == "date_time":
            assert ours[key]["tz"] == setup[key]["tz"]
        else:
            assert key in setup and ours[key] == setup[key], (key, ours.get(key), setup.get(key))
    # Every interface's own facts (node addresses by interface name), as setup has them.
    for name in setup["interfaces"]:
        key = name.replace("-", "_")
        assert ours[key].get("ipv4") == setup[key].get("ipv4"), name
    # The discovered hardware comes with them, as without host_facts.
    assert ours["clusterdos_hw"] == results["hardware only"]["ansible_facts"]["clusterdos_hw"]
    # The hardware subset's mount, block device and DMI reads are not made.
    for key in ("mounts", "devices", "lvm", "product_name", "bios_version"):
        assert key in setup and key not in ours, key
    # Without host_facts, only the hardware.
    assert list(results["hardware only"]["ansible_facts"]) == ["clusterdos_hw"]
