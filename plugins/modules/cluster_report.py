#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Write the validation report (JUnit XML, JSON, HTML) from cluster_validate results."""

from __future__ import annotations

DOCUMENTATION = r"""
module: cluster_report
short_description: Write the cluster validation report - JUnit XML, JSON and an HTML page
version_added: 0.1.0
description:
  - Writes the results of one or more M(clusterdos.cluster.cluster_validate) runs as JUnit XML (for AWX and CI),
    JSON, and a self-contained HTML page that draws the cluster's topology (login, service and worker nodes,
    their GPUs, the networks) and lists every check green or red with its detail.
  - Each file is replaced only when its content changes. As every report holds the time it was made and the checks'
    durations, a new report is written on every run, yet reported as a change only when it says something new. That is
    when a check's status on a host differs from the last JSON report, a check appears or goes, a file is created, or
    a file's mode is set (without a JSON report to compare with, any file written is a change). A re-run of a healthy
    cluster thus reports changed=0.
  - Where the task runs on the controller itself (a local connection, as the validate role's report play does) and
    O(mode) is octal, the action plugin writes the report in the controller's own process, without a module round
    trip; elsewhere, or with a symbolic O(mode), this module runs on the target. Both write the same files.
author:
  - clusterdOS developers (@clusterdos)
attributes:
  check_mode:
    description: Reports whether the report would say something new, and writes nothing.
    support: full
  diff_mode:
    description: Returns no diff of the report files.
    support: none
options:
  results:
    description: Check results, the C(checks) lists of M(clusterdos.cluster.cluster_validate) runs joined together.
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - The cluster's nodes for the picture, each with C(name), C(kind) (V(login), V(service) or V(worker)),
        C(address), C(roles) and C(gpus) (GPUs per extended resource).
    type: list
    elements: dict
    default: []
  networks:
    description: Networks drawn between the nodes, each with C(name), C(cidr) and optionally C(members) (the node names wired to it; all when absent).
    type: list
    elements: dict
    default: []
  cluster_name:
    description: The cluster's name, shown in the report.
    type: str
    default: cluster
  generated:
    description: The report's timestamp. Defaults to the current UTC time.
    type: str
  dest:
    description: Directory for the report files; created when missing.
    type: path
    required: true
  formats:
    description: Which files to write.
    type: list
    elements: str
    choices: [json, junit, html]
    default: [json, junit, html]
  mode:
    description: Permissions of the report files.
    type: raw
    default: "0644"
  releases:
    description:
      - What the add-on stage did to each Helm release (the C(clusterdos.cluster.addons) role's C(__addons_progress)
        list), each with C(name), C(release), C(chart), C(action) (V(installed), V(upgraded), V(unchanged),
        V(uninstalled)), C(seconds) and C(revision). Shown as a table in the HTML page and listed in the JSON.
    type: list
    elements: dict
    default: []
  stats:
    description:
      - When set, the result also hands the report to AWX as the job's artifact of this name, as
        M(ansible.builtin.set_stats) would (C(per_host=false), C(aggregate=false)), with its C(summary), C(files),
        C(failed) (the failed checks), C(checks) (every one) and C(releases).
    type: str
    default: ""
seealso:
  - module: clusterdos.cluster.cluster_validate
"""

EXAMPLES = r"""
- name: Write the report on the controller
  clusterdos.cluster.cluster_report:
    results: "{{ k8s_checks.checks + slurm_checks.checks }}"
    nodes:
      - {name: login1, kind: login, address: 10.0.0.10}
      - {name: gpu1, kind: worker, address: 10.0.0.21, gpus: {nvidia.com/gpu: 8}}
    networks:
      - {name: nodes, cidr: 10.0.0.0/24}
    dest: /var/tmp/clusterdos-report
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
files:
  description: The path of each written file, by format.
  returned: always
  type: dict
  sample: {json: /var/tmp/clusterdos-report/validation.json, junit: /var/tmp/clusterdos-report/validation-junit.xml,
           html: /var/tmp/clusterdos-report/validation.html}
summary:
  description: Counts of passed, failed and skipped checks, and the total.
  returned: always
  type: dict
  sample: {passed: 9, failed: 1, skipped: 2, total: 12}
ansible_stats:
  description: With O(stats), the custom stats AWX keeps as the job's artifacts (what M(ansible.builtin.set_stats) returns).
  returned: when stats is set
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.writer import argument_spec, custom_stats, write_report


def main() -> None:
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    changed, files, summary = write_report(module)
    extra = {"ansible_stats": custom_stats(module.params, files, summary)} if module.params["stats"] else {}
    module.exit_json(changed=changed, files=files, summary=summary, **extra)


if __name__ == "__main__":
    main()
