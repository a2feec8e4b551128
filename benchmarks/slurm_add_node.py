#!/usr/bin/env python3
"""What adding one compute node costs, and whom it touches, on the 4-host Slurm lab of
molecule/slurm_cluster (controller + slurmdbd, two compute nodes, one login host):

  first converge   base.yml + slurm.yml on fresh hosts: the reference, and its per-host
                   share (first converge / hosts) as "one node's own converge"
  add node         a fifth host (compute): base.yml on it alone (--limit NEW,localhost;
                   --base-on-all: on every host), then slurm_add_node.yml
  no-op add node   slurm_add_node.yml again, with nothing to add
  --one-run        the add (and the no-op add) as playbooks/add_node.yml -e node=NEW instead:
                   every stage the node's groups call for, in one ansible-playbook run

For each playbook run: seconds, task headers, changed, and the tasks that ran (ok+changed
in the recap) on the new host and on each existing host -- the existing hosts' share is
what must stay small and independent of the cluster's size. The slowest tasks of the add
come from the profile_tasks callback, which also splits the add's time by who ran each task
(benchmarks/slurm_lab.split_by_hosts): the new node alone, the new node with running hosts
(the facts step, for one), running hosts alone (the reconfigure, slurmctld's restart), no
lab host, Ansible's own start. The add less the running hosts' own tasks is what
converging the new node costs in this run; the add's ratio to it is printed beside the
ratio to the per-host share. Prints figures and the load average; asserts nothing
about time. Starts its own lab and removes it afterwards (--keep leaves it up).

With --site-names the cluster is configless (slurm_configless) and the nodes' names come from
the site (base_hosts_manage: false; molecule/_shared/site_names.yml writes every lab host's
hosts file as the site's DNS would answer, before the first converge and again once the new
host is up, untimed): a running compute node then has nothing to write in the add, and is in
no play of it.

With --compute N the lab starts N compute nodes instead of the scenario's two (more hosts
named slurm-cx1, slurm-cx2, ... in group slurm_compute), so that runs at several sizes show
whether the add's cost depends on the cluster's size (issue 18, item 3).

    python3 benchmarks/slurm_add_node.py [--name bench-slurm-add] [--keep] [--compute N]
"""

from __future__ import annotations

import argparse
import os
import sys

from slurm_lab import (NEW_NODE, ROOT, SCENARIO, SlurmLab, add_executor_argument, figures, load, slowest, speed,
                       split_by_hosts)

# The site's name service (a test fixture shared with molecule/validate_slurm).
SITE_NAMES = ROOT / "molecule" / "_shared" / "site_names.yml"


