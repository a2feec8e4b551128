# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Ansible's own facts of a host, the subsets the collection's roles read, gathered inside
another module (hardware_facts) so that a run's first read of a host is one round trip."""

from __future__ import annotations

import platform
from typing import Any, Dict

from ansible.module_utils.facts import ansible_collector, default_collectors
from ansible.module_utils.facts.namespace import PrefixFactNamespace

# setup's own minimal subset (ansible/modules/setup.py): what gather_subset=min collects.
MINIMAL_SUBSET = frozenset(["apparmor", "caps", "cmdline", "date_time", "distribution", "dns", "env", "fips", "local",
                            "lsb", "pkg_mgr", "platform", "python", "selinux", "service_mgr", "ssh_pub_keys", "user"])
# min + network (interfaces, default_ipv4: node addresses) + virtual (containers and VMs skip
# the kernel probes). The hardware subset's processor and memory facts are added on Linux
# without its mount, block device, LVM and DMI reads, which no role reads and which cost
# the most; elsewhere the whole hardware subset is gathered.
SUBSETS = ("!all", "network", "virtual")


def gather(module: Any, timeout: int = 10) -> Dict[str, Any]:
    """The host's facts, keys prefixed ansible_ as setup returns them (Ansible strips the
    prefix into ansible_facts)."""
    linux = platform.system() == "Linux"
    subsets = list(SUBSETS) + ([] if linux else ["hardware"])
    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=default_collectors.collectors,
        namespace=PrefixFactNamespace(namespace_name="ansible", prefix="ansible_"),
        filter_spec=[], gather_subset=subsets, gather_timeout=timeout, minimal_gather_subset=MINIMAL_SUBSET)
    facts = collector.collect(module=module)
    if linux:
        # Imported here: the module is Linux only, and its import reads nothing.
        from ansible.module_utils.facts.hardware.linux import LinuxHardware  # pylint: disable=import-outside-toplevel
        hardware = LinuxHardware(module)
        plain = {k[len("ansible_"):]: v for k, v in facts.items() if k.startswith("ansible_")}
        for key, value in {**hardware.get_cpu_facts(collected_facts=plain), **hardware.get_memory_facts()}.items():
            facts["ansible_" + key] = value
    facts.pop("ansible_gather_subset", None)
    facts.pop("ansible_module_setup", None)
    return facts
