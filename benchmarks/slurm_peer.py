#!/usr/bin/env python3
"""Our base + Slurm against galaxyproject.slurm, the most used Slurm role on Galaxy
(github.com/galaxyproject/ansible-slurm), side by side on the 4-host lab of
molecule/slurm_cluster (controller + slurmdbd, two compute nodes, one login host):

  ours  first converge   base.yml + slurm.yml on fresh hosts (the scenario's converge.yml,
                         what benchmarks/slurm.py times), then the same again (no-op)
  peer  first converge   benchmarks/slurm_peer_prepare.yml (what the role leaves to its user:
                         apt through the lab's proxy, libpmix, MariaDB with the slurmdbd
                         database and user, and the MPI packages our role installs for
                         validation's MPI job, read from roles/slurm/vars/main.yml, so that
                         both clusters can run the same jobs; --peer-without-mpi leaves them
                         out) + benchmarks/slurm_peer_site.yml (the role, with the
                         variables its README documents, for the same cluster: accounting in
                         MariaDB, the lab's node and partition lines, munge key distributed),
                         then both again (no-op)

Both use Debian's own Slurm packages through the lab's package proxy. Rounds are interleaved
on fresh labs (odd rounds ours first, even rounds the peer first). After each converge the
cluster must work: sinfo on the controller shows every compute node idle and sacctmgr lists
the cluster; a round where either side does not is printed but not counted. Prints per round
seconds, task headers, changed and the load average, the ratios ours/peer, and the medians
over the counted rounds against issue 18 item 1 (ours at most half the peer's first converge).
Asserts nothing about time; figures compare only at similar load.

The peer role is not part of this repository: install it and pass its directory, e.g.

    ansible-galaxy role install -p ~/peer-roles galaxyproject.slurm
    python3 benchmarks/slurm_peer.py --peer-role ~/peer-roles/galaxyproject.slurm [--rounds 2] \\
        [--executor stock|collection|mitogen] [--name bench-slurm-peer] [--log-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from slurm_lab import (
    LAB_CLI,
    ROOT,
    SCENARIO,
    SlurmLab,
    add_executor_argument,
    figures,
    load,
    speed,
)

HERE = Path(__file__).resolve().parent
OURS = SCENARIO / "converge.yml"
PREPARE = HERE / "slurm_peer_prepare.yml"
PEER_SITE = HERE / "slurm_peer_site.yml"
CLUSTER = "lab"  # ClusterName on both sides (the scenario's slurm_cluster_name)
# A test fixture, not a secret: the lab is thrown away after the run.
DB_PASSWORD = "lab-only-peer-slurmdbd-password"


def debian_values() -> dict:
    """Our slurm role's Debian values (roles/slurm/vars/main.yml)."""
    role_vars = yaml.safe_load((ROOT / "roles" / "slurm" / "vars" / "main.yml").read_text())
    return role_vars["__slurm_os_values"]["Debian"]


def mpi_packages() -> dict[str, list[str]]:
    """Per inventory group, the packages our slurm role installs beyond Slurm's own and libpmix
    (Debian's values): the MPI stack of validation's MPI job, which the peer's
    preparation installs too so that both sides build a cluster that runs the same jobs."""
    packages = debian_values()["packages"]
    groups = {"compute": "slurm_compute", "login": "slurm_login", "controller": "slurm_controller", "dbd": "slurm_dbd"}
    extra = {groups[daemon]: [p for p in names if not p.startswith(("slurm", "libpmix"))]
             for daemon, names in packages.items()}
    return {group: names for group, names in extra.items() if names}


def peer_role(path: str) -> Path:
    """The installed galaxyproject.slurm role's directory; exits with how to get it when missing."""
    role = Path(path).expanduser().resolve()
    if not (role / "tasks" / "main.yml").is_file():
        sys.exit(f"--peer-role {path}: no role there ({role / 'tasks' / 'main.yml'} is missing).\n"
                 "Install galaxyproject.slurm first, e.g. `ansible-galaxy role install -p ~/peer-roles "
                 "galaxyproject.slurm`, and pass its directory (~/peer-roles/galaxyproject.slurm).")
    return role


def hosts_in(lab: SlurmLab, group: str) -> list[str]:
    return [p["name"] for p in lab.platforms if group in p["groups"]]


