# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""setting: a collection-wide setting (group names, versions, mirrors), written once."""

from __future__ import annotations

DOCUMENTATION = r"""
name: setting
short_description: A collection-wide setting - the inventory's value, else the collection's default
version_added: 0.1.0
description:
  - Returns the value the inventory (or extra vars, or play vars) gives each named setting, and the collection's
    default when it gives none. The defaults are written once, in C(plugins/module_utils/settings.py) - inventory
    group names (C(clusterdos_kube_control_plane_group) ... C(slurm_compute_group)), the Kubernetes version, the
    file mirror and package proxy - instead of a C(default(...)) at every use.
  - C(slurm_primary_controller) is not set but derived - the first host of the group C(slurm_controller_group) names,
    templated, or an empty string when that group has no host - so that plays and roles name the primary controller
    one way.
  - A name that is not a collection-wide setting is an error that lists the known ones.
options:
  _terms:
    description: Setting names.
    type: list
    elements: str
    required: true
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: The GPU hosts, whatever the inventory calls their group
  hosts: "{{ lookup('clusterdos.cluster.setting', 'clusterdos_gpu_nvidia_group') }}"
  tasks: []
"""

RETURN = r"""
_raw:
  description: One value per name.
  type: list
  elements: raw
"""

from typing import Any

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase
from ansible_collections.clusterdos.cluster.plugins.module_utils.settings import FIRST_HOST_OF, first_host, setting


class LookupModule(LookupBase):
    def run(self, terms: list[str], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        variables = variables or {}
        values = []
        for term in terms:
            if term in FIRST_HOST_OF:
                # The group setting as the inventory gives it (templated), then its first host.
                group = self.run([FIRST_HOST_OF[term]], variables)[0]
                values.append(first_host(group, variables))
                continue
            try:
                value = setting(term, variables)
            except KeyError as exc:
                raise AnsibleLookupError(str(exc.args[0])) from exc
            values.append(self._templar.template(value) if term in variables else value)
        return values
