#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""rdma_facts: the RDMA devices (HCAs, soft-RoCE) of a host and their link state."""

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_facts
short_description: Discover RDMA devices and port states
version_added: 0.1.0
description:
  - Reads C(/sys/class/infiniband) - every RDMA device (ConnectX HCAs, soft-RoCE C(rxe), C(siw)),
    its driver, GUID and firmware, and each port's state, physical state, link layer, rate and
    network interface.
  - Changes nothing on the host. Publishes the result as the facts C(clusterdos_hw.hcas) and
    C(clusterdos_hw.rdma) (the summary; see docs/rdma.md for the schema); the other keys of O(facts) are kept.
options:
  facts:
    description:
      - The host's current C(clusterdos_hw) fact, whose other keys (C(gpus)...) are kept.
        Pass C({{ ansible_facts['clusterdos_hw'] | default({}) }}).
    type: dict
    default: {}
  publish:
    description:
      - Keys laid over the published C(clusterdos_hw) (one level deep), such as C(rdma.stack) from the rdma role.
    type: dict
    default: {}
extends_documentation_fragment:
  - clusterdos.cluster.sysfs_facts
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Discover HCAs
  clusterdos.cluster.rdma_facts:
  register: __rdma

- name: Fail when no port is up
  ansible.builtin.assert:
    that: __rdma.summary.active_ports > 0
"""

RETURN = r"""
hcas:
  description: One entry per RDMA device, sorted by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Device name (mlx5_0, rxe0).
      type: str
    driver:
      description: Kernel driver (mlx5_core, rdma_rxe); null when unknown.
      type: str
    node_type:
      description: CA, switch or router.
      type: str
    node_guid:
      description: Node GUID.
      type: str
    fw_ver:
      description: Firmware version.
      type: str
    board_id:
      description: Board (PSID); null for software devices.
      type: str
    ports:
      description: Ports with C(port), C(state) (ACTIVE, DOWN, INIT...), C(phys_state) (LinkUp...), C(link_layer)
        (InfiniBand or Ethernet), C(rate) and C(netdev).
      type: list
      elements: dict
summary:
  description: C(hca_count), C(active_ports), C(active_infiniband_ports), C(active_ethernet_ports).
  returned: always
  type: dict
ansible_facts:
  description: The published fact.
  returned: always
  type: dict
  contains:
    clusterdos_hw:
      description: O(facts) with C(hcas) and C(rdma) (the summary) set to what was found and O(publish) laid over it.
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import publish
from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_rdma import hcas, summary

ARGUMENT_SPEC = {
    "sysfs_root": {"type": "path", "default": "/sys"},
    "facts": {"type": "dict", "default": {}},
    "publish": {"type": "dict", "default": {}},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    found = hcas(module.params["sysfs_root"])
    counts = summary(found)
    hw = publish(dict(module.params["facts"], hcas=found), "rdma", counts, module.params["publish"])
    module.exit_json(changed=False, hcas=found, summary=counts, ansible_facts={"clusterdos_hw": hw})


if __name__ == "__main__":
    main()
