#!/usr/bin/env python3
"""Time base + Slurm on the 4-host lab of molecule/slurm_cluster, in one run:

  first converge   base.yml + slurm.yml on fresh hosts (the scenario's converge.yml)
  no-op converge   the same again (must report changed=0)
  add node         a fifth host (compute): base.yml on every host, then
                   slurm_add_node.yml -- the path docs/slurm.md gives
  no-op add node   slurm_add_node.yml again with nothing to do

and prints the ratios the project tracks (no-op / first, add node / first, add node per
new host vs first converge per host) with the load average, which matters on a shared
machine. Asserts nothing about time. Starts its own lab (bench-slurm) and removes it
afterwards. Run from the repository root with the dev environment on PATH:

    python3 benchmarks/slurm.py [--skip-add-node]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "molecule" / "slurm_cluster"
LAB = "bench-slurm"
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")
NEW_NODE = "slurm-c3"


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, check=False, text=True, capture_output=True, cwd=ROOT, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc


def playbook(inventory: str, path: Path, env: dict[str, str]) -> tuple[float, int, int]:
    """Seconds, changed total and task count (task headers) of one ansible-playbook run."""
    start = time.monotonic()
    proc = run(["ansible-playbook", "-i", inventory, "-i", str(SCENARIO / "inventory"), str(path)], env=env)
    elapsed = time.monotonic() - start
    changed = sum(int(n) for n in re.findall(r"^\S+\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M))
    tasks = len(re.findall(r"^TASK \[", proc.stdout, re.M))
    return elapsed, changed, tasks


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-add-node", action="store_true")
    args = ap.parse_args()
    platforms = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["platforms"]
    hosts = [f"--host={p['name']}={','.join(p['groups'])}" for p in platforms]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0")
    rows: list[tuple[str, str]] = []
    loads = [load()]
    try:
        subprocess.run([LAB_CLI, "down", "--name", LAB], cwd=ROOT, check=False, capture_output=True)
        start = time.monotonic()
        run([LAB_CLI, "up", "--name", LAB, *hosts])
        rows.append(("lab up", f"{time.monotonic() - start:7.1f} s"))
        inventory = run([LAB_CLI, "inventory", "--name", LAB]).stdout.strip()
        first, changed, tasks = playbook(inventory, SCENARIO / "converge.yml", env)
        rows.append(("first converge", f"{first:7.1f} s  changed={changed} tasks={tasks}"))
        loads.append(load())
        noop, changed, tasks = playbook(inventory, SCENARIO / "converge.yml", env)
        rows.append(("no-op converge", f"{noop:7.1f} s  changed={changed} tasks={tasks}"
                     f"  ({100 * noop / first:.0f}% of first)"))
        loads.append(load())
        if not args.skip_add_node:
            run([LAB_CLI, "up", "--name", LAB, *hosts, f"--host={NEW_NODE}=slurm_compute"])
            inventory = run([LAB_CLI, "inventory", "--name", LAB]).stdout.strip()
            base, changed_b, tasks_b = playbook(inventory, ROOT / "playbooks" / "base.yml", env)
            add, changed_a, tasks_a = playbook(inventory, ROOT / "playbooks" / "slurm_add_node.yml", env)
            per_host = first / len(platforms)
            rows.append(("add node: base.yml", f"{base:7.1f} s  changed={changed_b} tasks={tasks_b}"))
            rows.append(("add node: slurm_add_node", f"{add:7.1f} s  changed={changed_a} tasks={tasks_a}"))
            rows.append(("add node total", f"{base + add:7.1f} s  ({100 * (base + add) / first:.0f}% of first converge,"
                         f" {(base + add) / per_host:.1f}x its per-host share {per_host:.1f} s)"))
            loads.append(load())
            noadd, changed, tasks = playbook(inventory, ROOT / "playbooks" / "slurm_add_node.yml", env)
            rows.append(("no-op add node", f"{noadd:7.1f} s  changed={changed} tasks={tasks}"))
            loads.append(load())
    finally:
        subprocess.run([LAB_CLI, "down", "--name", LAB], cwd=ROOT, check=False, capture_output=True)
    print(f"hosts: {len(platforms)} ({', '.join(p['name'] for p in platforms)})"
          f"{'' if args.skip_add_node else ' + ' + NEW_NODE}")
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(f"load average (1/5/15 min) at start and after each step: {'  '.join(loads)} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
