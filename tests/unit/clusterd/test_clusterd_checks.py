"""The ClusterD validation checks (plugins/module_utils/validate/clusterd.py) on a stand-in
master: no ClusterD package is obtainable on this machine, so the master's /master/state
is a hand-written fixture in the shape Mesos documents (fixtures/master_state.json) and
mesos-execute's output is recorded text. Each test name says "recorded". The molecule
scenario clusterd runs the same checks against real daemons when ../shared/clusterd
holds packages."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import clusterd, runner
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import CmdResult, run_checks

STATE = json.loads((Path(__file__).parent / "fixtures" / "master_state.json").read_text())
ZK = "zk://10.0.0.1:2181,10.0.0.2:2181,10.0.0.3:2181/mesos"
NODES = [
    {"name": "zk1", "address": "10.0.0.1", "roles": ["zookeeper", "clusterd_master"], "gpus": {}},
    {"name": "a1", "address": "10.0.0.11", "roles": ["clusterd_agent"], "gpus": {}},
    {"name": "g1", "address": "10.0.0.12", "roles": ["clusterd_agent", "gpu_nvidia"], "gpus": {"nvidia.com/gpu": 8}},
]
EXECUTE_OK = "I1201 Subscribed with ID x\nSubmitted task 'clusterdos-validate' to agent 'a-S0'\n" \
             "Received status update TASK_RUNNING for task 'clusterdos-validate'\n" \
             "Received status update TASK_FINISHED for task 'clusterdos-validate'\n"


class Master:
    """Answers exactly the argv the checks send; anything else fails the test."""

    def __init__(self, state=None, state_rc=0, execute=(0, EXECUTE_OK), zk=ZK):
        self.state = STATE if state is None else state
        self.state_rc = state_rc
        self.execute = execute
        self.zk = zk
        self.calls: list[list[str]] = []

    def __call__(self, argv, data=None, timeout=None):
        self.calls.append(list(argv))
        if argv[:3] == ["python3", "-c", clusterd._SRVR]:
            assert argv[3:] == ["2181", "10.0.0.1"]
            return CmdResult(0, json.dumps({"10.0.0.1": {"ok": True, "text": "Zookeeper version: 3.8.4\nMode: standalone\n"}}), "")
        if argv[:2] == ["python3", "-c"]:
            assert argv[3] == "http://10.0.0.1:5050/master/state"
            if self.state_rc:
                return CmdResult(self.state_rc, "", "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>")
            return CmdResult(0, json.dumps(self.state), "")
        if argv == ["cat", "/etc/mesos/zk"]:
            return CmdResult(0, self.zk + "\n", "")
        if argv[0] == "mesos-execute":
            assert argv == ["mesos-execute", "--master=" + ZK, "--name=clusterdos-validate",
                            "--command=echo clusterdos-validate", "--resources=cpus:0.1;mem:32"]
            return CmdResult(self.execute[0], self.execute[1], "")
        raise AssertionError("unexpected command: %s" % argv)


def results(master, nodes=NODES, check_mode=False):
    ctx = clusterd.ClusterdContext(master, nodes, host="zk1")
    return {r.name: r for r in run_checks(clusterd.CHECKS, {"clusterd": ctx}, ["clusterd"], [], check_mode=check_mode)}


def test_recorded_healthy_master_passes_every_check():
    found = results(Master())
    assert {n: r.status for n, r in found.items()} == {"clusterd.zookeeper": "passed", "clusterd.leader": "passed",
                                                       "clusterd.agents": "passed", "clusterd.execute": "passed"}
    assert "leader zk1" in found["clusterd.leader"].detail
    assert found["clusterd.agents"].data["agents"]["g1"]["gpus"] == 8


def test_recorded_state_without_leader_fails():
    state = dict(STATE, leader="")
    assert results(Master(state=state))["clusterd.leader"].status == "failed"


def test_recorded_master_not_answering_fails_with_the_reason():
    found = results(Master(state_rc=1))
    assert found["clusterd.leader"].status == "failed"
    assert "Connection refused" in found["clusterd.leader"].detail


@pytest.mark.parametrize(("patch", "expected"), [
    (lambda s: s["slaves"].pop(0), "a1: not registered"),
    (lambda s: s["slaves"][0].update(active=False), "a1: registered but not active"),
    (lambda s: s["slaves"][1]["resources"].update(gpus=4.0), "g1: offers 4 GPUs, the inventory expects 8"),
    (lambda s: s["slaves"][0]["resources"].update(gpus=1.0), "a1: offers 1 GPU, the inventory expects 0"),
    (lambda s: s["slaves"][0]["resources"].pop("mem"), "a1: offers no mem"),
])
def test_recorded_agent_problems_are_named(patch, expected):
    state = copy.deepcopy(STATE)
    patch(state)
    found = results(Master(state=state))["clusterd.agents"]
    assert found.status == "failed" and expected in found.detail, found.detail


def test_recorded_failed_task_fails_execute():
    out = "Received status update TASK_FAILED for task 'clusterdos-validate'\n"
    found = results(Master(execute=(1, out)))["clusterd.execute"]
    assert found.status == "failed" and "TASK_FAILED" in found.detail


def test_execute_not_run_in_check_mode():
    master = Master()
    assert results(master, check_mode=True)["clusterd.execute"].status == "skipped"
    assert not any(c[0] == "mesos-execute" for c in master.calls)


def test_checks_skip_without_clusterd_hosts():
    master = Master()
    found = results(master, nodes=[{"name": "zk1", "address": "10.0.0.1", "roles": ["slurm_controller"]}])
    assert {r.status for r in found.values()} == {"skipped"}
    assert master.calls == []


def test_registered_in_the_modules_registry():
    names = [c.name for c in runner.CHECKS]
    assert {"clusterd.zookeeper", "clusterd.leader", "clusterd.agents", "clusterd.execute"} <= set(names)
    assert "clusterd" in runner.contexts({**{k: v.get("default") for k, v in runner.argument_spec().items()},
                                          "nodes": NODES, "host": "zk1"}, Master())
