"""The 4-host Slurm lab of molecule/slurm_cluster, for the Slurm benchmarks (slurm.py,
slurm_add_node.py): start and remove it, run a playbook on it and read the figures of
that run (seconds, task headers, changed, tasks run per host, slowest tasks).

Not a benchmark itself: the scripts next to it import it.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import machine_probe  # noqa: E402  (scripts/machine_probe.py: one probe for test-all and the benchmarks)
SCENARIO = ROOT / "molecule" / "slurm_cluster"
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")
# The host the add-node benchmark adds (a compute node).
NEW_NODE = "slurm-c3"


def run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run argv from the repository root; exit with its output when it fails."""
    proc = subprocess.run(argv, check=False, text=True, capture_output=True, cwd=ROOT, **kwargs)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc


def add_executor_argument(parser, default: str = "stock") -> None:
    """--executor stock|collection|mitogen, which executor_env() turns into the playbook's environment."""
    parser.add_argument("--executor", choices=("stock", "collection", "mitogen"), default=default,
                        help="Ansible's own linear strategy, the collection's (clusterdos.cluster.linear, what "
                             "ansible.cfg sets) or Mitogen's (default: %(default)s; docs/testing.md)")


def executor_env(executor: str) -> dict[str, str]:
    """Environment for ansible-playbook with EXECUTOR: "stock" (ansible.builtin.linear, what
    ansible-playbook runs without a setting), "collection" (clusterdos.cluster.linear: the same,
    waiting for a free worker without polling hard; this checkout's ansible.cfg) or "mitogen" (the
    pinned Mitogen's linear strategy without CPU pinning, molecule/_shared/strategy: what the
    molecule scenarios use, docs/testing.md)."""
    if executor == "stock":
        return {"ANSIBLE_STRATEGY": "ansible.builtin.linear"}
    if executor == "collection":
        return {"ANSIBLE_STRATEGY": "clusterdos.cluster.linear"}
    plugins = ROOT / "molecule" / "_shared" / "strategy"
    return {"ANSIBLE_STRATEGY": "mitogen_linear", "ANSIBLE_STRATEGY_PLUGINS": str(plugins)}


def load() -> str:
    """The load average (1/5/15 min): figures compare only at similar load."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def speed() -> str:
    """This machine's speed now: scripts/machine_probe.py's Python loop alone and twice side
    by side (the probe that sets test-all's lanes), and 32 writes of 64 KiB, each synced
    (dpkg syncs what it unpacks). The same converge took 73.5 s and, half an hour later,
    111.9 s, idle both times (docs/performance.md, session 20): runs whose probes differ
    much do not compare. Take it before a lab starts, so that the lab's own work is not in it."""
    one, pair = machine_probe.probe()
    fd, path = tempfile.mkstemp(prefix="bench-speed-", dir="/var/tmp")
    try:
        start = time.perf_counter()
        for _ in range(32):
            os.write(fd, bytes(65536))
            os.fsync(fd)
        sync = time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)
    return f"loop alone {one:.2f} s, two side by side did {pair:.2f}x its work; 32 synced writes {sync:.2f} s"


class SlurmLab:
    """The scenario's hosts (molecule.yml platforms) as a lab of their own.

    Use as a context manager: the lab is removed on exit unless keep is set.
    """

    def __init__(self, name: str, keep: bool = False, executor: str = "stock", extra: list[str] | None = None,
                 log_dir: str | None = None):
        """extra: more hosts (NAME=GROUP,...) started with the scenario's from the start; log_dir:
        where each playbook run's output is saved (NN-playbook.log), None for nowhere."""
        self.log_dir = Path(log_dir) if log_dir else None
        self.runs = 0
        self.name = name
        self.keep = keep
        self.platforms = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["platforms"]
        self.extra: list[str] = list(extra or [])
        self.names = [p["name"] for p in self.platforms] + [e.split("=", 1)[0] for e in self.extra]
        self.inventory = ""
        self.env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
                        **executor_env(executor))

    def __enter__(self) -> "SlurmLab":
        self.down()
        try:
            self.up()
        except BaseException:  # run() exits through SystemExit: remove a half-started lab
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if not self.keep:
            self.down()

    def up(self, *extra: str) -> None:
        """Start the scenario's hosts and `extra` ones (NAME=GROUP,...); hosts already up stay."""
        self.extra += [e for e in extra if e not in self.extra]
        hosts = [f"--host={p['name']}={','.join(p['groups'])}" for p in self.platforms]
        run([LAB_CLI, "up", "--name", self.name, *hosts, *(f"--host={e}" for e in self.extra)])
        self.inventory = run([LAB_CLI, "inventory", "--name", self.name]).stdout.strip()

    def down(self) -> None:
        subprocess.run([LAB_CLI, "down", "--name", self.name], cwd=ROOT, check=False, capture_output=True)

    def hosts_cpu(self) -> float | None:
        """The CPU seconds the lab's containers have used so far (podman stats' cpu_time, summed),
        None where podman does not report it."""
        proc = subprocess.run(["podman", "stats", "--no-stream", "--format", "json",
                               *(f"cdl-{self.name}-{n}" for n in self.names)],
                              capture_output=True, text=True, check=False)
        try:
            return sum(cpu_seconds(c["cpu_time"]) for c in json.loads(proc.stdout))
        except (ValueError, KeyError, TypeError):
            return None

    def playbook(self, path: Path, *extra: str, profile: bool = False) -> dict:
        """Run one playbook on the lab (the scenario's inventory too) and return its figures:
        seconds, tasks (task headers), changed (sum over hosts), ran (ok + changed per host,
        localhost left out), cpu (the controller's CPU seconds) and, with profile, slowest (name, seconds) from profile_tasks."""
        env = dict(self.env)
        if profile:
            env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(
                filter(None, [env.get("ANSIBLE_CALLBACKS_ENABLED", ""), "ansible.posix.profile_tasks"]))
            env["PROFILE_TASKS_TASK_OUTPUT_LIMIT"] = "12"
        hosts_before = self.hosts_cpu()
        start = time.monotonic()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = run(["ansible-playbook", "-i", self.inventory, "-i", str(SCENARIO / "inventory"), str(path), *extra],
                   env=env)
        seconds = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        hosts_after = self.hosts_cpu()
        self.runs += 1
        if self.log_dir:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            (self.log_dir / f"{self.runs:02d}-{path.stem}.log").write_text(proc.stdout)
        recap = {h: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", f)}
                 for h, f in re.findall(r"^(\S+)\s+: (ok=.*)$", proc.stdout, re.M)}
        return {
            "seconds": seconds,
            # The controller's CPU: ansible-playbook, its workers and their ssh clients (the
            # lab hosts' own processes are not this process's children).
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            # The lab hosts' CPU (every process in their containers: modules, package
            # managers, daemons), None where podman does not report it. With "cpu", the work
            # a run costs the machine, which wall time on a shared machine only shows blurred.
            "hosts_cpu": (hosts_after - hosts_before) if None not in (hosts_before, hosts_after) else None,
            "tasks": len(re.findall(r"^TASK \[", proc.stdout, re.M)),
            "changed": sum(r["changed"] for r in recap.values()),
            "ran": {h: r["ok"] + r["changed"] for h, r in recap.items() if h != "localhost"},
            "slowest": re.findall(r"^(.+?) -+ (\d+\.\d+)s$", proc.stdout, re.M) if profile else [],
            "timeline": timeline(proc.stdout) if profile else [],
        }


def cpu_seconds(text: str) -> float:
    """Seconds from a Go duration as podman prints it ("16.948425803s", "1m2.5s", "850ms")."""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"not a duration: {text!r}")
    return sum(float(n) * units[u] for n, u in parts)


_HEADER = re.compile(r"^(TASK|RUNNING HANDLER) \[(.*?)\]|^(PLAY RECAP|TASKS RECAP)")
_TIMING = re.compile(r"\((\d+):(\d+):(\d+\.\d+)\)\s+\d+:\d+:\d+\.\d+")
_RESULT = re.compile(r"^(?:ok|changed|fatal|failed|unreachable): \[([^\]\s]+)")
_INCLUDED = re.compile(r"^included: .* for (.+)$")


def timeline(stdout: str) -> list[tuple[str, float, frozenset[str]]]:
    """Every task of a run profiled by profile_tasks, in order: (name, seconds, the hosts
    that ran it -- ok, changed, failed or included; skipped hosts and localhost left out).
    A task's seconds are profile_tasks' (the time from its header to the next one), so they
    add up to the run's time less Ansible's start and the play headers."""
    tasks: list[tuple[str, float, frozenset[str]]] = []
    name, hosts = None, set()
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        head = _HEADER.match(line)
        if head:
            timing = next((_TIMING.search(nxt) for nxt in lines[i + 1:i + 3] if _TIMING.search(nxt)), None)
            if name is not None and timing:
                hours, minutes, secs = timing.groups()
                tasks.append((name, int(hours) * 3600 + int(minutes) * 60 + float(secs), frozenset(hosts)))
            name, hosts = (head.group(2) if head.group(1) else None), set()
            continue
        if name is None:
            continue
        found = _RESULT.match(line)
        included = _INCLUDED.match(line)
        if found:
            hosts.add(found.group(1))
        elif included:
            hosts.update(h.strip() for h in included.group(1).split(","))
    return [(n, secs, frozenset(h for h in ran if h != "localhost")) for n, secs, ran in tasks]


def split_by_hosts(fig: dict, new: str) -> dict[str, float]:
    """A profiled run's time by who ran each task: the new node alone ("new"), the new node
    and existing hosts in the same task ("both"), existing hosts alone ("existing"), no lab
    host (checks on localhost, tasks every host skipped: "none"), and what profile_tasks
    does not see (Ansible's start, play headers: "rest")."""
    parts = {"new": 0.0, "both": 0.0, "existing": 0.0, "none": 0.0}
    for _name, secs, ran in fig["timeline"]:
        key = "none" if not ran else "new" if ran == {new} else "both" if new in ran else "existing"
        parts[key] += secs
    parts["rest"] = max(0.0, fig["seconds"] - sum(parts.values()))
    return parts


def figures(fig: dict) -> str:
    """A playbook run's figures on one line: seconds, the controller's and the hosts' CPU, task headers, changed."""
    hosts = "" if fig.get("hosts_cpu") is None else f"  hosts CPU {fig['hosts_cpu']:.1f} s"
    return f"{fig['seconds']:7.1f} s  controller CPU {fig['cpu']:.1f} s{hosts}  tasks={fig['tasks']} changed={fig['changed']}"


def slowest(label: str, fig: dict) -> list[str]:
    """The profile_tasks lines of a run, one per task."""
    if not fig["slowest"]:
        return []
    return [f"slowest tasks of {label} (profile_tasks):"] + \
        [f"  {float(secs):6.1f} s  {name.strip()}" for name, secs in fig["slowest"]]
