# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Slurm checks, run on a host with the Slurm client commands and munge (the
controller or a login node): controller ping, node states, srun across every compute
node, GRES counts, accounting, an MPI job and the optional NCCL all-reduce test."""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.clusterdos.cluster.plugins.module_utils.slurm_config import SINFO_STATE_FLAGS
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    CheckFailed,
    CheckSkipped,
    CmdResult,
    Outcome,
    Runner,
)

# sinfo appends a flag to the state (slurm_config.SINFO_STATE_FLAGS says which); here any
# flag but '-' (planned by the backfill scheduler) means trouble.
_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:(,]+)?:(\d+)")


def parse_sinfo(text: str) -> Dict[str, str]:
    """`sinfo --noheader --Node --format=%N|%T` -> {node: state}; one line per partition."""
    states: Dict[str, str] = {}
    for line in text.splitlines():
        if "|" in line:
            node, state = line.strip().split("|", 1)
            states[node] = state.strip()
    return states


def parse_scontrol_nodes(text: str) -> Dict[str, Dict[str, str]]:
    """`scontrol --oneliner show node` -> {node: {key: value}}."""
    nodes: Dict[str, Dict[str, str]] = {}
    for line in text.splitlines():
        fields: Dict[str, str] = {}
        for token in line.split():
            if "=" in token:
                key, value = token.split("=", 1)
                fields.setdefault(key, value)
        if "NodeName" in fields:
            nodes[fields["NodeName"]] = fields
    return nodes


def gres_gpu_count(gres: str) -> int:
    """GPUs in a Gres string such as 'gpu:a100:8(S:0-1),shard:16' or '(null)'."""
    return sum(int(m) for m in _GRES_GPU.findall(gres or ""))


def parse_nccl_busbw(text: str) -> Optional[float]:
    """The '# Avg bus bandwidth : N' line of nccl-tests, in GB/s."""
    match = re.search(r"Avg bus bandwidth\s*:\s*([0-9.]+)", text)
    return float(match.group(1)) if match else None


class SlurmContext:
    def __init__(
        self,
        run: Runner,
        nodes: List[Dict[str, Any]],
        partition: Optional[str] = None,
        states: Optional[List[str]] = None,
        mpi: str = "pmix",
        mpi_program: Optional[List[str]] = None,
        nccl_program: Optional[List[str]] = None,
        nccl_min_busbw: float = 0.0,
        timeout: int = 120,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.run = run
        self.nodes = [n for n in nodes if n.get("slurm_compute")]
        self.partition = partition
        self.states = states or ["idle", "mixed", "allocated", "completing"]
        self.mpi = mpi
        self.mpi_program = mpi_program or ["python3", "-m", "mpi4py.bench", "helloworld"]
        self.nccl_program = nccl_program or ["all_reduce_perf", "-b", "8", "-e", "256M", "-f", "2", "-g", "1"]
        self.nccl_min_busbw = nccl_min_busbw
        self.timeout = timeout
        self.sleep = sleep
        self._controller: Optional[str] = None
        self.ping = ""
        # The job the srun check ran, for the accounting check (checked after the MPI job,
        # so that slurmdbd has had the time to record it).
        self.srun_job = ""

    def require(self) -> None:
        if self._controller is None:
            res = self.run(["scontrol", "ping"], timeout=60)
            self.ping = " ".join(res.out.split())
            up = res.rc == 0 and "UP" in res.out and "DOWN" not in res.out
            self._controller = "" if up else "the Slurm controller does not answer: %s" % (
                res.out.strip().splitlines()[0] if res.out.strip() else res.reason())
        if self._controller:
            raise CheckFailed(self._controller)

    def expected(self) -> List[str]:
        if not self.nodes:
            raise CheckSkipped("no Slurm compute nodes expected in the inventory")
        return [n["name"] for n in self.nodes]

    def srun_argv(self, nodes: List[str], *extra: str) -> List[str]:
        argv = ["srun", "--nodes=%d" % len(nodes), "--nodelist=%s" % ",".join(nodes),
                "--time=5", "--immediate=%d" % self.timeout]
        if self.partition:
            argv.append("--partition=%s" % self.partition)
        return argv + list(extra)

    def srun(self, nodes: List[str], *extra: str) -> CmdResult:
        self.require()
        return self.run(self.srun_argv(nodes, *extra), timeout=self.timeout + 60)


def check_controller(ctx: SlurmContext) -> str:
    ctx.require()
    return ctx.ping or "controller up"


def check_node_states(ctx: SlurmContext) -> str:
    expected = ctx.expected()
    ctx.require()
    argv = ["sinfo", "--noheader", "--Node", "--format=%N|%T"]
    if ctx.partition:
        argv.append("--partition=%s" % ctx.partition)
    res = ctx.run(argv, timeout=60)
    if res.rc != 0:
        raise CheckFailed("sinfo failed: %s" % res.reason())
    states = parse_sinfo(res.out)
    problems = []
    for node in expected:
        state = states.get(node)
        if state is None:
            problems.append("%s: not in sinfo" % node)
            continue
        base = state.rstrip(SINFO_STATE_FLAGS)
        if base not in ctx.states or (state != base and not state.endswith("-")):
            problems.append("%s: %s" % (node, state))
    if problems:
        raise CheckFailed("nodes not in an expected state (%s): %s" % ("/".join(ctx.states), "; ".join(problems)))
    return ", ".join("%s %s" % (n, states[n]) for n in expected)


def check_srun(ctx: SlurmContext) -> Outcome:
    expected = ctx.expected()
    res = ctx.srun(expected, "--ntasks-per-node=1", "printenv", "SLURMD_NODENAME", "SLURM_JOB_ID")
    if res.rc != 0:
        raise CheckFailed("srun across %s failed: %s" % (",".join(expected), res.reason()))
    # Each task prints its node's name and the job's ID (the same number on every line of it).
    lines = [line.strip() for line in res.out.splitlines() if line.strip()]
    numbers = [line for line in lines if line.isdigit()]
    job = max(set(numbers), key=numbers.count) if len(numbers) >= len(lines) // 2 and numbers else ""
    ran = sorted({line for line in lines if line != job})
    ctx.srun_job = job
    missing = sorted(set(expected) - set(ran))
    if missing:
        raise CheckFailed("srun ran on %s but not on %s" % (", ".join(ran) or "no node", ", ".join(missing)))
    return Outcome("a task ran on each of %d nodes: %s" % (len(ran), ", ".join(ran)), {"nodes": ran})


def check_gres(ctx: SlurmContext) -> str:
    ctx.expected()
    ctx.require()
    res = ctx.run(["scontrol", "--oneliner", "show", "node"], timeout=60)
    if res.rc != 0:
        raise CheckFailed("scontrol show node failed: %s" % res.reason())
    found = parse_scontrol_nodes(res.out)
    problems, counts = [], []
    for node in ctx.nodes:
        want = sum(int(v) for v in (node.get("gpus") or {}).values())
        fields = found.get(node["name"])
        if fields is None:
            problems.append("%s: unknown to slurmctld" % node["name"])
            continue
        have = gres_gpu_count(fields.get("Gres", ""))
        counts.append("%s gpu:%d" % (node["name"], have))
        if have != want:
            problems.append("%s: Gres=%s has %d GPUs, inventory says %d" % (node["name"], fields.get("Gres"), have, want))
    if problems:
        raise CheckFailed("; ".join(problems))
    return "GRES as in the inventory: %s" % ", ".join(counts)


# Seconds to wait after each sacct query that does not show the job yet.
_SACCT_POLL = (0.25, 0.5, 1, 2, 2, 2, 2, 2, 2, 2)


def check_accounting(ctx: SlurmContext) -> str:
    expected = ctx.expected()
    # The srun check's job when it ran one in this run (finished a while ago: sacct usually
    # has it at the first question), else a job of its own.
    job = ctx.srun_job
    if not job:
        res = ctx.srun(expected[:1], "--ntasks=1", "printenv", "SLURM_JOB_ID")
        job = res.out.strip().splitlines()[0].strip() if res.rc == 0 and res.out.strip() else ""
        if not job.isdigit():
            raise CheckFailed("could not run a job to account for: %s" % res.reason())
    state = ""
    # slurmctld hands the finished job to slurmdbd asynchronously: poll, soon at first
    # (it is usually there within a second), then every 2 s, about 15 s in all.
    for attempt, pause in enumerate(_SACCT_POLL):
        acct = ctx.run(["sacct", "--noheader", "--parsable2", "--allocations", "--jobs=%s" % job,
                        "--format=JobID,State,ExitCode"], timeout=60)
        if acct.rc != 0:
            if "accounting storage is disabled" in (acct.err + acct.out).lower():
                raise CheckSkipped("Slurm accounting storage is disabled")
            raise CheckFailed("sacct failed: %s" % acct.reason())
        rows = [line.split("|") for line in acct.out.splitlines() if line.startswith(job + "|")]
        state = rows[0][1] if rows else ""
        if state.startswith("COMPLETED"):
            return "job %s recorded by sacct as %s (exit %s)" % (job, state, rows[0][2] if len(rows[0]) > 2 else "?")
        if attempt < len(_SACCT_POLL) - 1:
            ctx.sleep(pause)
    raise CheckFailed("job %s: sacct state %s, expected COMPLETED" % (job, state or "missing"))


def check_mpi(ctx: SlurmContext) -> str:
    expected = ctx.expected()
    if len(expected) < 2:
        raise CheckSkipped("an MPI job needs 2 compute nodes; the inventory has %d" % len(expected))
    pair = expected[:2]
    res = ctx.srun(pair, "--ntasks-per-node=1", "--mpi=%s" % ctx.mpi, *ctx.mpi_program)
    if res.rc != 0:
        # Why: OpenMPI missing is a skip (no MPI stack to test), anything else a failure.
        probe = ctx.srun(pair, "--ntasks-per-node=1", "ompi_info", "--version")
        if probe.rc != 0:
            raise CheckSkipped("OpenMPI is not installed on %s (ompi_info: %s)" % (",".join(pair), probe.reason()))
        raise CheckFailed("MPI job on %s failed: %s" % (",".join(pair), res.reason()))
    ranks = re.findall(r"process\s+(\d+) of (\d+) on (\S+?)\.?$", res.out, re.MULTILINE)
    if len(ranks) != 2 or {rank[1] for rank in ranks} != {"2"}:
        raise CheckFailed("MPI job did not report 2 ranks in one world: %s" % res.out.strip()[-300:])
    hosts = sorted({rank[2] for rank in ranks})
    return "MPI world of 2 ranks (--mpi=%s) on %s" % (ctx.mpi, ", ".join(hosts))


def check_nccl(ctx: SlurmContext) -> Outcome:
    nodes = [n for n in ctx.nodes if sum(int(v) for v in (n.get("gpus") or {}).values())]
    if len(nodes) < 1:
        raise CheckSkipped("no GPU compute nodes in the inventory")
    gpus = min(sum(int(v) for v in (n.get("gpus") or {}).values()) for n in nodes)
    names = [n["name"] for n in nodes]
    res = ctx.srun(names, "--ntasks-per-node=%d" % gpus, "--gpus-per-node=%d" % gpus,
                   "--mpi=%s" % ctx.mpi, *ctx.nccl_program)
    busbw = parse_nccl_busbw(res.out)
    if res.rc != 0 or busbw is None:
        raise CheckFailed("NCCL all-reduce on %s failed: %s" % (",".join(names), res.reason()))
    if busbw < ctx.nccl_min_busbw:
        raise CheckFailed("NCCL all-reduce bus bandwidth %.2f GB/s is below %.2f GB/s" % (busbw, ctx.nccl_min_busbw))
    return Outcome("NCCL all-reduce on %d nodes x %d GPUs: average bus bandwidth %.2f GB/s" % (
        len(names), gpus, busbw), {"busbw_gbps": busbw, "nodes": names, "gpus_per_node": gpus})


CHECKS = [
    Check("slurm.controller", "slurmctld answers scontrol ping", check_controller),
    Check("slurm.node_states", "Every compute node is in sinfo in an expected state", check_node_states),
    Check("slurm.srun", "srun runs a task on every compute node", check_srun, mutates=True),
    Check("slurm.gres", "GPU GRES per node match the inventory", check_gres),
    Check("slurm.mpi", "An MPI job spans 2 compute nodes", check_mpi, mutates=True),
    # After the MPI job: the srun check's job has had the time to reach slurmdbd.
    Check("slurm.accounting", "sacct records a finished job as COMPLETED", check_accounting, mutates=True),
    Check("hardware.nccl_slurm", "NCCL all-reduce across the GPU nodes through srun (bus bandwidth)",
          check_nccl, default=False, mutates=True, context="slurm"),
]
