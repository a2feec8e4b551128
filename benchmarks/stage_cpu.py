#!/usr/bin/env python3
"""Benchmark: how much CPU a test stage needs, beside how long it takes.

    python3 benchmarks/stage_cpu.py [--containers PREFIX] -- COMMAND...
    python3 benchmarks/stage_cpu.py -- molecule test -s containerd

`make test` has 2 cores on CI. Whether two stages can share them (run side by side
instead of one after the other) depends on how much of a stage's wall time its own
processes keep a core busy. This runs COMMAND in a cgroup of its own (cgroup v1
cpuacct, as on this machine) and adds the CPU time of the podman lab hosts it starts
(their own cgroups under libpod_parent, matched by name: `cdl-mol-<scenario>-` for
`molecule ... -s <scenario>`, or --containers), sampled every 2 s while they live.
QEMU lab hosts are processes of the command's own tree, so its cgroup counts them.

Prints the wall time, the CPU seconds of the command's tree and of its lab hosts, and
their ratio to the wall time (1.0 = one core busy all along). Other work on the machine
lengthens the wall time but hardly changes the CPU seconds; say the load with the figure.
No pass/fail judgement on time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def usage_ns(group: Path) -> int:
    try:
        return int((group / "cpuacct.usage").read_text())
    except (OSError, ValueError):
        return 0


def lab_hosts(prefix: str) -> dict[str, Path]:
    out = subprocess.run(["podman", "ps", "-a", "--no-trunc", "--filter", f"name=^{prefix}",
                          "--format", "{{.ID}}"], capture_output=True, text=True, check=False).stdout
    return {cid: CPUACCT / "libpod_parent" / f"libpod-{cid}" for cid in out.split()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--containers", help="name prefix of the lab hosts to count (default from -s SCENARIO)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    if not (CPUACCT / "cpuacct.usage").exists():
        print("stage_cpu: this machine has no cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct", file=sys.stderr)
        return 2
    prefix = args.containers
    if prefix is None and "-s" in command and command.index("-s") + 1 < len(command):
        prefix = "cdl-mol-" + command[command.index("-s") + 1].replace("_", "-") + "-"

    group = CPUACCT / f"stage-cpu-{os.getpid()}"
    group.mkdir()
    # Lab hosts already up count from now on only (their cpuacct.usage is since their start).
    baseline = {cid: usage_ns(cg) for cid, cg in lab_hosts(prefix).items()} if prefix else {}
    seen: dict[str, int] = {}
    start = time.monotonic()
    try:
        proc = subprocess.Popen(command, preexec_fn=lambda: (group / "tasks").write_text(str(os.getpid())))
        while proc.poll() is None:
            if prefix:
                for cid, cg in lab_hosts(prefix).items():
                    seen[cid] = max(seen.get(cid, 0), usage_ns(cg))
            time.sleep(2)
        wall = time.monotonic() - start
        own = usage_ns(group) / 1e9
    finally:
        try:
            group.rmdir()
        except OSError:
            pass
    hosts = sum(max(0, used - baseline.get(cid, 0)) for cid, used in seen.items()) / 1e9
    load = os.getloadavg()[0]
    print(f"stage_cpu: {' '.join(command)}")
    print(f"stage_cpu: exit {proc.returncode}, wall {wall:.0f} s, CPU {own + hosts:.0f} s "
          f"(command tree {own:.0f} s, {len(seen)} lab host(s) {hosts:.0f} s), "
          f"{(own + hosts) / wall:.2f} cores busy on average; load average {load:.1f} at the end")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
