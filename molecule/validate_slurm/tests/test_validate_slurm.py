"""The Slurm checks and the report, on a real Slurm cluster of lab hosts.

converge ran playbooks/validate.yml (strict) against a controller that is also a compute
node and two more compute nodes; these tests read the report it wrote on this machine,
then run the module again against a broken cluster (a compute node stopped) and expect
the failure it names, and re-add a downed node with slurm_add_node.yml.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
REPORT = EPHEMERAL / "validation-report"
LAB = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]
COMPUTE = sorted(LAB["children"]["slurm_compute"]["hosts"])
CONTROLLER = sorted(LAB["children"]["slurm_controller"]["hosts"])[0]
# The controller runs slurmd too (molecule.yml); the compute nodes that run slurmd alone.
COMPUTE_ONLY = [name for name in COMPUTE if name != CONTROLLER]
FINGERPRINTS = "/var/lib/clusterdos/slurm"
# The lab (clusterdos-lab), the scenario's platforms and groups, and the host the last test adds.
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")
LAB_NAME = LAB["vars"]["clusterdos_lab"]["name"]
GROUPS = {p["name"]: p["groups"] for p in yaml.safe_load((Path(__file__).resolve().parents[1] / "molecule.yml").read_text())["platforms"]}
NEW_NODE = "vs-c3"
# The site's name service (a test fixture: base_hosts_manage is false in this scenario).
SITE_NAMES = ROOT / "molecule" / "_shared" / "site_names.yml"

testinfra_hosts = [f"ansible://{CONTROLLER}"]


@pytest.fixture(scope="module")
def report():
    return json.loads((REPORT / "validation.json").read_text())


def lab_host(name):
    """A testinfra host for any lab host of this scenario (testinfra_hosts is the controller)."""
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(EPHEMERAL / "inventory"))


def lab_inventory() -> str:
    """The lab's own inventory as it is now: it lists a host added by a test (molecule's copy does not)."""
    return subprocess.run([LAB_CLI, "inventory", "--name", LAB_NAME], check=True, capture_output=True,
                          text=True).stdout.strip()


# The json callback prints one JSON document for the whole run (the default callback's
# one-line output is followed by warnings and other text that is not JSON).
JSON_OUTPUT = {"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json", "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1"}
# This scenario's own runs take Ansible's stock executor (the checkout's strategy, a new
# Python per task on each host), as a site without Mitogen runs them: the one multi-host
# Slurm path that does every CI run (docs/testing.md, "Task executor").
STOCK_EXECUTOR = {"ANSIBLE_STRATEGY": "clusterdos.cluster.linear"}


def run_playbook(name: str | Path, *args: str, json_output: bool = False) -> subprocess.CompletedProcess:
    """ansible-playbook NAME (playbooks/; or the path of another) against this scenario's
    inventory and the lab's current one (a host added by a test included), from the checkout
    (molecule/_shared/lab_playbook.py) with the stock executor; with json_output, the json
    callback's one document on stdout."""
    return lab_playbook.run(name, *args, inventories=[EPHEMERAL / "inventory", lab_inventory()],
                            env={**STOCK_EXECUTOR, **(JSON_OUTPUT if json_output else {})})


def _checks(doc):
    return {c["name"]: c for c in doc["checks"]}


def test_every_slurm_check_passed_or_skipped_with_a_reason(report):
    checks = _checks(report)
    assert {"slurm.controller", "slurm.node_states", "slurm.srun", "slurm.gres", "slurm.mpi"} <= set(checks)
    for name in ("slurm.controller", "slurm.node_states", "slurm.srun", "slurm.gres", "slurm.mpi"):
        assert checks[name]["status"] == "passed", checks[name]
        assert checks[name]["host"] == CONTROLLER
    # No slurmdbd in this lab: accounting is reported as skipped, with the reason.
    assert checks["slurm.accounting"]["status"] == "skipped"
    assert "accounting storage is disabled" in checks["slurm.accounting"]["detail"]
    assert report["summary"]["failed"] == 0


def test_srun_reached_every_compute_node(report):
    srun = _checks(report)["slurm.srun"]
    assert srun["data"]["nodes"] == COMPUTE


