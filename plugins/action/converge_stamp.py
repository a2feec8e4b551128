# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Action for clusterdos.cluster.converge_stamp: state=digest on the controller (it reads
every play host's variables and facts); check and record run the module on the host."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp as cs

# The collection's root: plugins/action/ is two levels below it.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        args = self._task.args
        if args.get("state", "check") != "digest":
            result.update(self._execute_module(module_name="clusterdos.cluster.converge_stamp",
                                               module_args=dict(args), task_vars=task_vars))
            return result

        stage = args.get("stage")
        prefixes = args.get("prefixes") or []
        if not isinstance(stage, str) or not stage:
            raise AnsibleActionFail("converge_stamp: 'stage' must be a non-empty string")
        if not isinstance(prefixes, list) or not all(isinstance(p, str) and p for p in prefixes):
            raise AnsibleActionFail(f"converge_stamp: 'prefixes' must be a list of non-empty strings, got {prefixes!r}")
        hostvars = task_vars.get("hostvars", {})
        hosts = list(task_vars.get("ansible_play_hosts") or [task_vars.get("inventory_hostname")])
        digests = {}
        for host in hosts:
            host_vars = hostvars[host]
            try:
                facts = host_vars.get("ansible_facts") or {}
            except Exception:  # noqa: BLE001 - a host without facts contributes none
                facts = {}
            inputs = cs.host_inputs(host_vars.keys(), facts, prefixes, lambda name, hv=host_vars: hv[name],
                                    lambda name, hv=host_vars: hv.raw_get(name) if hasattr(hv, "raw_get") else None)
            digests[host] = cs.host_digest(inputs)
        collection = cs.tree_digest(_ROOT)
        result.update(changed=False, digest=cs.stage_digest(collection, stage, digests),
                      inputs={"collection": collection, "hosts": dict(sorted(digests.items()))})
        return result
