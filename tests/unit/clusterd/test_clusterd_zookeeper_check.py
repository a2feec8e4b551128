"""The ClusterD validation's ZooKeeper check (clusterd.zookeeper), the notes the ClusterD
checks leave for the report's topology, and the check module's `clusterd` option.

The check's decisions are tested on recorded `srvr` answers (Debian's ZooKeeper 3.8
prints them as below; "recorded" in each name). The script the check runs on the host
(python3 -c) is run for real here against local TCP stand-ins that answer `srvr` as a
leader, a follower and a member without quorum do ("stand-in" in those names). The real
ensemble is in the molecule scenario clusterd, which runs the check through
playbooks/validate.yml and through the ClusterD stage.
"""

from __future__ import annotations

import json
import re
import socket
import socketserver
import subprocess
import sys
import threading
from xml.etree import ElementTree as ET

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import clusterd, report, runner
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import CmdResult, run_checks

LEADER = "Zookeeper version: 3.8.4-${mvngit.commit.id}, built on 2024-03-26 06:00 UTC\nLatency min/avg/max: 0/0.0/0\n" \
         "Received: 12\nSent: 11\nConnections: 1\nOutstanding: 0\nZxid: 0x100000004\nMode: leader\nNode count: 5\n" \
         "Proposal sizes last/min/max: 48/48/48\n"
FOLLOWER = LEADER.replace("Mode: leader", "Mode: follower").replace("Proposal sizes last/min/max: 48/48/48\n", "")
NO_QUORUM = "This ZooKeeper instance is not currently serving requests\n"
NOT_ALLOWED = "srvr is not executed because it is not in the whitelist.\n"
NODES = [
    {"name": "zk1", "address": "10.0.0.1", "roles": ["zookeeper", "clusterd_master"], "gpus": {}},
    {"name": "zk2", "address": "10.0.0.2", "roles": ["zookeeper", "clusterd_master"], "gpus": {}},
    {"name": "zk3", "address": "10.0.0.3", "roles": ["zookeeper", "clusterd_master"], "gpus": {}},
    {"name": "a1", "address": "10.0.0.11", "roles": ["clusterd_agent"], "gpus": {}},
]
STATE = {"leader": "master@10.0.0.2:5050", "leader_info": {"hostname": "zk2"}, "cluster": "clusterdos",
         "version": "1.11.0", "slaves": [{"hostname": "a1", "active": True,
                                          "resources": {"cpus": 2.0, "mem": 1024.0, "gpus": 0.0}}]}


def ok(text):
    return {"ok": True, "text": text}


class Ensemble:
    """Answers the check's argv with recorded srvr answers by address; anything else fails."""

    def __init__(self, answers, rc=0, state=None, port="2181"):
        self.answers, self.rc, self.state, self.port = answers, rc, state or STATE, port
        self.calls = []

    def __call__(self, argv, data=None, timeout=None):
        self.calls.append(list(argv))
        if argv[:3] == ["python3", "-c", clusterd._SRVR]:
            assert argv[3] == self.port
            if self.rc:
                return CmdResult(self.rc, "", "python3: command not found on this host")
            return CmdResult(0, json.dumps({a: self.answers[a] for a in argv[4:] if a in self.answers}), "")
        if argv[:2] == ["python3", "-c"] and argv[3].endswith("/master/state"):
            return CmdResult(0, json.dumps(self.state), "")
        raise AssertionError("unexpected command: %s" % argv)


def run(ensemble, nodes=NODES, names=("clusterd.zookeeper",), ctx_kw=None):
    ctx = clusterd.ClusterdContext(ensemble, nodes, host="zk1", **(ctx_kw or {}))
    return {r.name: r for r in run_checks(clusterd.CHECKS, {"clusterd": ctx}, list(names), [])}


HEALTHY = {"10.0.0.1": ok(FOLLOWER), "10.0.0.2": ok(LEADER), "10.0.0.3": ok(FOLLOWER)}


def test_recorded_ensemble_with_one_leader_passes_and_names_each_mode():
    ensemble = Ensemble(HEALTHY)
    found = run(ensemble)["clusterd.zookeeper"]
    assert found.status == "passed", found.detail
    assert found.detail == "ensemble of 3: zk1 follower, zk2 leader, zk3 follower"
    assert found.data["zookeeper"] == {"zk1": "follower", "zk2": "leader", "zk3": "follower"}
    assert found.data["node_notes"]["zk2"] == "ZooKeeper leader"
    # One call from the check host asks every member on its cluster address.
    assert ensemble.calls == [["python3", "-c", clusterd._SRVR, "2181", "10.0.0.1", "10.0.0.2", "10.0.0.3"]]