def test_mpi_world_spans_two_compute_nodes(report):
    detail = _checks(report)["slurm.mpi"]["detail"]
    found = re.fullmatch(r"MPI world of 2 ranks \(--mpi=pmix\) on (\S+), (\S+)", detail)
    assert found, detail
    assert found.group(1) != found.group(2) and {found.group(1), found.group(2)} <= set(COMPUTE), detail


def test_compute_nodes_run_configless_from_the_controller(host):
    """slurm_configless: no slurm.conf on the compute nodes that run slurmd alone, slurmd
    started with --conf-server naming the controller, and the controller serves its
    configuration. The controller, a compute node too, keeps its slurm.conf (slurmctld
    reads it) and both daemons' restart fingerprints, and runs both daemons."""
    assert COMPUTE_ONLY and CONTROLLER in COMPUTE, (CONTROLLER, COMPUTE)
    assert "enable_configless" in host.file("/etc/slurm/slurm.conf").content_string
    for name in COMPUTE:
        node = lab_host(name)
        assert node.file("/etc/slurm/slurm.conf").exists == (name == CONTROLLER), name
        args = node.check_output("ps -o args= -C slurmd")
        assert f"--conf-server {CONTROLLER}" in args, (name, args)
        assert node.service("slurmd").is_running, name
    assert host.service("slurmctld").is_running
    for daemon in ("controller", "compute"):
        assert host.file(f"{FINGERPRINTS}/{daemon}.restart").exists, daemon


def test_every_slurm_host_has_the_site_slurm_repository_and_its_key():
    """slurm_apt_repository and its key (molecule.yml, prepare.yml): the key fetched from the
    site's web server, the repository listed with it, and apt reading that repository's
    signed index (apt-cache policy lists it only once its signature was verified)."""
    for name in [CONTROLLER] + COMPUTE:
        node = lab_host(name)
        key = node.file("/etc/apt/keyrings/slurm.asc")
        assert key.exists and key.content_string.startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----"), name
        listed = node.file("/etc/apt/sources.list.d/clusterdos-slurm.list").content_string
        assert "[signed-by=/etc/apt/keyrings/slurm.asc] http://deb.debian.org/debian-security bookworm-security main" in listed
        policy = node.check_output("apt-cache policy slurm-client")
        assert "debian-security bookworm-security/main" in policy, (name, policy)


def test_node_states_match_sinfo(host, report):
    detail = _checks(report)["slurm.node_states"]["detail"]
    for line in host.check_output("sinfo --noheader --Node --format='%N|%T'").splitlines():
        node, state = line.split("|")
        assert "%s %s" % (node, state) in detail


def test_junit_and_html_written(report):
    root = ET.parse(REPORT / "validation-junit.xml").getroot()
    assert int(root.get("tests")) == report["summary"]["total"]
    assert root.get("failures") == "0"
    html = (REPORT / "validation.html").read_text()
    for name in [CONTROLLER] + COMPUTE:
        assert 'data-node="%s"' % name in html


