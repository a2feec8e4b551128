"""The bad-inventory suite (tests/playbooks/bad_inventories) can pass and can fail.

The suite itself runs as its own stage of scripts/test-all.sh (tests/playbooks/bad_inventories/run.py
prints how many kinds are refused before any host is contacted). Here: the good
inventories pass the preflight without contacting a host, and the runner tells a refusal
from a run that reaches the hosts.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "tests" / "playbooks" / "bad_inventories"
_SPEC = importlib.util.spec_from_file_location("bad_inventories_run", SUITE / "run.py")
run = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(run)

GOOD = sorted((SUITE / "_good").iterdir())


def test_suite_covers_many_kinds():
    kinds = run.kinds()
    assert len(kinds) >= 30
    for kind in kinds:
        assert (kind / "expect.txt").read_text().strip(), f"{kind.name}: expect.txt names no message"


@pytest.mark.parametrize("inventory", GOOD, ids=[p.name for p in GOOD])
def test_good_inventory_passes_the_preflight_without_contacting_hosts(inventory):
    result = run.run_kind(inventory, ROOT, playbook="preflight.yml")
    assert result["rc"] == 0, result["output"][-3000:]
    assert not result["contacted"]


def test_runner_reports_a_run_that_reaches_the_hosts():
    # A good inventory passes the preflight, so site.yml goes on to contact its hosts
    # (nothing listens on their address): the runner must call that LATE, not REFUSED.
    result = run.run_kind(SUITE / "_good" / "good_slurm_only", ROOT)
    assert result["verdict"] == "LATE", result["output"][-3000:]


@pytest.mark.parametrize("playbook", ["kubernetes_add_node.yml", "remove_node.yml", "kubernetes.yml", "base.yml"])
def test_an_entry_playbook_alone_refuses_hosts_without_an_address_before_contacting_them(playbook):
    # The suite runs site.yml; these entry points import the same preflight, and a site
    # adding or removing a node runs them alone (docs/lifecycle.md).
    result = run.run_kind(SUITE / "node_address_missing", ROOT, playbook=playbook)
    assert result["verdict"] == "REFUSED", (result["verdict"], result["missing"], result["output"][-3000:])
