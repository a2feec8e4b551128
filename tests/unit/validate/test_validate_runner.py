"""The runner: selection, skip, unknown names, check mode, durations and errors."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import runner
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    CheckFailed,
    CheckSkipped,
    Outcome,
    run_checks,
    select,
)


def _ok(ctx):
    ctx.append("ok")
    return "fine"


def _bad(ctx):
    raise CheckFailed("broken: because")


def _na(ctx):
    raise CheckSkipped("does not apply")


def _bug(ctx):
    return {}["missing"]


def _measured(ctx):
    return Outcome("measured", {"value": 3})


CHECKS = [
    Check("alpha.ok", "ok", _ok),
    Check("alpha.bad", "bad", _bad),
    Check("alpha.na", "na", _na),
    Check("beta.bug", "bug", _bug),
    Check("beta.measured", "measured", _measured),
    Check("beta.mutates", "mutates", _ok, mutates=True),
    Check("beta.optin", "opt-in", _ok, default=False),
]


def _clock():
    ticks = itertools.count(0, 0.25)
    return lambda: next(ticks)


def _run(selected, skipped=(), check_mode=False):
    calls = []
    results = run_checks(CHECKS, {"alpha": calls, "beta": calls}, list(selected), list(skipped),
                         check_mode=check_mode, host="h1", clock=_clock())
    return {r.name: r for r in results}, calls


def test_all_runs_defaults_and_reports_each_outcome():
    results, calls = _run(["all"])
    assert {n: r.status for n, r in results.items()} == {
        "alpha.ok": "passed", "alpha.bad": "failed", "alpha.na": "skipped", "beta.bug": "failed",
        "beta.measured": "passed", "beta.mutates": "passed"}
    assert results["alpha.bad"].detail == "broken: because"
    assert results["alpha.na"].detail == "does not apply"
    assert results["beta.measured"].data == {"value": 3}
    assert calls == ["ok", "ok"]


def test_a_check_bug_is_a_failed_check_not_a_traceback():
    results = _run(["beta.bug"])[0]
    assert results["beta.bug"].status == "failed"
    assert results["beta.bug"].detail == "internal error in beta.bug: KeyError: 'missing'"


def test_durations_come_from_the_clock():
    results = _run(["alpha.ok", "alpha.bad"])[0]
    assert results["alpha.ok"].duration == 0.25
    assert results["alpha.bad"].duration == 0.25


def test_opt_in_checks_run_only_when_named():
    assert "beta.optin" not in _run(["beta"])[0]
    assert _run(["beta.optin"])[0]["beta.optin"].status == "passed"


def test_skip_by_group_and_name():
    results, calls = _run(["all"], skipped=["alpha", "beta.mutates"])
    assert {n for n, r in results.items() if r.detail == "skipped on request"} == {
        "alpha.ok", "alpha.bad", "alpha.na", "beta.mutates"}
    assert calls == []


def test_unknown_names_are_failed_checks_with_the_known_names():
    results = _run(["alpha.ok", "gamma"], skipped=["alpha.nope"])[0]
    assert results["gamma"].status == "failed" and results["gamma"].group == "selection"
    assert results["gamma"].detail.startswith("unknown check 'gamma': use 'all', a group (alpha, beta)")
    assert "beta.optin" in results["gamma"].detail
    assert results["alpha.nope"].status == "failed"
    assert results["alpha.ok"].status == "passed"


def test_check_mode_skips_checks_that_create_things():
    results = _run(["beta.mutates", "alpha.ok"], check_mode=True)[0]
    assert results["beta.mutates"].status == "skipped"
    assert "check mode" in results["beta.mutates"].detail
    assert results["alpha.ok"].status == "passed"


def test_select_keeps_registry_order_and_dedupes():
    run, skipped, unknown = select(CHECKS, ["beta.measured", "beta", "alpha.ok"], [])
    assert [c.name for c in run] == ["beta.measured", "beta.bug", "beta.mutates", "alpha.ok"]
    assert skipped == [] and unknown == []


def test_every_registered_check_name_is_unique_and_grouped():
    names = [c.name for c in runner.CHECKS]
    assert len(names) == len(set(names))
    assert {c.group for c in runner.CHECKS} == {"kubernetes", "slurm", "hardware", "clusterd"}


@pytest.mark.parametrize("group", ["kubernetes", "slurm", "hardware"])
def test_module_contexts_exist_for_each_group(group):
    params = {k: v.get("default") for k, v in runner.argument_spec().items()}
    assert group in runner.contexts(params, run=lambda argv, data=None, timeout=None: None)


def test_an_empty_selection_runs_nothing():
    assert not _run([])[0]
