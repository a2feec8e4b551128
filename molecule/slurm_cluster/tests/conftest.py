"""slurm_cluster's tests run on two labs side by side: two scenarios with the same four hosts
(molecule/slurm_cluster and molecule/slurm_cluster_2, whose verifier reads this directory).

slurm_cluster runs the tests before SECOND_PART_FROM; slurm_cluster_2 runs the first
BASICS_IN_BOTH (daemons, munge, real jobs in sacct: the later tests build on those jobs)
and then the tests from SECOND_PART_FROM on, in file order as always. The whole suite took
3243 s on one lab in the whole .ci/run of 2026-12-06, the run's critical path. The first
part is the larger, about three fifths with its dry run and idempotence step: the second
ends first and its lane then runs the heavy scenarios, which never run side by side, while
the first goes on (docs/testing.md, "Two labs for slurm_cluster").
Run by hand with pytest outside molecule (no MOLECULE_SCENARIO_NAME), every test runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parents[1]
FIRST = "slurm_cluster"
SECOND = "slurm_cluster_2"
BASICS_IN_BOTH = 6
SECOND_PART_FROM = "test_a_daemon_that_stops_at_once_fails_the_run_at_once_with_its_own_error"


def _platforms(scenario: Path) -> list:
    return yaml.safe_load((scenario / "molecule.yml").read_text())["platforms"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scenario = os.environ.get("MOLECULE_SCENARIO_NAME")
    if scenario is None:
        return
    if scenario not in (FIRST, SECOND):
        raise pytest.UsageError(f"{HERE / 'tests'} runs in the scenarios {FIRST} and {SECOND}, not {scenario}")
    running = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
    if _platforms(running) != _platforms(HERE):
        raise pytest.UsageError(f"{running}/molecule.yml must list the same platforms as {HERE}/molecule.yml: "
                                "the tests read the hosts and groups from the latter")
    names = [item.originalname for item in items if isinstance(item, pytest.Function)]
    if SECOND_PART_FROM not in names:
        raise pytest.UsageError(f"{SECOND_PART_FROM}, where {SECOND}'s part begins, is not a test here any more")
    split = names.index(SECOND_PART_FROM)
    keep = set(names[:split]) if scenario == FIRST else set(names[:BASICS_IN_BOTH] + names[split:])
    selected = [item for item in items if getattr(item, "originalname", None) in keep]
    deselected = [item for item in items if item not in selected]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected
