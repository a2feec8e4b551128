#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""slurm_accounting: the cluster, QOS, accounts and users slurmdbd must hold, in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: slurm_accounting
short_description: Add the cluster, QOS, accounts and users slurmdbd is missing, and set changed attributes, in one call
version_added: 0.1.0
description:
  - Lists what slurmdbd holds with C(sacctmgr show) (clusters, QOS, and the cluster's associations), then adds what is
    missing with C(sacctmgr -i add), in dependency order. One round trip where a task per kind took five.
  - Accounts and users are compared by their association on O(cluster). An account or user that another cluster of the
    same slurmdbd already has still gets its association on this one, and a user gets one with each account it is
    listed with.
  - An account that exists on O(cluster) and is given a C(fairshare) gets that fair share where slurmdbd holds another
    (C(sacctmgr -i modify account)); one given none keeps what slurmdbd holds. An account given a C(description) gets it
    where slurmdbd holds another (sacctmgr keeps descriptions in lower case, so case alone is no change).
  - A QOS that exists gets the attributes it is given that slurmdbd holds otherwise (C(sacctmgr -i modify qos), those
    keys only). The QOS listing prints each key given as a field (sacctmgr shows a QOS option under the name it is set
    by) and compares in sacctmgr's own forms, durations as seconds (a bare number is minutes, seconds for
    C(GraceTime); C(MaxWall) and C(GrpWall) in whole minutes), TRES lists by name and value (memory in MB), C(Flags)
    and C(Preempt) as sets, numbers as numbers, text without case; C(-1), C(UNLIMITED) and C(INFINITE) are no limit.
    A key left out keeps what slurmdbd holds; C(RawUsage) applies at creation only.
  - An account given C(qos) (QOS names) gets them, with C(default_qos) where given, on its association on O(cluster)
    (C(sacctmgr -i modify account ... set qos= defaultqos=)) where slurmdbd holds others; one given none keeps what
    slurmdbd holds.
  - A user's default account on O(cluster) is the first account O(users) lists the user with; a user whose default there
    is another gets it (C(sacctmgr -i modify user ... set defaultaccount)), so a user moved to another account submits
    to it without C(-A). The user's other associations stay. Nothing is removed.
  - Runs where C(sacctmgr) reaches slurmdbd (the Slurm role runs it on the primary controller). Cluster, QOS and account
    names compare in lower case, as slurmdbd stores them; user names as given.
options:
  cluster:
    description: The cluster's name (C(ClusterName) in slurm.conf).
    type: str
    required: true
  qos:
    description: QOS, as C({name, attributes}); attributes are sacctmgr's QOS options (C(Key=Value)), applied at creation and set
      again where slurmdbd holds another value.
    type: list
    elements: dict
    default: []
  accounts:
    description: Accounts on the cluster, as C({name, description, fairshare, qos, default_qos}); C(qos) (a list) and
      C(default_qos) are set on the account's association on the cluster (its users' inherit them).
    type: list
    elements: dict
    default: []
  users:
    description: Users, each added to its account on the cluster, as C({name, account}); a user listed with several accounts has the
      first as its default account.
    type: list
    elements: dict
    default: []
  sacctmgr:
    description: The sacctmgr command.
    type: str
    default: sacctmgr
attributes:
  check_mode:
    description: Lists what exists and reports what would be added or set; changes nothing. Where sacctmgr is not installed yet,
      everything is reported as to be added.
    support: full
  diff_mode:
    description: The items added and the attributes set (with what slurmdbd held), one per line.
    support: full
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Register the cluster, its QOS, accounts and users in slurmdbd
  clusterdos.cluster.slurm_accounting:
    cluster: gpu
    qos:
      - name: high
        attributes: {Priority: 100}
    accounts:
      - name: research
        fairshare: 10
    users:
      - name: alice
        account: research
"""

RETURN = r"""
added:
  description: What was added (or would be, in check mode), as C(KIND NAME).
  returned: always
  type: list
  elements: str
  sample: [cluster gpu, account research, user alice]
modified:
  description: The QOS attributes, the accounts' fair shares and descriptions and the users' default accounts set (or that would be,
    in check mode), with the new and the old value.
  returned: always
  type: list
  elements: str
  sample: [fairshare of account research (10, was 1), "attributes of qos high (Priority=200; Priority was 100)"]
"""

from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterdos.cluster.plugins.module_utils.slurm_accounting import ensure


def side_by_side(module):
    """RUN_ALL for ensure(): every read-only listing started at once (a thread each, through
    run_command), each one's (rc, stdout, stderr) in order."""
    def run_all(argvs):
        with ThreadPoolExecutor(max_workers=len(argvs) or 1) as pool:
            return list(pool.map(module.run_command, argvs))
    return run_all


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "cluster": {"type": "str", "required": True},
            "qos": {"type": "list", "elements": "dict", "default": []},
            "accounts": {"type": "list", "elements": "dict", "default": []},
            "users": {"type": "list", "elements": "dict", "default": []},
            "sacctmgr": {"type": "str", "default": "sacctmgr"},
        },
        supports_check_mode=True,
    )
    installed = module.get_bin_path(module.params["sacctmgr"]) is not None
    if not installed and not module.check_mode:
        module.fail_json(msg="%s is not installed on this host: install slurm-client (or the package that ships it) first."
                         % module.params["sacctmgr"])
    try:
        result = ensure(module.run_command, module.params, module.check_mode, installed, side_by_side(module))
    except RuntimeError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
