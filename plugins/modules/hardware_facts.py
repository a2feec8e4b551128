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
ansible_facts:
  description: The published fact.
  returned: always
  type: dict
  contains:
    clusterdos_hw:
      description: O(facts) with C(gpus), C(hcas) and C(rdma) (the RDMA summary) set to what was found.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import declared_mismatch, gpu_facts, publish
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_rdma import hcas, summary

ARGUMENT_SPEC = {
    "facts": {"type": "dict", "default": {}},
    "declared": {"type": "list", "elements": "dict"},
    "host": {"type": "str", "default": ""},
    "sysfs_root": {"type": "path", "default": "/sys"},
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
    module.exit_json(changed=False, gpus=gpus, hcas=found, ansible_facts={"clusterdos_hw": hw})


if __name__ == "__main__":
    main()
