"""playbooks/add_node.yml refuses a missing or unknown node name on the controller,
before any host is contacted. Runs the real playbook; the inventory's hosts sit on a
documentation address (TEST-NET-1), so any attempt to reach one would show as UNREACHABLE.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from .conftest import ROOT, inventory, run_playbook

ADD_NODE = ROOT / "playbooks" / "add_node.yml"
NOT_IN_INVENTORY = "Run with -e node=NAME, NAME a host already added to the inventory"
# case: (extra arguments, the refusal expected). An empty name and a list or pattern are
# refused already by preflight.yml's shared check of `node`; the rest by add_node.yml's own check.
CASES = {
    "no-node": ([], f"{NOT_IN_INVENTORY} (got '')"),
    "empty-name": (["-e", "node="], "node must be one inventory host name (e.g. gpu07)"),
    "unknown-name": (["-e", "node=gpu9"], f"{NOT_IN_INVENTORY} (got 'gpu9')"),
    "two-names": (["-e", "node=gpu1,gpu2"], "take one node per run, got 'gpu1,gpu2'"),
    "a-group-name": (["-e", "node=kube_node"], f"{NOT_IN_INVENTORY} (got 'kube_node')"),
}


def _unreachable_inventory() -> dict:
    inv = inventory(control_planes=1, workers=2)
    for group in ("kube_control_plane", "kube_node"):
        for name, hostvars in inv["all"]["children"][group]["hosts"].items():
            hostvars["ansible_host"] = "192.0.2." + hostvars["clusterdos_node_ip"].rsplit(".", 1)[1]
    return inv


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(run_playbook, ADD_NODE, _unreachable_inventory(), tmp_path_factory.mktemp(name), *args)
                   for name, (args, _) in CASES.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_node_request_refused_on_the_controller(results, case):
    run = results[case]
    assert run.returncode != 0
    assert CASES[case][1] in run.stdout, run.stdout[-3000:]
    assert "PLAY [Add node - base on the new node]" not in run.stdout
    assert "UNREACHABLE" not in run.stdout
    # Kubernetes hosts may appear in the recap: the Kubernetes preflight's artifact checks
    # run in their names with every task delegated to the controller. None was reached
    # (their addresses are TEST-NET-1: a connection would be UNREACHABLE) or changed.
    recap = [ln for ln in run.stdout.splitlines() if "ok=" in ln]
    assert "localhost" in [ln.split()[0] for ln in recap], recap
    for line in recap:
        assert "changed=0" in line and "unreachable=0" in line, line
