# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Action for clusterdos.cluster.converge_stamp: state=digest on the controller (it reads
every stage host's variables and facts, and compares them with the records the run's first
read probed where it is given them); check and record run the module on the host."""

from __future__ import annotations

import os
from typing import Any, Dict, List

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp as cs

# The collection's root: plugins/action/ is two levels below it.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stage_spec(spec: Any, default_hosts: List[str]) -> Dict[str, Any]:
    """One stage of a digest request, checked: {stage, prefixes, hosts, ignore_facts}."""
    if not isinstance(spec, dict):
        raise AnsibleActionFail(f"converge_stamp: each of 'stages' must be a dict with 'stage', got {spec!r}")
    stage, prefixes = spec.get("stage"), spec.get("prefixes") or []
    hosts = spec.get("hosts", default_hosts)
    ignore = spec.get("ignore_facts") or []
    if not isinstance(stage, str) or not stage:
        raise AnsibleActionFail("converge_stamp: 'stage' must be a non-empty string")
    if not isinstance(prefixes, list) or not all(isinstance(p, str) and p for p in prefixes):
        raise AnsibleActionFail(f"converge_stamp: 'prefixes' must be a list of non-empty strings, got {prefixes!r}")
    if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
        raise AnsibleActionFail(f"converge_stamp: the hosts of stage {stage} must be a list of host names, got {hosts!r}")
    if not isinstance(ignore, list) or ignore and not set(ignore) <= set(cs.FACT_KEYS):
        raise AnsibleActionFail(f"converge_stamp: 'ignore_facts' of stage {stage} must list facts of {', '.join(cs.FACT_KEYS)}; "
                                f"got {ignore!r}")
    return {"stage": stage, "prefixes": prefixes, "hosts": hosts, "ignore_facts": ignore}


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

        play_hosts = list(task_vars.get("ansible_play_hosts") or [task_vars.get("inventory_hostname")])
        many = args.get("stages")
        if many is not None:
            if not isinstance(many, list) or not many:
                raise AnsibleActionFail(f"converge_stamp: 'stages' must be a non-empty list, got {many!r}")
            specs = [_stage_spec(s, play_hosts) for s in many]
        else:
            specs = [_stage_spec({"stage": args.get("stage"), "prefixes": args.get("prefixes") or []}, play_hosts)]
        hostvars = task_vars.get("hostvars", {})
        collection = cs.tree_digest(_ROOT)
        answers = {}
        for spec in specs:
            unknown = [h for h in spec["hosts"] if h not in hostvars]
            if unknown:
                raise AnsibleActionFail(f"converge_stamp: stage {spec['stage']} names hosts the inventory does not have: "
                                        + ", ".join(unknown))
            digests = {host: self._host_digest(hostvars[host], spec["prefixes"], spec["ignore_facts"]) for host in spec["hosts"]}
            answers[spec["stage"]] = {"digest": cs.stage_digest(collection, spec["stage"], digests),
                                      "inputs": {"collection": collection, "hosts": dict(sorted(digests.items()))}}
        checks = self._checks(args.get("probes"), specs, answers)
        if checks is not None:
            result["checks"] = checks
        result["changed"] = False
        if many is not None:
            result["stages"] = answers
        else:
            result.update(answers[specs[0]["stage"]])
        return result

    @staticmethod
    def _checks(probes: Any, specs: List[Dict[str, Any]], answers: Dict[str, Any]) -> Any:
        """Each host's answer to state=check, {host: {stages: {stage: {current, reasons}}}},
        decided here from PROBES ({host: the hardware_facts module's records}, read on the
        host earlier in this play), or None where some host of a stage has no probe (its
        compare then runs on the host)."""
        if not probes:
            return None
        if not isinstance(probes, dict):
            raise AnsibleActionFail(f"converge_stamp: 'probes' must map host names to their probed records, got {probes!r}")
        if any(not isinstance(probes.get(h), dict) for spec in specs for h in spec["hosts"]):
            return None
        checks: Dict[str, Any] = {}
        for spec in specs:
            answer = answers[spec["stage"]]
            for host in spec["hosts"]:
                reasons = cs.decide(probes[host].get(spec["stage"]), answer["digest"], answer["inputs"])
                checks.setdefault(host, {"stages": {}})["stages"][spec["stage"]] = {"current": not reasons, "reasons": reasons}
        return checks

    @staticmethod
    def _host_digest(host_vars: Any, prefixes: List[str], ignore_facts: List[str]) -> str:
        try:
            facts = host_vars.get("ansible_facts") or {}
        except Exception:  # noqa: BLE001 - a host without facts contributes none
            facts = {}
        inputs = cs.host_inputs(host_vars.keys(), facts, prefixes, lambda name: host_vars[name],
                                lambda name: host_vars.raw_get(name) if hasattr(host_vars, "raw_get") else None,
                                ignore_facts)
        return cs.host_digest(inputs)