def working(lab: SlurmLab, wait: float = 90.0) -> str:
    """'' when the lab's Slurm cluster works (every compute node idle in sinfo on the
    controller, the cluster listed by sacctmgr), else what is wrong. Waits up to `wait`
    seconds for slurmd registrations; this time is not counted."""
    ctl, compute = hosts_in(lab, "slurm_controller")[0], sorted(hosts_in(lab, "slurm_compute"))
    check = "sinfo -h -N -o '%N %t'; echo ---; sacctmgr -n -P show cluster format=cluster"
    deadline = time.monotonic() + wait
    while True:
        proc = subprocess.run([LAB_CLI, "ssh", "--name", lab.name, ctl, check], cwd=ROOT, text=True,
                              capture_output=True, check=False)
        nodes_out, _, clusters_out = proc.stdout.partition("---")
        states = dict(line.split()[:2] for line in nodes_out.splitlines() if len(line.split()) >= 2)
        idle = sorted(n for n, s in states.items() if s == "idle")
        clusters = clusters_out.split()
        if idle == compute and CLUSTER in clusters:
            return ""
        if time.monotonic() > deadline:
            return (f"sinfo: {states or proc.stderr.strip()[-300:]} (want {', '.join(compute)} idle); "
                    f"sacctmgr clusters: {clusters or '-'} (want {CLUSTER})")
        time.sleep(5)


def add(*figs: dict) -> dict:
    """One figure for playbooks run one after the other (the peer's preparation + role)."""
    ran: dict[str, int] = {}
    for fig in figs:
        for host, count in fig["ran"].items():
            ran[host] = ran.get(host, 0) + count
    hosts_cpu = [f.get("hosts_cpu") for f in figs]
    return {"seconds": sum(f["seconds"] for f in figs), "cpu": sum(f["cpu"] for f in figs),
            "hosts_cpu": None if None in hosts_cpu else sum(hosts_cpu),
            "tasks": sum(f["tasks"] for f in figs), "changed": sum(f["changed"] for f in figs),
            "ran": ran, "parts": [f["seconds"] for f in figs]}


def converge(side: str, lab: SlurmLab, peer_vars: str) -> dict:
    """One converge of `side` on `lab`: ours (base.yml + slurm.yml) or the peer (preparation + role)."""
    if side == "ours":
        return lab.playbook(OURS)
    return add(lab.playbook(PREPARE, "-e", peer_vars), lab.playbook(PEER_SITE, "-e", peer_vars))


def measure(side: str, args, peer_vars: str, round_no: int) -> dict:
    """A fresh lab, `side`'s first converge, the check, its no-op, the check again; the lab is removed."""
    log_dir = os.path.join(args.log_dir, f"round{round_no}-{side}") if args.log_dir else None
    out: dict = {"loads": [load()], "broken": "", "speed": speed()}
    try:
        with SlurmLab(args.name, executor=args.executor, log_dir=log_dir) as lab:
            # Task coverage records nothing here: the peer's tasks are not ours (both sides alike).
            lab.env["CLUSTERDOS_COVERAGE_DIR"] = ""
            # Ansible's default, on both sides: the peer reads top-level facts
            # (ansible_os_family), which this checkout's ansible.cfg turns off (our roles read
            # ansible_facts only and work either way).
            lab.env["ANSIBLE_INJECT_FACT_VARS"] = "true"
            out["first"] = converge(side, lab, peer_vars)
            out["loads"].append(load())
            out["broken"] = working(lab)
            out["noop"] = converge(side, lab, peer_vars)
            out["loads"].append(load())
            if not out["broken"]:
                out["broken"] = working(lab)
                out["broken"] = out["broken"] and f"after the no-op: {out['broken']}"
    except SystemExit as exc:  # a failed playbook (slurm_lab.run exits): the round is not counted
        out["broken"] = f"a playbook failed: {str(exc).strip()[-1500:]}"
    return out


def line(side: str, label: str, fig: dict | None, loads: str) -> str:
    if fig is None:
        return f"  {side:<5}{label:<16}(not run)"
    parts = fig.get("parts")
    split = f"  (preparation {parts[0]:.1f} s + role {parts[1]:.1f} s)" if parts else ""
    return f"  {side:<5}{label:<16}{figures(fig)}  load {loads}{split}"


