# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""validate_checks: the names of the cluster_validate module's checks, read from its registry."""

from __future__ import annotations

DOCUMENTATION = r"""
name: validate_checks
short_description: The names of the checks the cluster_validate module has, in its order
version_added: 0.1.0
description:
  - Returns the name of every check of the C(clusterdos.cluster.cluster_validate) module, read from the module's own
    registry (C(plugins/module_utils/validate/runner.py)), so that the validate role and the preflight check
    C(validate_checks) and C(validate_skip) against the checks that exist, with no second list to keep in step.
  - With C(groups=true), the check groups instead (C(kubernetes), C(slurm), C(hardware), C(clusterd)), each once.
options:
  groups:
    description: Return the check groups instead of the check names.
    type: bool
    default: false
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Every check name
  ansible.builtin.debug:
    msg: "{{ query('clusterdos.cluster.validate_checks') }}"
"""

RETURN = r"""
_raw:
  description: The check names (or groups), in the module's order.
  type: list
  elements: str
"""

from typing import Any

from ansible.plugins.lookup import LookupBase
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.runner import CHECKS


class LookupModule(LookupBase):
    def run(self, terms: list[str], variables: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
        self.set_options(var_options=variables, direct=kwargs)
        if self.get_option("groups"):
            return list(dict.fromkeys(check.group for check in CHECKS))
        return [check.name for check in CHECKS]
