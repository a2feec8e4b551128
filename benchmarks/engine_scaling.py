#!/usr/bin/env python3
"""Benchmark: the controller's CPU per host of Ansible itself, with no lab (issue 18, item 4).

benchmarks/lab_and_base.py measures base.yml on 1, 10 and 50 podman hosts; there the
hosts share the machine's cores with the controller, so its per-host figure mixes what
the engine and the collection cost with what 50 busy containers do to everything else.
This one runs fixed plays against N inventory hosts that all use the local connection
(nothing is started; every host runs its modules on this machine, as children of
ansible-playbook, so their CPU counts too), and prints the CPU of ansible-playbook and
its children per host for each N:

  engine      six tasks: set_fact, assert, two commands, a skipped debug, a set_fact
              reading groups (what every role's task costs the engine)
  big facts   the same after each host got a 3,000-item cacheable fact (a worker is
              forked from a controller holding every host's facts)
  inventory   two set_facts that read every host's address through
              clusterdos.cluster.node_addresses(hostvars) (what /etc/hosts and the
              preflight do: N lookups per host, N squared per task)

With --lab, the `engine` play also runs over SSH against that many podman lab hosts
(bin/clusterdos-lab, started and removed here; --memory as in lab_and_base.py): the same
tasks, now with ssh clients and hosts that share the machine's cores.

A figure that grows with N is a cost that grows faster than the cluster. Asserts nothing
about time; say the load with the figures. Run from the repository root with the dev
environment on PATH:

    python3 benchmarks/engine_scaling.py [--hosts 1 10 50] [--runs 2] [--lab [--memory MIB]]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAB = "bench-engine"

ENGINE = """
    - ansible.builtin.set_fact:
        x: "{{ inventory_hostname }}"
    - ansible.builtin.assert:
        that: x | length > 0
        quiet: true
    - ansible.builtin.command: "true"
      changed_when: false
    - ansible.builtin.debug:
        msg: "{{ x }}"
      when: false
    - ansible.builtin.set_fact:
        y: "{{ x }}-{{ groups['all'] | length }}"
    - ansible.builtin.command: "true"
      changed_when: false
"""

PLAYS = {
    "engine": "- hosts: all\n  gather_facts: false\n  tasks:" + ENGINE,
    "big facts": """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        big: "{{ range(3000) | map('string') | map('regex_replace', '^', 'a-value-of-some-length-') | list }}"
        cacheable: true
- hosts: all
  gather_facts: false
  tasks:""" + ENGINE,
    "inventory": """- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        y: "{{ groups['all'] | clusterdos.cluster.node_addresses(hostvars) | length }}"
    - ansible.builtin.set_fact:
        z: "{{ groups['all'] | clusterdos.cluster.node_addresses(hostvars) | selectattr('address') | list | length }}"
""",
}


def inventory(hosts: int) -> str:
    lines = ["all:", "  vars:", "    ansible_connection: local",
             f"    ansible_python_interpreter: {sys.executable}", "  hosts:"]
    lines += [f"    h{i}:\n      clusterdos_node_ip: 10.99.{i // 250}.{i % 250 + 1}" for i in range(hosts)]
    return "\n".join(lines) + "\n"


def cpu_of(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of ARGV and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 10, 50], help="inventory sizes (default: 1 10 50)")
    ap.add_argument("--runs", type=int, default=2, help="runs per size and play; the lowest CPU is kept (default: 2)")
    ap.add_argument("--lab", action="store_true", help="also run the engine play on podman lab hosts over SSH")
    ap.add_argument("--memory", type=int, default=256, help="memory limit per lab host in MiB (default: %(default)s)")
    args = ap.parse_args()
    print(f"load average (1/5/15 min) at start: {'/'.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs; forks 20; lowest CPU of {args.runs} runs")
    with tempfile.TemporaryDirectory(prefix="engine-scaling-") as tmp:
        # The checkout's collection path, without its task-coverage callback (these plays
        # are not the collection's tasks).
        (Path(tmp) / "ansible.cfg").write_text(
            f"[defaults]\ncollections_path = {ROOT / '.cache' / 'collections'}\nstdout_callback = ansible.builtin.default\n"
            "host_key_checking = false\nforks = 20\n")
        env = dict(os.environ, ANSIBLE_CONFIG=str(Path(tmp) / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_STRATEGY="linear")
        for name, text in PLAYS.items():
            book = Path(tmp) / f"{name.replace(' ', '_')}.yml"
            book.write_text(text)
            cells = []
            for hosts in args.hosts:
                inv = Path(tmp) / f"inv{hosts}.yml"
                inv.write_text(inventory(hosts))
                runs = [cpu_of(["ansible-playbook", "-f", "20", "-i", str(inv), str(book)], env)
                        for _ in range(args.runs)]
                wall, cpu = min(runs, key=lambda r: r[1])
                cells.append(f"{hosts} hosts {cpu / hosts:5.2f} s/host ({wall:5.1f} s wall)")
            print(f"{name:<10}  " + "   ".join(cells))
        if args.lab:
            book = Path(tmp) / "engine.yml"
            cells = []
            for hosts in args.hosts:
                cells.append(lab_cell(hosts, args, env, book))
            print(f"{'lab (ssh)':<10}  " + "   ".join(cells))
    return 0


def lab_cell(hosts: int, args: argparse.Namespace, env: dict[str, str], book: Path) -> str:
    """The engine play on HOSTS podman lab hosts: CPU per host (lowest of the runs)."""
    cli = str(ROOT / "bin" / "clusterdos-lab")
    subprocess.run([cli, "down", "--name", LAB], capture_output=True, check=False)
    try:
        up = subprocess.run([cli, "up", "--name", LAB, "--hosts", str(hosts), "--memory", str(args.memory)],
                            capture_output=True, text=True, check=False)
        if up.returncode != 0:
            sys.exit(f"lab up failed:\n{up.stdout[-2000:]}\n{up.stderr[-2000:]}")
        inv = up.stdout.strip().splitlines()[-1]
        runs = [cpu_of(["ansible-playbook", "-f", "20", "-i", inv, str(book)], env) for _ in range(args.runs)]
        wall, cpu = min(runs, key=lambda r: r[1])
        return f"{hosts} hosts {cpu / hosts:5.2f} s/host ({wall:5.1f} s wall)"
    finally:
        subprocess.run([cli, "down", "--name", LAB], capture_output=True, check=False)


if __name__ == "__main__":
    sys.exit(main())
