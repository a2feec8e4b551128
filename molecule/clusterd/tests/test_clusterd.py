"""Verify the ClusterD stage on real lab hosts: a ZooKeeper ensemble of three that elects a
leader, survives the leader's loss with its data and takes the old leader back; Redis for
the frameworks (password, reachable over the cluster network); playbooks/validate.yml
with `validate_checks: [clusterd]` (the ZooKeeper check for real, its report and
topology; a stopped member named by the check); and, when ../shared/clusterd holds
ClusterD packages, the masters' leader election, the agent's registration and a
mesos-execute task, also through validate.yml's ClusterD checks.

Tests run in file order and build on each other only where said. Expectations come from
the scenario (host names and groups in molecule.yml), never from files the roles wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]
LAB = "mol-" + SCENARIO.name.replace("_", "-")
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")
MOLECULE = yaml.safe_load((SCENARIO / "molecule.yml").read_text())
GROUPS = {p["name"]: p["groups"] for p in MOLECULE["platforms"]}
ZK = sorted(n for n, g in GROUPS.items() if "zookeeper" in g)
FW = next(n for n, g in GROUPS.items() if "clusterd_frameworks" in g)
VARS = MOLECULE["provisioner"]["inventory"]["group_vars"]["all"]
REDIS_PASSWORD = VARS["clusterd_frameworks_redis_password"]
PACKAGES = Path(os.path.expandvars(VARS["clusterd_packages_dir"].replace("${MOLECULE_PROJECT_DIRECTORY}", str(ROOT))))
DEBS = sorted(PACKAGES.glob("*.deb")) if PACKAGES.is_dir() else []
NO_PACKAGES = (f"ClusterD packages not available offline: {PACKAGES} holds no .deb (aventer-mesos is in no registry "
               "reachable here), so the mesos daemons are not run; no mesos binary is faked")

testinfra_hosts = [f"ansible://{FW}"]

EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))

FOUR_LETTER = ("import socket,sys;s=socket.create_connection((sys.argv[1],int(sys.argv[2])),5);"
               "s.sendall(sys.argv[3].encode());print(b''.join(iter(lambda: s.recv(4096), b'')).decode())")


def lab_inventory() -> str:
    return subprocess.run([LAB_CLI, "inventory", "--name", LAB], check=True, capture_output=True, text=True).stdout.strip()


_HOSTS: dict = {}


def lab_host(name: str):
    if name not in _HOSTS:
        _HOSTS[name] = testinfra.get_host(f"ansible://{name}", ansible_inventory=lab_inventory())
    return _HOSTS[name]


def address(name: str) -> str:
    """The host's cluster address, from the lab's inventory."""
    inv = yaml.safe_load(Path(lab_inventory()).read_text())
    return inv["all"]["hosts"][name]["ansible_host"]


def four_letter(host: str, command: str, target: str = "127.0.0.1") -> str:
    res = lab_host(host).run(f"python3 -c \"{FOUR_LETTER}\" {target} 2181 {command}")
    return res.stdout if res.rc == 0 else ""


def mode(host: str) -> str:
    for line in four_letter(host, "srvr").splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return "down"


def wait_for(probe, what: str, tries: int = 60, delay: float = 2.0):
    """Poll until probe() returns a truthy value (a bound on waiting, not a timed assertion)."""
    for _ in range(tries):
        value = probe()
        if value:
            return value
        time.sleep(delay)
    pytest.fail(f"gave up waiting for {what}")


def zk_cli(host: str, *args: str) -> str:
    cmd = "/usr/share/zookeeper/bin/zkCli.sh -server 127.0.0.1:2181 " + " ".join(args)
    res = lab_host(host).run(cmd)
    assert res.rc == 0, res.stderr[-2000:]
    return res.stdout


def test_ensemble_has_one_leader_and_two_followers():
    modes = {h: mode(h) for h in ZK}
    assert sorted(modes.values()) == ["follower", "follower", "leader"], modes


def test_each_member_runs_with_its_own_id_and_purges_snapshots():
    ids = set()
    for h in ZK:
        conf = dict(line.split("=", 1) for line in four_letter(h, "conf").splitlines() if "=" in line)
        ids.add(conf.get("serverId"))
        assert conf.get("clientPort") == "2181", conf
        assert lab_host(h).service("zookeeper").is_enabled, h
    assert ids == {"1", "2", "3"}, ids
    cfg = lab_host(ZK[0]).file("/etc/zookeeper/conf/zoo.cfg").content_string
    assert "autopurge.purgeInterval=1" in cfg and "autopurge.snapRetainCount=3" in cfg


def clusterd_groups(tmp_path: Path) -> list:
    """Inventories: molecule's (hosts and the scenario's variables) and, when converge made
    zk1-3 masters and fw1 the agent (packages present), those groups too."""
    inventories = [EPHEMERAL / "inventory"]
    if DEBS:
        extra = tmp_path / "clusterd_groups.yml"
        extra.write_text(yaml.safe_dump({"all": {"children": {
            "clusterd_master": {"hosts": {h: {} for h in ZK}}, "clusterd_agent": {"hosts": {FW: {}}}}}}))
        inventories.append(extra)
    return inventories


def zookeeper_check(target: str) -> dict:
    """The ZooKeeper check of the cluster_validate module, run by ansible on TARGET with the
    ensemble as the inventory describes it (the role's clusterd option left at its defaults)."""
    nodes = [{"name": h, "address": address(h), "roles": ["zookeeper"], "kind": "service"} for h in ZK]
    env = lab_playbook.environment({"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json",
                                    "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"})
    res = subprocess.run(["ansible", target, "-i", str(EPHEMERAL / "inventory"), "-m", "clusterdos.cluster.cluster_validate",
                          "-a", json.dumps({"checks": ["clusterd.zookeeper"], "nodes": nodes, "host": target,
                                            "timeout": 30})],
                         capture_output=True, text=True, env=env, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    checks = json.loads(res.stdout)["plays"][0]["tasks"][0]["hosts"][target]["checks"]
    return next(c for c in checks if c["name"] == "clusterd.zookeeper")


def test_leader_loss_elects_a_new_leader_and_keeps_data():
    value = f"kept-{uuid.uuid4().hex[:8]}"
    leader = next(h for h in ZK if mode(h) == "leader")
    follower = next(h for h in ZK if h != leader)
    zk_cli(follower, "create", "/clusterdos-failover", value)
    lab_host(leader).run_expect([0], "systemctl stop zookeeper")
    try:
        rest = [h for h in ZK if h != leader]
        new_leader = wait_for(lambda: next((h for h in rest if mode(h) == "leader"), None), "a new leader", tries=45)
        assert new_leader != leader
        assert sorted(mode(h) for h in rest) == ["follower", "leader"]
        assert value in zk_cli(new_leader, "get", "/clusterdos-failover")
        # The validation's ZooKeeper check names the stopped member (the two others still serve).
        check = zookeeper_check(new_leader)
        assert check["status"] == "failed", check
        assert f"{leader}: no answer on {address(leader)}:2181" in check["detail"], check["detail"]
        assert "no leader" not in check["detail"] and "leaders" not in check["detail"], check["detail"]
    finally:
        lab_host(leader).run_expect([0], "systemctl start zookeeper")
    wait_for(lambda: mode(leader) == "follower", f"{leader} to rejoin as a follower", tries=45)
    assert value in zk_cli(leader, "get", "/clusterdos-failover")
    zk_cli(leader, "delete", "/clusterdos-failover")


def test_redis_runs_with_its_password(host):
    assert host.service("redis-server").is_running and host.service("redis-server").is_enabled
    assert host.run(f"redis-cli -a '{REDIS_PASSWORD}' --no-auth-warning ping").stdout.strip() == "PONG"
    denied = host.run("redis-cli ping")
    assert "NOAUTH" in denied.stdout + denied.stderr
    host.run_expect([0], f"redis-cli -a '{REDIS_PASSWORD}' --no-auth-warning set clusterdos-check ok")
    dropin = host.file("/etc/redis/clusterdos.conf")
    assert (dropin.mode, dropin.group) == (0o640, "redis")


def test_redis_answers_other_hosts_on_the_cluster_network():
    """A framework on another host reaches Redis at fw1's cluster address (inline RESP commands)."""
    target = address(FW)
    script = ("import socket,sys;s=socket.create_connection((sys.argv[1],6379),5);"
              "s.sendall(('AUTH '+sys.argv[2]+'\\r\\nGET clusterdos-check\\r\\n').encode());"
              "import time;time.sleep(0.5);print(s.recv(4096).decode())")
    out = lab_host(ZK[0]).check_output(f"python3 -c \"{script}\" {target} '{REDIS_PASSWORD}'")
    assert "+OK" in out and "ok" in out.split("+OK", 1)[1], out


def test_validate_playbook_runs_the_clusterd_checks(tmp_path):
    """playbooks/validate.yml with validate_checks [clusterd], strict: the ZooKeeper check for
    real on the ensemble; without packages the master checks are skipped with the reason
    (no masters or agents in the inventory), with packages they pass. The report draws
    the members as service nodes with their ZooKeeper mode."""
    report = tmp_path / "report"
    res = lab_playbook.run("validate.yml", "-e", json.dumps({"validate_checks": ["clusterd"], "validate_strict": True,
                                                            "validate_report_dir": str(report)}),
                           inventories=clusterd_groups(tmp_path), timeout=900)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    doc = json.loads((report / "validation.json").read_text())
    checks = {c["name"]: c for c in doc["checks"]}
    assert set(checks) == {"clusterd.zookeeper", "clusterd.leader", "clusterd.agents", "clusterd.execute"}
    zk = checks["clusterd.zookeeper"]
    assert zk["status"] == "passed" and zk["host"] == ZK[0], zk
    # The modes the check saw are the members' own (srvr asked here, afterwards).
    assert zk["data"]["zookeeper"] == {h: mode(h) for h in ZK}
    assert sorted(zk["data"]["zookeeper"].values()) == ["follower", "follower", "leader"]
    for name in ("clusterd.leader", "clusterd.agents", "clusterd.execute"):
        if DEBS:
            assert checks[name]["status"] == "passed", checks[name]
        else:
            assert checks[name]["status"] == "skipped", checks[name]
            assert checks[name]["detail"] == "no ClusterD masters or agents in the inventory"
    kinds = {n["name"]: n["kind"] for n in doc["topology"]["nodes"]}
    # Members of the ZooKeeper, master and frameworks groups are service nodes.
    assert kinds == {h: "service" for h in ZK} | {FW: "service"}
    html = (report / "validation.html").read_text()
    for h in ZK:
        assert f'<g class="node passed" data-node="{h}">' in html
        assert f"<title>ZooKeeper {zk['data']['zookeeper'][h]}</title>" in html


# --------------------------------------------------------------------------- ClusterD daemons
clusterd = pytest.mark.skipif(not DEBS, reason=NO_PACKAGES)


def master_state() -> dict:
    script = ("import sys,urllib.request;print(urllib.request.urlopen(sys.argv[1],timeout=20).read().decode())")
    out = lab_host(ZK[0]).check_output(f"python3 -c \"{script}\" http://{address(ZK[0])}:5050/master/state")
    return json.loads(out)


@clusterd
def test_clusterd_masters_elect_a_leader_through_zookeeper():
    state = master_state()
    assert state.get("leader"), state.get("leader")
    assert state.get("cluster") == "clusterdos"
    for h in ZK:
        assert lab_host(h).service("mesos-master").is_running, h
        assert lab_host(h).file("/etc/mesos-master/quorum").content_string.strip() == "2"


@clusterd
def test_clusterd_agent_registers_with_its_resources():
    agents = {a["hostname"]: a for a in master_state().get("slaves", [])}
    assert FW in agents, list(agents)
    assert agents[FW]["active"]
    assert agents[FW]["resources"]["cpus"] == VARS["clusterd_agent_resources"]["cpus"]
    assert agents[FW]["resources"].get("gpus", 0) == 0


@clusterd
def test_clusterd_mesos_execute_task_finishes():
    zk = lab_host(ZK[0]).file("/etc/mesos/zk").content_string.strip()
    res = lab_host(ZK[0]).run(f"timeout 180 mesos-execute --master={zk} --name=verify --command='echo hi' "
                              "--resources='cpus:0.1;mem:32'")
    assert res.rc == 0 and "TASK_FINISHED" in res.stdout + res.stderr, (res.stdout + res.stderr)[-2000:]
