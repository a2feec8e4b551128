#!/usr/bin/env python3
"""Benchmark: lab up (cold and cached) and the base role's first and no-op converge.

    python3 benchmarks/lab_and_base.py [--hosts 3] [--skip-cold]

Cold: a fresh image cache in a temporary directory (debootstrap, podman import) — the
machine's own cache and the labs using it are not touched. Cached: the same `up` again.
Then playbooks/base.yml on the hosts twice; the second run must report changed=0.
Prints one line per figure; makes no pass/fail judgement on time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = str(ROOT / "bin" / "clusterdos-lab")
NAME = "bench-base"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.monotonic()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def changed_total(recap: str) -> int:
    return sum(int(n) for n in re.findall(r"changed=(\d+)", recap))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--skip-cold", action="store_true", help="only the cached lab up")
    args = ap.parse_args()
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    cache = tempfile.mkdtemp(prefix="clusterdos-bench-cache.")
    if not args.skip_cold:
        env["CLUSTERDOS_LAB_CACHE"] = cache
    figures: list[tuple[str, str]] = []
    up = [CLI, "up", "--name", NAME, "--hosts", str(args.hosts)]
    try:
        subprocess.run([CLI, "down", "--name", NAME], env=env, capture_output=True, check=False)
        if not args.skip_cold:
            t, _ = timed(up, env)
            figures.append((f"lab up, {args.hosts} hosts, cold image cache", f"{t:.1f} s"))
            timed([CLI, "down", "--name", NAME], env)
        t, out = timed(up, env)
        figures.append((f"lab up, {args.hosts} hosts, cached image", f"{t:.1f} s"))
        inventory = out.strip().splitlines()[-1]
        play = ["ansible-playbook", "-i", inventory, str(ROOT / "playbooks" / "base.yml")]
        t, recap = timed(play, env)
        figures.append((f"base first converge, {args.hosts} hosts", f"{t:.1f} s (changed={changed_total(recap)})"))
        t, recap = timed(play, env)
        figures.append((f"base no-op converge, {args.hosts} hosts", f"{t:.1f} s (changed={changed_total(recap)})"))
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
