#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""gpu_facts: the GPUs, NVSwitches and GPU driver a host has."""

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_facts
short_description: Discover GPUs, NVSwitches and the loaded GPU driver
version_added: 0.1.0
description:
  - Reads PCI devices from sysfs (NVIDIA and AMD GPUs, NVIDIA NVSwitches), the version of the
    loaded C(nvidia) or C(amdgpu) kernel module, and, when C(nvidia-smi) is present, the GPU
    model and driver version it reports.
  - Changes nothing on the host. Publishes the result as the fact C(clusterdos_hw.gpus) (see
    docs/gpu.md for the schema), the one source Slurm GRES, node labels and validation read; the other
    keys of O(facts) are kept.
options:
  facts:
    description:
      - The host's current C(clusterdos_hw) fact, whose other keys (C(hcas), C(rdma)...) are kept.
        Pass C({{ ansible_facts['clusterdos_hw'] | default({}) }}).
    type: dict
    default: {}
  publish:
    description:
      - Keys laid over the published C(clusterdos_hw) (one level deep), such as
        C(gpu_driver_managed_by) or C(gpus.reboot_required) from the GPU roles.
    type: dict
    default: {}
  architecture:
    description:
      - The NVIDIA GPU architecture (pascal ... blackwell) to assume when the device ID is not in the
        collection's table. Empty uses what was discovered.
    type: str
    default: ""
  kernel_modules:
    description:
      - The NVIDIA kernel-module flavour the caller intends to install. When given, C(kernel_modules_problem)
        says why it cannot drive these GPUs (open before Turing, proprietary on Blackwell).
    type: str
    choices: [open, proprietary]
extends_documentation_fragment:
  - clusterdos.cluster.sysfs_facts
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Discover GPUs
  clusterdos.cluster.gpu_facts:
  register: __gpus

- name: Show the model
  ansible.builtin.debug:
    msg: "{{ __gpus.gpus.count }} x {{ __gpus.gpus.model }}"

- name: Publish GPUs under clusterdos_hw, keeping what the RDMA discovery put there
  clusterdos.cluster.gpu_facts:
    facts: "{{ ansible_facts['clusterdos_hw'] | default({}) }}"
"""

RETURN = r"""
gpus:
  description: What was found.
  returned: always
  type: dict
  contains:
    vendor:
      description: C(nvidia), C(amd), C(mixed) or C(none).
      type: str
    count:
      description: Number of GPUs (of the vendor; NVIDIA when mixed).
      type: int
    model:
      description: The most common model, from nvidia-smi or the collection's table of device IDs; null when unknown.
      type: str
    type:
      description: A short type from the model for Slurm GRES and node labels (C(h100), C(mi300x)); null when unknown.
      type: str
    architecture:
      description: The most common architecture (pascal ... blackwell, cdna2 ...); C(unknown) for IDs not in the table; null with no GPU.
      type: str
    architectures:
      description: Every known architecture present.
      type: list
      elements: str
    pci_devices:
      description: PCI address and device ID of each GPU.
      type: list
      elements: dict
    nvswitch_count:
      description: NVIDIA NVSwitch bridges (HGX baseboards); fabric manager is needed when non-zero.
      type: int
    driver_loaded:
      description: Whether the vendor kernel module is loaded.
      type: bool
    driver_version:
      description: Version of the loaded kernel module; null when not loaded.
      type: str
    nouveau_loaded:
      description: Whether nouveau is loaded (it blocks the NVIDIA driver until reboot).
      type: bool
    nvidia_smi_error:
      description: What nvidia-smi said when it failed; null otherwise.
      type: str
ansible_facts:
  description: The published fact.
  returned: always
  type: dict
  contains:
    clusterdos_hw:
      description: O(facts) with C(gpus) set to what was found and O(publish) laid over it.
      type: dict
kernel_modules_problem:
  description: Why I(kernel_modules) cannot drive the GPUs found (or I(architecture)); empty when it can or was not asked.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.hw_gpu import gpu_facts, open_modules_problem, publish

ARGUMENT_SPEC = {
    "facts": {"type": "dict", "default": {}},
    "publish": {"type": "dict", "default": {}},
    "sysfs_root": {"type": "path", "default": "/sys"},
    "architecture": {"type": "str", "default": ""},
    "kernel_modules": {"type": "str", "choices": ["open", "proprietary"]},
}


def main() -> None:
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    smi = module.get_bin_path("nvidia-smi")

    def run(argv: list[str]) -> tuple[int, str, str]:
        return module.run_command(argv)

    gpus = gpu_facts(module.params["sysfs_root"], run=run, nvidia_smi=smi)
    architectures = [module.params["architecture"]] if module.params["architecture"] else gpus["architectures"]
    problem = open_modules_problem(architectures, module.params["kernel_modules"]) if module.params["kernel_modules"] else None
    hw = publish(module.params["facts"], "gpus", gpus, module.params["publish"])
    module.exit_json(changed=False, gpus=gpus, kernel_modules_problem=problem or "", ansible_facts={"clusterdos_hw": hw})


if __name__ == "__main__":
    main()
