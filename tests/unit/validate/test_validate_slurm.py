"""Slurm checks on recorded command outputs (fixtures/slurm_cases.yml).

The same checks run for real against Slurm on lab hosts in molecule/validate_slurm;
these cases cover the failures a healthy lab cannot show (a node down, a controller
that does not answer, accounting off, a GRES mismatch, NCCL numbers).
"""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import slurm
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import run_checks

from conftest import FIXTURES, RecordedCommands, load_cases

CASES_FILE = "slurm_cases.yml"
BASE = yaml.safe_load((FIXTURES / CASES_FILE).read_text())


def _recorded(case):
    recorded = dict(BASE["recorded"])
    for key, value in (case.get("recorded") or {}).items():
        if value is None:
            recorded.pop(key, None)
        else:
            recorded[key] = value
    return recorded


@pytest.mark.parametrize("case", load_cases(CASES_FILE))
def test_slurm_checks_on_recorded_outputs(case):
    commands = RecordedCommands(_recorded(case))
    sleeps = []
    ctx = slurm.SlurmContext(commands, case.get("inventory", BASE["inventory"]),
                             nccl_min_busbw=case.get("nccl_min_busbw", 0.0), sleep=sleeps.append)
    results = {r.name: r for r in run_checks(slurm.CHECKS, {"slurm": ctx}, case.get("checks", ["slurm"]), [])}
    for name, (status, text) in case["expect"].items():
        assert results[name].status == status, (name, results[name].detail)
        assert text in results[name].detail, (name, results[name].detail)
    if case.get("only"):
        assert set(results) == set(case["expect"])
    else:
        others = case.get("others", "passed")
        status, text = others if isinstance(others, list) else (others, "")
        for name, result in results.items():
            if name not in case["expect"]:
                assert result.status == status and text in result.detail, (name, result.status, result.detail)
    assert len(sleeps) == case.get("sleeps", 0)


def test_nccl_result_carries_bus_bandwidth():
    ctx = slurm.SlurmContext(RecordedCommands(_recorded({})), BASE["inventory"])
    (result,) = run_checks(slurm.CHECKS, {"slurm": ctx}, ["hardware.nccl_slurm"], [])
    assert result.data == {"busbw_gbps": 171.225, "nodes": ["gpu1", "gpu2"], "gpus_per_node": 8}


def test_nccl_is_opt_in():
    ctx = slurm.SlurmContext(RecordedCommands(_recorded({})), BASE["inventory"])
    names = [r.name for r in run_checks(slurm.CHECKS, {"slurm": ctx}, ["all"], [])]
    assert "hardware.nccl_slurm" not in names


def test_srun_argv_with_partition():
    ctx = slurm.SlurmContext(RecordedCommands({}), BASE["inventory"], partition="gpu", timeout=30)
    assert ctx.srun_argv(["gpu1", "gpu2"], "hostname") == [
        "srun", "--nodes=2", "--nodelist=gpu1,gpu2", "--time=5", "--immediate=30", "--partition=gpu", "hostname"]


@pytest.mark.parametrize(("gres", "count"), [
    ("gpu:h100:8(S:0-1)", 8), ("gpu:4", 4), ("(null)", 0), ("", 0),
    ("gpu:a100:4(S:0),gpu:a10:2(S:1)", 6), ("shard:16,gpu:2", 2), ("mps:400", 0),
])
def test_gres_gpu_count(gres, count):
    assert slurm.gres_gpu_count(gres) == count


def test_parse_sinfo_keeps_flags():
    assert slurm.parse_sinfo("a|idle\nb|down*\nb|down*\n") == {"a": "idle", "b": "down*"}


def test_accounting_asks_about_the_srun_checks_job_after_the_mpi_job():
    """With the srun check in the run, accounting runs no job of its own: it asks sacct about
    the srun check's job, after the MPI job (so slurmdbd has had the time to record it); and a
    successful MPI job needs no ompi_info probe."""
    commands = RecordedCommands(_recorded({}))
    ctx = slurm.SlurmContext(commands, BASE["inventory"], sleep=lambda _: None)
    results = {r.name: r for r in run_checks(slurm.CHECKS, {"slurm": ctx}, ["slurm"], [])}
    assert results["slurm.accounting"].status == "passed", results["slurm.accounting"].detail
    ran = [" ".join(argv) for argv in commands.calls]
    assert not [c for c in ran if c.endswith("printenv SLURM_JOB_ID") or "ompi_info" in c], ran
    sacct = next(i for i, c in enumerate(ran) if c.startswith("sacct"))
    assert sacct > next(i for i, c in enumerate(ran) if "--mpi=pmix" in c)


def test_accounting_runs_its_own_job_when_the_srun_check_did_not_run_one():
    for case in ({"recorded": {"srun --nodes=2 --nodelist=gpu1,gpu2 --time=5 --immediate=120 --ntasks-per-node=1 "
                               "printenv SLURMD_NODENAME SLURM_JOB_ID": {"rc": 1, "err": "srun: error: no\n"}}}, {}):
        commands = RecordedCommands(_recorded(case))
        ctx = slurm.SlurmContext(commands, BASE["inventory"], sleep=lambda _: None)
        selected = ["slurm"] if case else ["slurm.accounting"]
        results = {r.name: r for r in run_checks(slurm.CHECKS, {"slurm": ctx}, selected, [])}
        assert results["slurm.accounting"].status == "passed", results["slurm.accounting"].detail
        assert any(" ".join(argv).endswith("printenv SLURM_JOB_ID") for argv in commands.calls)
