"""playbooks/validate.yml with ClusterD groups, run with ansible-playbook on this machine.

The host of the inventory's ZooKeeper group is this machine (connection local); what
answers on its client port is a TCP stand-in that replies to `srvr` as a standalone
ZooKeeper does, or as a member without quorum ("stand-in" in the names: a real ensemble
runs in the molecule scenario clusterd). Before validate.yml, a play sets
`__addons_progress` on a host as the addons role does at the end of the add-on stage, so
the report's release table is fed through the same variable as in site.yml.

Shown here: validate.yml runs the ClusterD play (clusterd.zookeeper for real against the
stand-in, the master checks skipped without masters), `validate_checks: [clusterd]` is a
known group, a member without quorum fails the check and turns its node red, the member
is a service node with its ZooKeeper mode in the topology, and the report lists the
add-on releases with their action and time, whether the add-on stage ran on a cluster
host or on the controller.
"""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
STANDALONE = "Zookeeper version: 3.8.4\nMode: standalone\nNode count: 5\n"
NO_QUORUM = "This ZooKeeper instance is not currently serving requests\n"
PROGRESS = [
    {"name": "cert_manager", "release": "cert-manager/cert-manager", "chart": "cert-manager-v1.19.1",
     "action": "installed", "seconds": 4.2, "revision": 1},
    {"name": "metrics_server", "release": "kube-system/metrics-server", "chart": "metrics-server-3.13.0",
     "action": "unchanged", "seconds": 1.3, "revision": 2},
]


class _Srvr(socketserver.BaseRequestHandler):
    def handle(self):
        if self.request.recv(16) == b"srvr":
            self.request.sendall(self.server.answer.encode())


@pytest.fixture()
def zookeeper_stand_in():
    srv = socketserver.TCPServer(("127.0.0.1", 0), _Srvr)
    srv.answer = STANDALONE
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _validate(tmp_path: Path, port: int, extra: dict, progress_host: str = "zk1",
              *args: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    python = os.environ.get("PYTHON", "/usr/bin/python3")
    inventory = {"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": python}},
        "children": {"zookeeper": {"hosts": {"zk1": {
            "ansible_connection": "local", "ansible_python_interpreter": python, "clusterdos_node_ip": "127.0.0.1"}}}},
        "vars": {"zookeeper_client_port": port, "validate_report_dir": str(tmp_path / "report"),
                 "validate_cluster_name": "stand-in"}}}
    play = [
        {"name": "What the add-on stage leaves behind (the addons role's progress list)", "hosts": progress_host,
         "gather_facts": False, "tasks": [{"name": "Set the progress", "ansible.builtin.set_fact": {
             "__addons_progress": PROGRESS}}]},
        {"name": "Validate", "ansible.builtin.import_playbook": str(ROOT / "playbooks" / "validate.yml")},
    ]
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(tmp_path / "inventory.yml"),
                           str(tmp_path / "play.yml"), "-e", json.dumps(extra), *args],
                          capture_output=True, text=True, env=env, check=False, cwd=tmp_path, timeout=600)
    doc = json.loads((tmp_path / "report" / "validation.json").read_text()) if (
        tmp_path / "report" / "validation.json").exists() else {}
    html = (tmp_path / "report" / "validation.html").read_text() if doc else ""
    return proc, doc, html


def test_validate_playbook_runs_the_clusterd_checks_against_a_zookeeper_stand_in(tmp_path, zookeeper_stand_in):
    port = zookeeper_stand_in.server_address[1]
    proc, doc, html = _validate(tmp_path, port, {"validate_checks": ["clusterd"], "validate_strict": True})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    checks = {c["name"]: c for c in doc["checks"]}
    assert set(checks) == {"clusterd.zookeeper", "clusterd.leader", "clusterd.agents", "clusterd.execute"}
    assert checks["clusterd.zookeeper"]["status"] == "passed"
    assert checks["clusterd.zookeeper"]["detail"] == "ensemble of 1: zk1 standalone"
    assert checks["clusterd.zookeeper"]["host"] == "zk1"
    for name in ("clusterd.leader", "clusterd.agents", "clusterd.execute"):
        assert checks[name]["status"] == "skipped"
        assert checks[name]["detail"] == "no ClusterD masters or agents in the inventory"
    node = next(n for n in doc["topology"]["nodes"] if n["name"] == "zk1")
    assert node["kind"] == "service" and node["roles"] == ["zookeeper"]
    assert '<g class="node passed" data-node="zk1">' in html
    assert "<title>ZooKeeper standalone</title>" in html
    # The add-on stage's progress, as the addons role leaves it, is the report's release table.
    assert doc["releases"] == PROGRESS
    assert 'data-release="kube-system/metrics-server"' in html
    assert "2 releases in 5.5 s: 1 installed, 1 unchanged" in html
    assert "2 add-on releases listed" in proc.stdout


def test_validate_playbook_fails_a_zookeeper_stand_in_without_quorum(tmp_path, zookeeper_stand_in):
    zookeeper_stand_in.answer = NO_QUORUM
    port = zookeeper_stand_in.server_address[1]
    # The add-on stage ran on the controller this time (addons_hosts=localhost).
    proc, doc, html = _validate(tmp_path, port, {"validate_checks": ["clusterd.zookeeper"], "validate_strict": True},
                                progress_host="localhost")
    # Strict: the play fails, after the report is written, naming the check.
    assert proc.returncode != 0
    assert "validation checks failed: clusterd.zookeeper" in proc.stdout, proc.stdout[-4000:]
    check = next(c for c in doc["checks"] if c["name"] == "clusterd.zookeeper")
    assert check["status"] == "failed"
    assert check["detail"] == "ZooKeeper ensemble not serving as expected: zk1: not serving; no leader (exactly one must lead)"
    assert [c["name"] for c in doc["checks"]] == ["clusterd.zookeeper"]
    assert '<g class="node failed" data-node="zk1">' in html
    assert doc["releases"] == PROGRESS


def test_a_dry_run_reports_failed_checks_without_failing(tmp_path, zookeeper_stand_in):
    """--check (site.yml's dry run on hosts not built yet fails the read-only checks by design):
    strict mode does not fail the run, the summary still counts the failure, and no report
    file is written."""
    zookeeper_stand_in.answer = NO_QUORUM
    port = zookeeper_stand_in.server_address[1]
    proc, doc, _html = _validate(tmp_path, port, {"validate_checks": ["clusterd.zookeeper"], "validate_strict": True},
                                 "localhost", "--check")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    flat = " ".join(proc.stdout.split())
    assert "0 passed, 1 failed, 0 skipped" in flat and "(check mode: failed checks do not fail a dry run" in flat, flat[-3000:]
    assert "validation checks failed" not in proc.stdout and doc == {}
