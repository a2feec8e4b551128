#!/usr/bin/env python3
"""Time base + Slurm on the 4-host lab of molecule/slurm_cluster, in one run:

  first converge   base.yml + slurm.yml on fresh hosts (the scenario's converge.yml)
  no-op, full      the same again with the fast path off (clusterdos_fast_path=false):
                   every task runs, and must report changed=0
  no-op, fast path the same again as users run it (the default): each stage compares
                   its inputs and the hosts with the last converge's record and is
                   skipped (must report changed=0)

and prints the ratio the project tracks (no-op / first, issue 18 item 2: at most 10%),
the tasks run per host, the slowest tasks of the first converge (profile_tasks) and the
load average, which matters on a shared machine. Asserts nothing about time. Starts its
own lab (bench-slurm) and removes it afterwards (--keep leaves it up). What adding a node
costs: benchmarks/slurm_add_node.py. Run from the repository root with the dev
environment on PATH:

    python3 benchmarks/slurm.py [--name bench-slurm] [--keep] [--no-profile] [--executor stock|mitogen] [--site] [--log-dir D]
"""

from __future__ import annotations

import argparse
import os
import sys

from slurm_lab import ROOT, SCENARIO, SlurmLab, add_executor_argument, figures, load, slowest, speed


def describe(label: str, fig: dict, hosts: list[str]) -> str:
    return (f"{label:<18}{figures(fig)}"
            f"  ran per host: " + ", ".join(f"{h} {fig['ran'].get(h, 0)}" for h in hosts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="bench-slurm", help="lab name (default: %(default)s)")
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument("--no-profile", action="store_true", help="no profile_tasks on the first converge")
    ap.add_argument("--site", action="store_true",
                    help="playbooks/site.yml (every stage, validation included) instead of base.yml + slurm.yml")
    ap.add_argument("--log-dir", help="keep each ansible-playbook run's output here (NN-playbook.log)")
    add_executor_argument(ap)
    args = ap.parse_args()
    book = ROOT / "playbooks" / "site.yml" if args.site else SCENARIO / "converge.yml"
    loads, machine = [load()], speed()
    with SlurmLab(args.name, keep=args.keep, executor=args.executor, log_dir=args.log_dir) as lab:
        first = lab.playbook(book, profile=not args.no_profile)
        loads.append(load())
        full = lab.playbook(book, "-e", '{"clusterdos_fast_path": false}')
        loads.append(load())
        noop = lab.playbook(book)
        loads.append(load())
    print(f"playbook: {book.relative_to(ROOT)}")
    print(f"executor: {args.executor}")
    print(f"machine before the lab started: {machine}")
    print(f"hosts: {len(lab.names)} ({', '.join(lab.names)})")
    print(describe("first converge", first, lab.names))
    print(describe("no-op, full", full, lab.names)
          + f"  = {100 * full['seconds'] / first['seconds']:.0f}% of the first")
    print(describe("no-op, fast path", noop, lab.names)
          + f"  = {100 * noop['seconds'] / first['seconds']:.0f}% of the first")
    print("\n".join(slowest("the first converge", first)))
    print(f"load average (1/5/15 min) at start and after each step: {'  '.join(loads)} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
