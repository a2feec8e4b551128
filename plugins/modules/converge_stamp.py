#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""converge_stamp: the record of a stage's last converge on a host, and the probe against it."""

from __future__ import annotations

DOCUMENTATION = r"""
module: converge_stamp
short_description: Record a stage's converge on a host, and tell whether the host is still as it left it
version_added: 0.1.0
description:
  - The fast path of a re-run (docs/performance.md, "The fast path"). A stage (base, Slurm) records on each
    host, once it converged, the digest of its inputs and the state of what its roles manage there (file
    checksums, modes and owners, the services that must be active and start at boot, runtime sysctl values).
  - O(state=digest) runs on the controller only (the action plugin), once per play (run it with C(run_once));
    it computes the stage's digest over every host of the play from the collection's content, each host's
    inventory variables with one of O(prefixes) (templated), the facts the roles read, its groups and address.
  - O(state=check) reads the host record and probes the host. Changes nothing. C(current) is true when the
    record holds O(digest) and every recorded file, service and sysctl is as recorded.
  - O(state=record) writes the record (changed only when it differs; nothing is written in check mode).
options:
  stage:
    description:
      - The stage's name; the record is O(directory)/<stage>.json. Required unless O(stages) is given.
    type: str
  stages:
    description:
      - Several stages in one call, instead of O(stage). With O(state=digest), each item has C(stage), C(prefixes),
        C(hosts) (the stage's hosts; default the play's) and C(ignore_facts) (facts of those the digest covers that the
        stage does not read, e.g. C(clusterdos_hw) for base) and the answer is RV(stages), each stage's digest and
        inputs. With O(state=check), each item has C(stage), C(digest) and C(inputs) (as the digest returned them),
        the host is probed once for all of them, and RV(stages) holds each stage's C(current) and C(reasons).
      - One round trip per host for every stage a run compares first (site.yml's host preflight), instead of one per stage.
    type: list
    elements: dict
  probes:
    description:
      - With O(state=digest), each host's converge records as the run's first read of it probed them
        (M(clusterdos.cluster.hardware_facts) RV(clusterdos.cluster.hardware_facts#module:records)), by host name. Where every host of the
        requested stages has one, the digest state also answers for each host what O(state=check) would (RV(checks)),
        on the controller, without a round trip to the hosts.
    type: dict
  state:
    description: What to do.
    type: str
    choices: [digest, check, record]
    default: check
  digest:
    description: The stage's digest from O(state=digest). Required for O(state=check) with O(stage), and for O(state=record).
    type: str
  inputs:
    description:
      - The parts of O(digest) (C(collection), C(hosts) - each host's own digest), as O(state=digest) returns them.
        Kept in the record, so that a later check names what changed (the collection, hosts added or gone, the
        hosts whose own inputs changed).
    type: dict
    default: {}
  prefixes:
    description: With O(state=digest), the variable-name prefixes of the stage's inputs (V(slurm_), V(munge_)).
    type: list
    elements: str
    default: []
  paths:
    description: With O(state=record), files and directories the stage manages on the host (checksums, modes and owners recorded).
    type: list
    elements: path
    default: []
  services:
    description: With O(state=record), the services that must be active on the host and enabled (a disabled or masked one has drifted).
    type: list
    elements: str
    default: []
  sysctls:
    description: With O(state=record), the runtime sysctl values the stage set (key to value).
    type: dict
    default: {}
  directory:
    description: Where records are kept on the host.
    type: path
    default: /var/lib/clusterdos/converged
attributes:
  check_mode:
    description: O(state=check) reads only; O(state=record) reports the change it would make and writes nothing.
    support: full
  diff_mode:
    description: O(state=record) shows the record before and after.
    support: full
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: The stage's digest (once, on the controller)
  clusterdos.cluster.converge_stamp:
    stage: slurm
    state: digest
    prefixes: [slurm_, munge_]
  run_once: true
  register: __stamp

- name: Is this host as the last converge left it?
  clusterdos.cluster.converge_stamp:
    stage: slurm
    digest: "{{ __stamp.digest }}"
    inputs: "{{ __stamp.inputs }}"
  register: __stamp_check

- name: Two stages' digests in one task, each over its own hosts
  clusterdos.cluster.converge_stamp:
    state: digest
    stages:
      - {stage: base, prefixes: [base_], hosts: "{{ groups['all'] }}"}
      - {stage: slurm, prefixes: [slurm_, munge_], hosts: "{{ groups['slurm_compute'] }}"}
  run_once: true
  register: __stamps

- name: Compare this host with both records in one round trip
  clusterdos.cluster.converge_stamp:
    stages:
      - {stage: base, digest: "{{ __stamps.stages.base.digest }}", inputs: "{{ __stamps.stages.base.inputs }}"}
      - {stage: slurm, digest: "{{ __stamps.stages.slurm.digest }}", inputs: "{{ __stamps.stages.slurm.inputs }}"}
  register: __stamps_check

- name: Record the converge
  clusterdos.cluster.converge_stamp:
    stage: slurm
    state: record
    digest: "{{ __stamp.digest }}"
    inputs: "{{ __stamp.inputs }}"
    paths: [/etc/slurm]
    services: [slurmd]
"""

