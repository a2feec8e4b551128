#!/usr/bin/env python3
"""Time the Slurm stage on the 4-host lab of molecule/slurm_cluster: the first converge
(packages, databases, daemons) and a no-op converge (everything already in place).

Prints the figures; asserts nothing about them. Starts its own lab (named
bench-slurm) and removes it afterwards. Run from the repository root with the dev
environment on PATH:  python3 benchmarks/slurm.py
"""

from __future__ import annotations

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


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, text=True, capture_output=True, cwd=ROOT, **kwargs)


def converge(inventory: str, env: dict[str, str]) -> tuple[float, dict[str, int]]:
    start = time.monotonic()
    proc = run(["ansible-playbook", "-i", inventory, "-i", str(SCENARIO / "inventory"),
                str(SCENARIO / "converge.yml")], env=env)
    elapsed = time.monotonic() - start
    changed = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M)}
    return elapsed, changed


def main() -> int:
    platforms = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["platforms"]
    hosts = [f"--host={p['name']}={','.join(p['groups'])}" for p in platforms]
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    try:
        start = time.monotonic()
        run([LAB_CLI, "up", "--name", LAB, *hosts])
        lab_up = time.monotonic() - start
        inventory = run([LAB_CLI, "inventory", "--name", LAB]).stdout.strip()
        first, first_changed = converge(inventory, env)
        noop, noop_changed = converge(inventory, env)
    finally:
        subprocess.run([LAB_CLI, "down", "--name", LAB], cwd=ROOT, check=False, capture_output=True)
    print(f"hosts: {len(platforms)} ({', '.join(p['name'] for p in platforms)})")
    print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"lab up:          {lab_up:7.1f} s")
    print(f"first converge:  {first:7.1f} s  changed={sum(first_changed.values())}")
    print(f"no-op converge:  {noop:7.1f} s  changed={sum(noop_changed.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