def test_a_second_slurm_run_changes_nothing():
    """The scenario skips molecule's idempotence step (its report is rewritten on every run),
    so the Slurm stage's configless and site-repository paths are run again here:
    playbooks/slurm.yml on the converged cluster reports changed=0 on every host (with the
    node a later test adds, where that test ran first: the add left it as a full run would). The fast
    path is off for this run (clusterdos_fast_path=false), so every task runs again: the
    fast path would skip the stage and prove nothing about the roles."""
    run = run_playbook("slurm.yml", "-e", '{"clusterdos_fast_path": false}')
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    recap = {name: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
             for name, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", run.stdout, re.M)}
    assert set(recap) >= {CONTROLLER, *COMPUTE}, run.stdout[-4000:]
    assert all(r["changed"] == 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap
    assert "Stage slurm converges: the fast path is off" in " ".join(run.stdout.split()), run.stdout[-4000:]


def test_a_stopped_compute_node_fails_node_states_and_srun(host):
    """Stop slurmd on one compute node; the module (run by ansible) must name it."""
    down = COMPUTE_ONLY[-1]
    inventory = [str(EPHEMERAL / "inventory")]  # molecule's inventory directory (hosts + the lab's variables)
    nodes = json.dumps([{"name": n, "slurm_compute": True} for n in COMPUTE])
    env = lab_playbook.environment(JSON_OUTPUT)

    def adhoc(target, module, args):
        cmd = ["ansible", target, "-i", inventory[0], "-m", module, "-a", args]
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, check=False)

    def result(run, target):
        doc = json.loads(run.stdout)
        return doc["plays"][0]["tasks"][0]["hosts"][target]

    stop = adhoc(down, "ansible.builtin.systemd", "name=slurmd state=stopped")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    try:
        host.run_expect([0], f"scontrol update nodename={down} state=down reason=validate-test")
        res = adhoc(CONTROLLER, "clusterdos.cluster.cluster_validate",
                    json.dumps({"checks": ["slurm.node_states", "slurm.srun"], "nodes": json.loads(nodes),
                                "timeout": 30}))
        assert "slurm.node_states" in res.stdout, res.stdout + res.stderr
        out = result(res, CONTROLLER)
        checks = {c["name"]: c for c in out["checks"]}
        assert checks["slurm.node_states"]["status"] == "failed"
        assert f"{down}: down" in checks["slurm.node_states"]["detail"]
        assert checks["slurm.srun"]["status"] == "failed"
    finally:
        adhoc(down, "ansible.builtin.systemd", "name=slurmd state=started")
        host.run(f"scontrol update nodename={down} state=resume")


def tasks_run_for(doc: dict, name: str) -> list[tuple[str, str]]:
    """(play, task) of every task of a json-callback run that ran or skipped for host NAME.
    A result delegated to another host did not run there: the preflight's --limit check is a
    run_once task on every host, delegated to localhost, whose one result is filed under the
    play's first host."""
    found = []
    for play in doc["plays"]:
        for task in play["tasks"]:
            result = task["hosts"].get(name)
            if result is not None and result.get("_ansible_delegated_vars", {}).get("ansible_delegated_host", name) == name:
                found.append((play["play"]["name"], task["task"]["name"]))
    return found


def reconfigure_writes(doc: dict) -> dict:
    """The results, per host, of the write in the play that hands running hosts the new
    configuration (an included task may be listed once per group of hosts that included it)."""
    written: dict = {}
    for play in doc["plays"]:
        if play["play"]["name"].startswith("Slurm - slurmctld"):
            for task in play["tasks"]:
                if task["task"]["name"].endswith("Write slurm.conf, cgroup.conf, gres.conf and what only a restart applies"):
                    written.update(task["hosts"])
    return written


def _sinfo_states(host) -> dict[str, str]:
    out = host.check_output("sinfo --noheader --Node --format='%N|%T'")
    return dict(line.split("|") for line in out.splitlines())


def _pid_and_start(node, unit: str) -> str:
    return node.check_output(f"systemctl show -p MainPID -p ExecMainStartTimestampMonotonic {unit}")


def test_a_downed_node_is_re_added_and_the_controller_node_writes_both_daemons_files_at_once(host):
    """slurm_add_node.yml takes a node slurmctld reports down as new: the node converges
    (slurmd started again) and the controller gets the reconfigure. The controller runs
    slurmctld and slurmd, so its reconfigure writes both daemons' files in one call: with
    both of its restart fingerprints removed beforehand, that one write puts both back (and
    restarts both daemons, as a missing fingerprint calls for). A compute node that runs
    slurmd alone, configless, with its names from the site (base_hosts_manage: false), has
    nothing to write: it is in no play of the add at all, and its slurmd keeps running
    untouched, the primary's `scontrol reconfigure` handing it the configuration."""
    down, kept = COMPUTE_ONLY[-1], COMPUTE_ONLY[0]
    node = lab_host(down)
    node.run_expect([0], "systemctl stop slurmd")
    host.run_expect([0], f"scontrol update nodename={down} state=down reason=validate-add-test")
    host.run_expect([0], f"rm -f {FINGERPRINTS}/controller.restart {FINGERPRINTS}/compute.restart")
    kept_before = _pid_and_start(lab_host(kept), "slurmd")
    run = run_playbook("slurm_add_node.yml", json_output=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    doc = json.loads(run.stdout)
    # The reconfigure's write, on the hosts that were running (the re-added node's own is in the
    # slurmd play).
    written = reconfigure_writes(doc)
    assert sorted(written) == [CONTROLLER], written
    assert sorted(written[CONTROLLER]["changed_paths"]) == [f"{FINGERPRINTS}/compute.restart",
                                                          f"{FINGERPRINTS}/controller.restart"], written[CONTROLLER]
    # The running compute-only node is in no task of the add, run or skipped; the re-added
    # node and the controller are.
    assert tasks_run_for(doc, kept) == [], tasks_run_for(doc, kept)
    assert tasks_run_for(doc, down) and tasks_run_for(doc, CONTROLLER)
    for daemon in ("controller", "compute"):
        assert host.file(f"{FINGERPRINTS}/{daemon}.restart").exists, daemon
    assert _pid_and_start(lab_host(kept), "slurmd") == kept_before
    assert node.service("slurmd").is_running
    # The re-added node registers again (ReturnToService=2 takes it back from down).
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and not all(state in ("idle", "mixed", "allocated") for state in _sinfo_states(host).values()):
        time.sleep(2)
    assert set(_sinfo_states(host)) == set(COMPUTE)
    assert all(state in ("idle", "mixed", "allocated") for state in _sinfo_states(host).values()), _sinfo_states(host)


def test_a_new_node_is_added_without_a_task_on_the_running_configless_nodes(host):
    """A new host (NEW_NODE) joins the lab and the site's names (the fixture's hosts file on
    every host, as the site's DNS would answer before the node is added); base.yml on it
    alone, then slurm_add_node.yml. The running compute nodes that run slurmd alone run no
    task of either playbook and keep their slurmd (same PID and start), the controller's one
    write changes slurm.conf and slurmctld's fingerprint (the node list), the new node comes
    up idle, and one job step spans the running nodes and the new one: the primary's
    `scontrol reconfigure` handed the running slurmd the new node list."""
    subprocess.run([LAB_CLI, "up", "--name", LAB_NAME, *(f"--host={n}={','.join(g)}" for n, g in GROUPS.items()),
                    f"--host={NEW_NODE}=slurm_compute"], check=True, capture_output=True, text=True)
    names = run_playbook(SITE_NAMES)
    assert names.returncode == 0, names.stdout[-4000:] + names.stderr[-2000:]
    before = {n: _pid_and_start(lab_host(n), "slurmd") for n in COMPUTE_ONLY}
    base = run_playbook("base.yml", "--limit", f"{NEW_NODE},localhost", json_output=True)
    assert base.returncode == 0, base.stdout[-4000:] + base.stderr[-2000:]
    add = run_playbook("slurm_add_node.yml", json_output=True)
    assert add.returncode == 0, add.stdout[-4000:] + add.stderr[-2000:]
    docs = [json.loads(base.stdout), json.loads(add.stdout)]
    for name in COMPUTE_ONLY:
        assert [tasks_run_for(doc, name) for doc in docs] == [[], []], name
    assert all(tasks_run_for(doc, NEW_NODE) for doc in docs)
    written = reconfigure_writes(docs[1])
    assert sorted(written) == [CONTROLLER], written
    assert {"/etc/slurm/slurm.conf", f"{FINGERPRINTS}/controller.restart"} <= set(written[CONTROLLER]["changed_paths"]), \
        written[CONTROLLER]
    assert {n: _pid_and_start(lab_host(n), "slurmd") for n in COMPUTE_ONLY} == before
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and _sinfo_states(host).get(NEW_NODE) != "idle":
        time.sleep(2)
    assert _sinfo_states(host).get(NEW_NODE) == "idle", _sinfo_states(host)
    nodes = sorted(COMPUTE_ONLY + [NEW_NODE])
    out = host.check_output(f"srun --nodes={len(nodes)} --nodelist={','.join(nodes)} --ntasks-per-node=1 hostname")
    assert sorted(out.split()) == nodes
