#!/usr/bin/env python3
"""What adding one compute node costs, and whom it touches, on the 4-host Slurm lab of
molecule/slurm_cluster (controller + slurmdbd, two compute nodes, one login host):

  first converge   base.yml + slurm.yml on fresh hosts: the reference, and its per-host
                   share (first converge / hosts) as "one node's own converge"
  add node         a fifth host (compute): base.yml on it alone (--limit NEW,localhost;
                   --base-on-all: on every host), then slurm_add_node.yml
  no-op add node   slurm_add_node.yml again, with nothing to add

For each playbook run: seconds, task headers, changed, and the tasks that ran (ok+changed
in the recap) on the new host and on each existing host -- the existing hosts' share is
what must stay small and independent of the cluster's size. The slowest tasks of the add
come from the profile_tasks callback. Prints figures and the load average; asserts nothing
about time. Starts its own lab and removes it afterwards (--keep leaves it up).

    python3 benchmarks/slurm_add_node.py [--name bench-slurm-add] [--keep]
"""

from __future__ import annotations

import argparse
import os
import sys

from slurm_lab import NEW_NODE, ROOT, SCENARIO, SlurmLab, add_executor_argument, load, slowest


def describe(label: str, fig: dict, hosts: list[str], new: str | None = None) -> list[str]:
    ran = fig["ran"]
    others = [h for h in hosts if h != new]
    line = f"{label:<26}{fig['seconds']:7.1f} s  tasks={fig['tasks']} changed={fig['changed']}"
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
    args = ap.parse_args()
    lines: list[str] = []
    loads = [load()]
    with SlurmLab(args.name, keep=args.keep, executor=args.executor) as lab:
        names = list(lab.names)
        first = lab.playbook(SCENARIO / "converge.yml")
        share = first["seconds"] / len(names)
        lines += describe("first converge", first, names)
        lines.append(f"{'':<26}per-host share (one node's own converge): {share:.1f} s")
        loads.append(load())

        lab.up(f"{NEW_NODE}=slurm_compute")
        limit = [] if args.base_on_all else ["--limit", f"{NEW_NODE},localhost"]
        base = lab.playbook(ROOT / "playbooks" / "base.yml", *limit)
        add = lab.playbook(ROOT / "playbooks" / "slurm_add_node.yml", profile=True)
        lines += describe("add node: base.yml" + ("" if args.base_on_all else " (new)"), base, names + [NEW_NODE], NEW_NODE)
        lines += describe("add node: slurm_add_node", add, names + [NEW_NODE], NEW_NODE)
        total = base["seconds"] + add["seconds"]
        lines.append(f"{'add node total':<26}{total:7.1f} s  = {total / share:.2f}x the per-host share,"
                     f" {100 * total / first['seconds']:.0f}% of the first converge")
        loads.append(load())
        noop = lab.playbook(ROOT / "playbooks" / "slurm_add_node.yml")
        lines += describe("no-op add node", noop, names + [NEW_NODE], NEW_NODE)
        loads.append(load())
    print(f"executor: {args.executor}")
    print(f"hosts: {', '.join(names)} + {NEW_NODE} (new)")
    print("\n".join(lines))
    print("\n".join(slowest("slurm_add_node.yml", add)))
    print(f"load average (1/5/15 min) at start and after each step: {'  '.join(loads)} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
