#!/usr/bin/env python3
"""Time a kubeadm cluster of one control plane and two workers (molecule/kubeadm_cluster's
hosts and variables) built by playbooks/site.yml from the real Kubernetes binaries in
../shared/k8s: the first converge (base, containerd, image archives, binaries, kubeadm
init and joins, bridge CNI, labels, validation) and a no-op converge.

Prints the figures; asserts nothing about them. Starts its own lab (bench-kubeadm) and
removes it afterwards. Run from the repository root with the dev environment on PATH:
    python3 benchmarks/kubeadm_cluster.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "molecule" / "kubeadm_cluster"
LAB = "bench-kubeadm"
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, text=True, capture_output=True, cwd=ROOT, **kwargs)


def converge(inventories: list[str], env: dict[str, str]) -> tuple[float, dict[str, int]]:
    start = time.monotonic()
    args = [a for inv in inventories for a in ("-i", inv)]
    proc = subprocess.run(["ansible-playbook", *args, str(ROOT / "playbooks" / "site.yml")], text=True,
                          capture_output=True, cwd=ROOT, env=env, check=False)
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        print(proc.stdout[-6000:], file=sys.stderr)
        raise SystemExit(f"site.yml failed after {elapsed:.0f}s")
    changed = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", proc.stdout, re.M)}
    return elapsed, changed


def main() -> int:
    molecule = yaml.safe_load((SCENARIO / "molecule.yml").read_text())
    platforms = molecule["platforms"]
    hosts = [f"--host={p['name']}={','.join(p['groups'])}" for p in platforms]
    memory = max(int(p.get("lab_memory_mib", 512)) for p in platforms)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    with tempfile.TemporaryDirectory(prefix="bench-kubeadm-") as tmp:
        report = Path(tmp) / "report"
        inv = Path(tmp) / "inventory"
        (inv / "group_vars").mkdir(parents=True)
        for group, values in molecule["provisioner"]["inventory"]["group_vars"].items():
            text = yaml.safe_dump(values, sort_keys=False).replace("${MOLECULE_EPHEMERAL_DIRECTORY}/validation-report",
                                                                   str(report))
            (inv / "group_vars" / f"{group}.yml").write_text(text)
        (inv / "hosts.yml").write_text("all: {}\n")
        try:
            start = time.monotonic()
            run([LAB_CLI, "k8s-mirror", "--from", str(ROOT.parent / "shared" / "k8s"),
                 "--kubectl", str(ROOT / ".venv" / "bin" / "kubectl")])
            mirror = time.monotonic() - start
            start = time.monotonic()
            run([LAB_CLI, "up", "--name", LAB, "--memory", str(memory), *hosts])
            lab_up = time.monotonic() - start
            lab_inv = run([LAB_CLI, "inventory", "--name", LAB]).stdout.strip()
            first, first_changed = converge([lab_inv, str(inv)], env)
            noop, noop_changed = converge([lab_inv, str(inv)], env)
        finally:
            subprocess.run([LAB_CLI, "down", "--name", LAB], cwd=ROOT, check=False, capture_output=True)
    print(f"hosts: {len(platforms)} ({', '.join(p['name'] for p in platforms)}), {memory} MiB each")
    print(f"load average at end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"k8s mirror:      {mirror:7.1f} s (cached after the first build)")
    print(f"lab up:          {lab_up:7.1f} s")
    print(f"first converge:  {first:7.1f} s  changed={sum(first_changed.values())}")
    print(f"no-op converge:  {noop:7.1f} s  changed={sum(noop_changed.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