def test_recorded_single_member_standalone_passes():
    nodes = [dict(NODES[0])]
    found = run(Ensemble({"10.0.0.1": ok(LEADER.replace("Mode: leader", "Mode: standalone"))}), nodes)
    assert found["clusterd.zookeeper"].status == "passed"
    assert found["clusterd.zookeeper"].detail == "ensemble of 1: zk1 standalone"


@pytest.mark.parametrize(("answers", "expected"), [
    ({"10.0.0.2": {"ok": False, "text": "[Errno 111] Connection refused"}},
     ["zk2: no answer on 10.0.0.2:2181 ([Errno 111] Connection refused)", "no leader (exactly one must lead)"]),
    ({"10.0.0.1": ok(NO_QUORUM), "10.0.0.2": ok(NO_QUORUM), "10.0.0.3": {"ok": False, "text": "timed out"}},
     ["zk1: not serving", "zk2: not serving", "zk3: no answer on 10.0.0.3:2181 (timed out)", "no leader"]),
    ({"10.0.0.1": ok(LEADER)}, ["zk1, zk2 leaders (exactly one must lead)"]),
    ({"10.0.0.1": ok(LEADER.replace("Mode: leader", "Mode: standalone"))},
     ["zk1 runs standalone in an ensemble of 3", "zk1, zk2 leaders"]),
    ({"10.0.0.3": ok(NOT_ALLOWED)}, ["zk3: srvr not allowed (4lw.commands.whitelist)"]),
])
def test_recorded_broken_ensemble_fails_naming_the_member(answers, expected):
    found = run(Ensemble(dict(HEALTHY, **answers)))["clusterd.zookeeper"]
    assert found.status == "failed"
    assert found.detail.startswith("ZooKeeper ensemble not serving as expected: ")
    for text in expected:
        assert text in found.detail, found.detail


def test_recorded_check_host_without_python_fails_with_the_reason():
    found = run(Ensemble(HEALTHY, rc=127))["clusterd.zookeeper"]
    assert found.status == "failed"
    assert "could not ask the ZooKeeper members from this host: python3: command not found" in found.detail


def test_skipped_without_zookeeper_members():
    ensemble = Ensemble(HEALTHY)
    found = run(ensemble, [n for n in NODES if "zookeeper" not in n["roles"]])["clusterd.zookeeper"]
    assert found.status == "skipped" and "no ZooKeeper members in the inventory (group zookeeper)" == found.detail
    assert ensemble.calls == []


def test_module_option_names_the_groups_and_ports():
    """The module's clusterd option (the validate role passes its group parameters)."""
    nodes = [dict(n, roles=[{"zookeeper": "zk", "clusterd_master": "mesos_masters", "clusterd_agent": "gpu_agents"}[r]
                            for r in n["roles"]]) for n in NODES]
    params = {k: v.get("default") for k, v in runner.argument_spec().items()}
    params.update(nodes=nodes, host="zk1", clusterd={
        "master_group": "mesos_masters", "agent_group": "gpu_agents", "zookeeper_group": "zk", "master_port": 5051,
        "zookeeper_port": 2281, "execute_resources": "cpus:0.5;mem:64"})
    ctx = runner.contexts(params, Ensemble(HEALTHY, port="2281"))["clusterd"]
    assert ([n["name"] for n in ctx.zookeeper], [n["name"] for n in ctx.masters], [n["name"] for n in ctx.agents]) == (
        ["zk1", "zk2", "zk3"], ["zk1", "zk2", "zk3"], ["a1"])
    assert (ctx.port, ctx.zookeeper_port, ctx.execute_resources) == (5051, 2281, "cpus:0.5;mem:64")
    assert clusterd.check_zookeeper(ctx).detail.startswith("ensemble of 3")
    # Without the option (the spec's defaults) the collection's default group names apply.
    params.update(nodes=NODES, clusterd=None)
    ctx = runner.contexts(params, Ensemble(HEALTHY))["clusterd"]
    assert (len(ctx.zookeeper), ctx.port, ctx.zookeeper_port) == (3, 5050, 2181)


def test_recorded_leader_and_agents_leave_notes_for_the_topology():
    found = run(Ensemble(HEALTHY), names=["clusterd"])
    assert found["clusterd.leader"].data["leader"] == "zk2"
    assert found["clusterd.leader"].data["node_notes"] == {"zk1": "ClusterD master", "zk2": "ClusterD master (leading)",
                                                          "zk3": "ClusterD master"}
    assert found["clusterd.agents"].data["node_notes"] == {"a1": "ClusterD agent: 2 cpus, 1024 MB"}


def test_recorded_leader_found_by_its_address_when_hostname_differs():
    state = dict(STATE, leader_info={"hostname": "zk3.example.org"})
    found = run(Ensemble(HEALTHY, state=state), names=["clusterd.leader"])["clusterd.leader"]
    assert found.data["leader"] == "zk2"


def _topology(results):
    svg = re.search(r"<svg.*?</svg>", report.to_html(results, {"cluster": "lab", "nodes": [
        {"name": "zk1", "kind": "service", "address": "10.0.0.1", "roles": ["zookeeper", "clusterd_master"]},
        {"name": "zk2", "kind": "service", "address": "10.0.0.2", "roles": ["zookeeper", "clusterd_master"]},
        {"name": "zk3", "kind": "service", "address": "10.0.0.3", "roles": ["zookeeper", "clusterd_master"]},
        {"name": "a1", "kind": "worker", "address": "10.0.0.11", "roles": ["clusterd_agent"]},
    ]}, {"cluster": "lab", "generated": "2026-12-01T08:00:00Z"}), re.S).group(0)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    return {g.get("data-node"): {"class": g.get("class"), "notes": [t.find(ns + "title").text for t in g.iter(ns + "text")
                                                                   if t.get("class") == "note"],
                                 "height": int(g.find(ns + "rect").get("height"))}
            for g in root.iter(ns + "g")}


def test_recorded_results_draw_roles_in_the_topology():
    results = [r.as_dict() for r in run(Ensemble(HEALTHY), names=["clusterd"]).values()]
    nodes = _topology(results)
    assert nodes["zk2"]["notes"] == ["ClusterD master (leading)", "ZooKeeper leader"]
    assert nodes["zk1"]["notes"] == ["ClusterD master", "ZooKeeper follower"]
    assert nodes["a1"]["notes"] == ["ClusterD agent: 2 cpus, 1024 MB"]
    assert {n["class"] for n in nodes.values()} == {"node passed"}
    # Every box grows by the most notes any node has (two lines here).
    assert {n["height"] for n in nodes.values()} == {96 + 2 * 13}


def test_recorded_failed_zookeeper_check_turns_the_member_red_and_leaves_no_notes():
    results = [r.as_dict() for r in run(Ensemble(dict(HEALTHY, **{"10.0.0.3": {"ok": False, "text": "timed out"}}))).values()]
    nodes = _topology(results)
    assert nodes["zk3"]["class"] == "node failed"
    assert nodes["zk1"]["notes"] == [] and nodes["zk1"]["height"] == 96


# ----------------------------------------------------------- the check's script, for real
class _Srvr(socketserver.BaseRequestHandler):
    def handle(self):
        if self.request.recv(16) == b"srvr":
            self.request.sendall(self.server.answer.encode())


def _serve(answer):
    srv = socketserver.TCPServer(("127.0.0.1", 0), _Srvr)
    srv.answer = answer
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_script_asks_stand_in_members_over_tcp():
    """The script on three local stand-ins (one port each: a member's address is 127.0.0.1:PORT
    here, so each is asked alone) and on a closed port."""
    servers = [_serve(LEADER), _serve(FOLLOWER), _serve(NO_QUORUM)]
    try:
        modes = []
        for srv in servers:
            res = subprocess.run([sys.executable, "-c", clusterd._SRVR, str(srv.server_address[1]), "127.0.0.1"],
                                 capture_output=True, text=True, timeout=60, check=True)
            answer = json.loads(res.stdout)["127.0.0.1"]
            assert answer["ok"]
            modes.append(clusterd.zookeeper_mode(answer["text"]))
        assert modes == ["leader", "follower", "not serving"]
    finally:
        for srv in servers:
            srv.shutdown()
            srv.server_close()
    closed = subprocess.run([sys.executable, "-c", clusterd._SRVR, str(_free_port()), "127.0.0.1"],
                            capture_output=True, text=True, timeout=60, check=True)
    answer = json.loads(closed.stdout)["127.0.0.1"]
    assert not answer["ok"] and "refused" in answer["text"].lower()
