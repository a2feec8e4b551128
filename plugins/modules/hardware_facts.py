#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""hardware_facts: a host's GPUs and RDMA devices in one call (the hardware_facts role)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: hardware_facts
short_description: Discover a host's GPUs and RDMA devices in one call, and check the declared GPUs
version_added: 0.1.0
description:
  - What M(clusterdos.cluster.gpu_facts) and M(clusterdos.cluster.rdma_facts) discover, read in one
    module call (one round trip to the host instead of two; the hardware_facts role runs it on every
    host of a run).
  - Changes nothing on the host. Publishes C(clusterdos_hw.gpus), C(clusterdos_hw.hcas) and
    C(clusterdos_hw.rdma) (docs/gpu.md and docs/rdma.md give the schema); the other keys of O(facts) are kept.
  - Fails, naming O(host), what the inventory declares and what was found, when the GPUs found differ from O(declared).
  - With O(host_facts) and O(records), the same call is a run's whole first read of a host (one round trip instead of
    three; the hardware_facts role, docs/performance.md "The fast path"), with Ansible's own facts and what the stages'
    converge records keep, probed for the controller to compare (M(clusterdos.cluster.converge_stamp), its digest state
    with C(probes)).
options:
  facts:
    description:
      - The host's current C(clusterdos_hw) fact, whose other keys are kept.
        Pass C({{ ansible_facts['clusterdos_hw'] | default({}) }}).
    type: dict
    default: {}
  declared:
    description:
      - The GPUs the inventory declares for this host (C(clusterdos_gpus), C([{vendor, type, count}])). When given
        and the GPUs found differ (count per vendor), the module fails and says how.
    type: list
    elements: dict
  host:
    description: The inventory name the failure message starts with.
    type: str
    default: ""
  host_facts:
    description:
      - Also return Ansible's own facts in RV(ansible_facts), as M(ansible.builtin.setup) names them, its C(min),
        C(network) and C(virtual) subsets and, on Linux, the processor and memory facts of its C(hardware) subset
        (without its mount, block device, LVM and DMI reads, which no role of the collection reads; elsewhere the
        whole C(hardware) subset).
    type: bool
    default: false
  records:
    description:
      - A directory of converge records (M(clusterdos.cluster.converge_stamp)'s
        O(clusterdos.cluster.converge_stamp#module:directory)). Each record in it is read and what it keeps of the
        host (files, services, sysctls) is probed, for RV(records). Reads only.
    type: path
extends_documentation_fragment:
  - clusterdos.cluster.sysfs_facts
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Discover GPUs and RDMA devices, stop when the declared GPUs are not there
  clusterdos.cluster.hardware_facts:
    facts: "{{ ansible_facts['clusterdos_hw'] | default({}) }}"
    declared: "{{ clusterdos_gpus | default([]) }}"
    host: "{{ inventory_hostname }}"
"""

RETURN = r"""
gpus:
  description: The GPUs found, as M(clusterdos.cluster.gpu_facts) returns them.
  returned: always
  type: dict
hcas:
  description: The RDMA devices found, as M(clusterdos.cluster.rdma_facts) returns them.
  returned: always
  type: list
  elements: dict
records:
  description:
    - With O(records), each recorded stage's C(record) (its C(version), C(digest) and C(inputs)) and C(state) (what
      drifted since, in files, services or sysctls), by stage name; a stage without a record is absent.
  returned: when records is given
  type: dict
ansible_facts:
  description: The published facts.
  returned: always
  type: dict
  contains:
    clusterdos_hw:
      description: O(facts) with C(gpus), C(hcas) and C(rdma) (the RDMA summary) set to what was found.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp, host_facts
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import declared_mismatch, gpu_facts, publish
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_rdma import hcas, summary

ARGUMENT_SPEC = {
    "facts": {"type": "dict", "default": {}},
    "declared": {"type": "list", "elements": "dict"},
    "host": {"type": "str", "default": ""},
    "sysfs_root": {"type": "path", "default": "/sys"},
    "host_facts": {"type": "bool", "default": False},
    "records": {"type": "path"},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    root = module.params["sysfs_root"]
    gpus = gpu_facts(root, run=module.run_command, nvidia_smi=module.get_bin_path("nvidia-smi"))
    found = hcas(root)
    hw = publish(dict(module.params["facts"], hcas=found, rdma=summary(found)), "gpus", gpus, {})
    declared = module.params["declared"]
    mismatch = declared_mismatch(declared, gpus) if declared else None
    if mismatch:
        prefix = module.params["host"] + ": " if module.params["host"] else ""
        module.fail_json(msg=prefix + mismatch, gpus=gpus, hcas=found)
    facts = host_facts.gather(module) if module.params["host_facts"] else {}
    extra = {"records": converge_stamp.probe_directory(module.params["records"], converge_stamp.systemd_active(module))} \
        if module.params["records"] else {}
    module.exit_json(changed=False, gpus=gpus, hcas=found, ansible_facts=dict(facts, clusterdos_hw=hw), **extra)


if __name__ == "__main__":
    main()