def ratio(ours: dict, peer: dict, key: str) -> float | None:
    if key not in ours or key not in peer or not peer[key]["seconds"]:
        return None
    return ours[key]["seconds"] / peer[key]["seconds"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer-role", required=True,
                    help="directory of an installed galaxyproject.slurm role "
                         "(`ansible-galaxy role install -p DIR galaxyproject.slurm`, then DIR/galaxyproject.slurm)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default: %(default)s)")
    ap.add_argument("--name", default="bench-slurm-peer", help="lab name, used by every side in turn "
                                                               "(default: %(default)s)")
    ap.add_argument("--log-dir", help="save each playbook run's output there (roundN-SIDE/NN-playbook.log)")
    ap.add_argument("--peer-without-mpi", action="store_true",
                    help="leave the MPI packages our role installs out of the peer's preparation "
                         "(the comparison before session 20: the peer's cluster then cannot run the MPI job)")
    add_executor_argument(ap)
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be 1 or more")
    role = peer_role(args.peer_role)
    mpi = {} if args.peer_without_mpi else mpi_packages()
    rows: list[tuple[int, dict, dict]] = []
    with tempfile.TemporaryDirectory(prefix="slurm-peer-") as tmp:
        key = Path(tmp) / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        peer_vars = json.dumps({"peer_role": str(role), "slurm_munge_key": str(key), "peer_db_password": DB_PASSWORD,
                                "peer_mpi_packages": mpi, "peer_pmix_link": debian_values()["pmix_link"]})
        for n in range(1, args.rounds + 1):
            order = ("ours", "peer") if n % 2 else ("peer", "ours")
            got = {side: measure(side, args, peer_vars, n) for side in order}
            rows.append((n, got["ours"], got["peer"]))
            report_round(n, order, got)
    return summary(rows, args, role, mpi)


def report_round(n: int, order: tuple[str, str], got: dict) -> None:
    print(f"round {n} ({order[0]} first)")
    for side in order:
        res = got[side]
        loads = res["loads"] + ["-"] * 3
        print(line(side, "first converge", res.get("first"), loads[1]))
        print(line(side, "no-op", res.get("noop"), loads[2]))
        print(f"  {side:<5}machine before its lab started: {res['speed']}")
        if res["broken"]:
            print(f"  {side:<5}NOT A WORKING CLUSTER, round not counted: {res['broken']}")
    first, noop = ratio(got["ours"], got["peer"], "first"), ratio(got["ours"], got["peer"], "noop")
    if first is not None and noop is not None:
        print(f"  ours/peer: first converge {first:.2f}, no-op {noop:.2f}")
    sys.stdout.flush()


def summary(rows: list[tuple[int, dict, dict]], args, role: Path, mpi: dict[str, list[str]]) -> int:
    counted = [(n, o, p) for n, o, p in rows if not o["broken"] and not p["broken"]]
    print(f"\npeer role: {role}")
    print("peer's preparation installs our MPI packages too: " +
          ("no (--peer-without-mpi)" if args.peer_without_mpi else
           "; ".join(f"{g}: {', '.join(p)}" for g, p in mpi.items())))
    print(f"executor: {args.executor}; lab: {', '.join(p['name'] for p in SlurmLab(args.name).platforms)}; "
          f"{os.cpu_count()} CPUs; load now {load()}")
    if not counted:
        print(f"summary: no round counted ({len(rows)} run): see NOT A WORKING CLUSTER or the failure above")
        return 1
    med = statistics.median
    for key, label in (("first", "first converge"), ("noop", "no-op")):
        ours = med(o[key]["seconds"] for _, o, _ in counted)
        peer = med(p[key]["seconds"] for _, _, p in counted)
        ratios = med(o[key]["seconds"] / p[key]["seconds"] for _, o, p in counted)
        print(f"median over {len(counted)} of {len(rows)} rounds, {label:<15} ours {ours:7.1f} s  "
              f"peer {peer:7.1f} s  ours/peer {ratios:.2f}")
    first = med(o["first"]["seconds"] / p["first"]["seconds"] for _, o, p in counted)
    verdict = "met" if first <= 0.5 else "NOT met"
    print(f"issue 18 item 1 (ours' first converge at most half the peer's): {verdict} ({first:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