def describe(label: str, fig: dict, hosts: list[str], new: str | None = None) -> list[str]:
    ran = fig["ran"]
    others = [h for h in hosts if h != new]
    line = f"{label:<26}{figures(fig)}"
    if new:
        line += f"  ran on {new}: {ran.get(new, 0)}; on each other host: " + \
            ", ".join(f"{h} {ran.get(h, 0)}" for h in others)
    else:
        line += "  ran per host: " + ", ".join(f"{h} {ran.get(h, 0)}" for h in hosts)
    return [line]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="bench-slurm-add", help="lab name (default: %(default)s)")
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    add_executor_argument(ap)
    ap.add_argument("--base-on-all", action="store_true",
                    help="run base.yml on every host before the add (the path before slurm_add_node.yml updated "
                         "the other hosts' /etc/hosts itself), not on the new node alone")
    ap.add_argument("--one-run", action="store_true",
                    help="add the node with playbooks/add_node.yml -e node=NEW (every stage in one run, the "
                         "one-command path) instead of base.yml on the new node, then slurm_add_node.yml")
    ap.add_argument("--log-dir", help="save each playbook run's output there (NN-playbook.log)")
    ap.add_argument("--site-names", action="store_true",
                    help="configless, and names from the site (base_hosts_manage: false) rather than /etc/hosts "
                         "blocks written by the collection")
    ap.add_argument("--compute", type=int, default=2,
                    help="compute nodes before the add (default: %(default)s, the scenario's; at least 2)")
    args = ap.parse_args()
    if args.one_run and args.base_on_all:
        ap.error("--one-run and --base-on-all are two different add paths; give one")
    if args.compute < 2:
        ap.error(f"--compute {args.compute}: the scenario has two compute nodes; give 2 or more")
    extra = [f"slurm-cx{i}=slurm_compute" for i in range(1, args.compute - 1)]
    lines: list[str] = []
    loads, machine = [load()], speed()
    with SlurmLab(args.name, keep=args.keep, executor=args.executor, extra=extra,
                   log_dir=args.log_dir) as lab:
        names = list(lab.names)
        # Every playbook run of the add gets the same settings as the first converge.
        settings = ["-e", '{"slurm_configless": true, "base_hosts_manage": false}'] if args.site_names else []
        if args.site_names:
            lab.playbook(SITE_NAMES)
        first = lab.playbook(SCENARIO / "converge.yml", *settings)
        share = first["seconds"] / len(names)
        lines += describe("first converge", first, names)
        lines.append(f"{'':<26}per-host share (one node's own converge): {share:.1f} s")
        loads.append(load())

        lab.up(f"{NEW_NODE}=slurm_compute")
        if args.site_names:
            lab.playbook(SITE_NAMES)
        all_hosts = names + [NEW_NODE]
        if args.one_run:
            steps = [("add node: add_node.yml", ROOT / "playbooks" / "add_node.yml", ["-e", f"node={NEW_NODE}"])]
        else:
            limit = [] if args.base_on_all else ["--limit", f"{NEW_NODE},localhost"]
            steps = [("add node: base.yml" + ("" if args.base_on_all else " (new)"), ROOT / "playbooks" / "base.yml", limit),
                     ("add node: slurm_add_node", ROOT / "playbooks" / "slurm_add_node.yml", [])]
        total = 0.0
        parts = {"new": 0.0, "both": 0.0, "existing": 0.0, "none": 0.0, "rest": 0.0}
        for label, path, extra_args in steps:
            fig = lab.playbook(path, *extra_args, *settings, profile=True)
            lines += describe(label, fig, all_hosts, NEW_NODE)
            total += fig["seconds"]
            split = split_by_hosts(fig, NEW_NODE)
            parts = {k: v + split[k] for k, v in parts.items()}
        _label, add_path, add_args = steps[-1]
        lines.append(f"{'add node total':<26}{total:7.1f} s  = {total / share:.2f}x the per-host share,"
                     f" {100 * total / first['seconds']:.0f}% of the first converge")
        # The same add's time by who ran each task (profile_tasks): what the new node's own
        # converge needs, and what the running hosts add to it.
        own = total - parts["existing"]
        lines.append(f"{'':<26}by task: the new node alone {parts['new']:.1f} s, with running hosts "
                     f"{parts['both']:.1f} s, running hosts alone {parts['existing']:.1f} s, no lab host "
                     f"{parts['none']:.1f} s, Ansible's start and play headers {parts['rest']:.1f} s")
        lines.append(f"{'':<26}= {total / own:.2f}x the add without the running hosts' own tasks ({own:.1f} s)")
        loads.append(load())
        noop = lab.playbook(add_path, *add_args, *settings)
        lines += describe("no-op add node", noop, all_hosts, NEW_NODE)
        loads.append(load())
    print(f"executor: {args.executor}" + ("; configless, names from the site" if args.site_names else ""))
    print(f"machine before the lab started: {machine}")
    print(f"hosts: {', '.join(names)} + {NEW_NODE} (new)")
    print("\n".join(lines))
    print("\n".join(slowest(add_path.name, fig)))
    print(f"load average (1/5/15 min) at start and after each step: {'  '.join(loads)} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