RETURN = r"""
digest:
  description: The stage's digest (O(state=digest)), or the one checked or recorded.
  returned: always
  type: str
inputs:
  description: With O(state=digest), the parts of the digest (C(collection), C(hosts)).
  returned: when state is digest
  type: dict
stages:
  description:
    - With O(stages) and O(state=digest), each stage's C(digest) and C(inputs), by stage name.
    - With O(stages) and O(state=check), each stage's C(current) and C(reasons), by stage name.
  returned: when stages is given
  type: dict
checks:
  description:
    - With O(state=digest) and O(probes) for every host, each host's answer, as O(state=check) with O(stages) gives it
      (by host name, its C(stages), each stage's C(current) and C(reasons)).
  returned: when state is digest and probes cover every host
  type: dict
current:
  description:
    - With O(state=check), whether the host holds a record of O(digest) and nothing recorded drifted (with O(stages),
      whether that holds for every stage).
  returned: when state is check
  type: bool
reasons:
  description: With O(state=check), why the host is not current (empty when it is).
  returned: when state is check
  type: list
  elements: str
record:
  description: With O(state=record), the record as written.
  returned: when state is record
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp as cs
from ansible_collections.clusterdos.cluster.plugins.module_utils.text_file import write_text


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "stage": {"type": "str"},
            "stages": {"type": "list", "elements": "dict"},
            "state": {"type": "str", "choices": ["digest", "check", "record"], "default": "check"},
            "digest": {"type": "str"},
            "inputs": {"type": "dict", "default": {}},
            "prefixes": {"type": "list", "elements": "str", "default": []},
            "paths": {"type": "list", "elements": "path", "default": []},
            "services": {"type": "list", "elements": "str", "default": []},
            "sysctls": {"type": "dict", "default": {}},
            "directory": {"type": "path", "default": "/var/lib/clusterdos/converged"},
            "probes": {"type": "dict"},
        },
        required_one_of=[("stage", "stages")],
        mutually_exclusive=[("stage", "stages")],
        required_if=[("state", "record", ["stage", "digest"])],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "digest":
        module.fail_json(msg="state=digest runs on the controller: call clusterdos.cluster.converge_stamp as an "
                             "action (the collection's action plugin), not the module alone")
    if p["state"] == "check":
        if p["stages"] is None and not p["digest"]:
            module.fail_json(msg="state=check with stage needs digest (the digest state's answer)")
        items = p["stages"] if p["stages"] is not None else [
            {"stage": p["stage"], "digest": p["digest"], "inputs": p["inputs"]}]
        try:
            answers = cs.check_stages(items, p["directory"], cs.systemd_active(module))
        except ValueError as err:
            module.fail_json(msg=str(err))
        if p["stages"] is None:
            module.exit_json(changed=False, digest=p["digest"], **answers[p["stage"]])
        module.exit_json(changed=False, current=all(a["current"] for a in answers.values()), stages=answers)

    path = cs.record_path(p["directory"], p["stage"])

    record = cs.build_record(p["stage"], p["digest"], p["paths"], p["services"], p["sysctls"], inputs=p["inputs"])
    text = cs.record_text(record)
    changed, before = write_text(module, path, text, dir_mode=0o700, mode=0o600)
    result = {"changed": changed, "digest": p["digest"], "record": record}
    if module._diff:
        result["diff"] = {"before": before or "", "after": text, "before_header": path, "after_header": path}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
