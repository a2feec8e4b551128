#!/usr/bin/env python3
"""Benchmark: lab up (cold and cached) and the base role's first and no-op converge.

    python3 benchmarks/lab_and_base.py [--hosts 3 [10 50 ...]] [--skip-cold] [--executor collection|stock|mitogen]
                                       [--memory MIB] [--pin]

Cold: a fresh image cache in a temporary directory (debootstrap, podman import) — the
machine's own cache and the labs using it are not touched (first size only). Cached: the
same `up` again. Then playbooks/base.yml on the hosts three times: the first converge, a
no-op with the fast path off (clusterdos_fast_path=false: every task runs) and a no-op as
users run it (the fast path: the stage is skipped after its check); both no-ops must
report changed=0. For each lab size it prints the wall time and the controller's CPU time
(ansible-playbook, its workers and their ssh clients: the children's rusage) in all and
per host, so several sizes show whether the controller's cost per host stays flat.
With --pin the controller (ansible-playbook and everything it starts) runs on the first
CPU only and the lab hosts on the others (podman --cpuset-cpus), so the hosts' own work
(apt, dpkg, systemd) cannot take the controller's CPU: its CPU time per host is then the
collection's and Ansible's cost, not the cost of sharing cores with busy lab hosts.
Prints one line per figure; makes no pass/fail judgement on time.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurm_lab import add_executor_argument, executor_env

ROOT = Path(__file__).resolve().parents[1]
CLI = str(ROOT / "bin" / "clusterdos-lab")
NAME = "bench-base"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    elapsed, _cpu, out = timed_cpu(argv, env)
    return elapsed, out


def timed_cpu(argv: list[str], env: dict[str, str], cpus: set[int] | None = None) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the command and its descendants (user + system), stdout.

    cpus: the CPUs the command (and all it starts) may run on; None = any.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, preexec_fn=pin)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, proc.stdout


def changed_total(recap: str) -> int:
    return sum(int(n) for n in re.findall(r"changed=(\d+)", recap))


def stage_decision(stdout: str) -> str:
    """The fast path's decision for base as the run printed it ("Stage base skipped: ..." or
    "Stage base converges: <host>: <reason>; ..."), shortened; "" when the run printed none."""
    found = re.search(r"Stage base (?:skipped|converges|undecided)[^'\"]*", " ".join(stdout.split()))
    return found.group(0)[:300] if found else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[3], help="lab sizes, measured one after the other")
    ap.add_argument("--skip-cold", action="store_true", help="only the cached lab up")
    ap.add_argument("--memory", type=int, default=0,
                    help="memory limit per lab host in MiB (default: the lab's; 50 hosts need less than it)")
    ap.add_argument("--pin", action="store_true",
                    help="controller on the first CPU, lab hosts on the others (needs 2 CPUs or more)")
    add_executor_argument(ap, default="collection")
    args = ap.parse_args()
    usable = sorted(os.sched_getaffinity(0))
    controller_cpus: set[int] | None = None
    host_cpuset = ""
    if args.pin:
        if len(usable) < 2:
            sys.exit(f"--pin needs 2 CPUs or more; this process may use {len(usable)}")
        controller_cpus = {usable[0]}
        host_cpuset = ",".join(str(c) for c in usable[1:])
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", **executor_env(args.executor))
    cache = tempfile.mkdtemp(prefix="clusterdos-bench-cache.")
    if not args.skip_cold:
        env["CLUSTERDOS_LAB_CACHE"] = cache
    figures: list[tuple[str, str]] = [("executor", args.executor)]
    if args.pin:
        figures.append(("pinned", f"controller on CPU {usable[0]}, lab hosts on CPU(s) {host_cpuset}"))
    try:
        for index, hosts in enumerate(args.hosts):
            up = [CLI, "up", "--name", NAME, "--hosts", str(hosts)] + (["--memory", str(args.memory)] if args.memory else []) \
                + (["--cpuset", host_cpuset] if host_cpuset else [])
            subprocess.run([CLI, "down", "--name", NAME], env=env, capture_output=True, check=False)
            if index == 0 and not args.skip_cold:
                t, _ = timed(up, env)
                figures.append((f"lab up, {hosts} hosts, cold image cache", f"{t:.1f} s"))
                timed([CLI, "down", "--name", NAME], env)
            t, out = timed(up, env)
            figures.append((f"lab up, {hosts} hosts, cached image", f"{t:.1f} s"))
            inventory = out.strip().splitlines()[-1]
            play = ["ansible-playbook", "-i", inventory, str(ROOT / "playbooks" / "base.yml")]
            runs = (("first converge", []), ("no-op, full", ["-e", '{"clusterdos_fast_path": false}']),
                    ("no-op, fast path", []))
            for kind, extra in runs:
                t, cpu, recap = timed_cpu(play + extra, env, controller_cpus)
                figures.append((f"base {kind}, {hosts} hosts",
                                f"{t:.1f} s wall, controller CPU {cpu:.1f} s = {cpu / hosts:.2f} s per host "
                                f"(changed={changed_total(recap)})"))
                if kind == "no-op, fast path":
                    # Why the stage was skipped or not: a fast-path run that converges says why.
                    figures.append((f"  fast path, {hosts} hosts", stage_decision(recap) or "no decision printed"))
    finally:
        subprocess.run([CLI, "down", "--name", NAME] + ([] if args.skip_cold else ["--purge"]),
                       env=env, capture_output=True, check=False)
        shutil.rmtree(cache, ignore_errors=True)
    figures.append(("load average (1/5/15 min) at the end",
                    f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"))
    width = max(len(k) for k, _ in figures)
    for key, value in figures:
        print(f"{key:<{width}}  {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
