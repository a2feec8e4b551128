"""The Slurm checks and the report, on a real Slurm cluster of lab hosts.

converge ran playbooks/validate.yml (strict) against a controller and two compute nodes;
these tests read the report it wrote on this machine, then run the module again
against a broken cluster (a compute node stopped) and expect the failure it names.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import testinfra
import yaml

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
REPORT = EPHEMERAL / "validation-report"
LAB = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]
COMPUTE = sorted(LAB["children"]["slurm_compute"]["hosts"])
CONTROLLER = sorted(LAB["children"]["slurm_controller"]["hosts"])[0]

testinfra_hosts = [f"ansible://{CONTROLLER}"]


@pytest.fixture(scope="module")
def report():
    return json.loads((REPORT / "validation.json").read_text())


def lab_host(name):
    """A testinfra host for any lab host of this scenario (testinfra_hosts is the controller)."""
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(EPHEMERAL / "inventory"))


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


def test_mpi_world_spans_both_compute_nodes(report):
    assert _checks(report)["slurm.mpi"]["detail"] == "MPI world of 2 ranks (--mpi=pmix) on %s" % ", ".join(COMPUTE)


def test_compute_nodes_run_configless_from_the_controller(host):
    """slurm_configless: no slurm.conf on the compute nodes, slurmd started with
    --conf-server naming the controller, and the controller serves its configuration."""
    assert "enable_configless" in host.file("/etc/slurm/slurm.conf").content_string
    for name in COMPUTE:
        node = lab_host(name)
        assert not node.file("/etc/slurm/slurm.conf").exists, name
        args = node.check_output("ps -o args= -C slurmd")
        assert f"--conf-server {CONTROLLER}" in args, (name, args)
        assert node.service("slurmd").is_running, name


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
    playbooks/slurm.yml on the converged cluster reports changed=0 on every host. The fast
    path is off for this run (clusterdos_fast_path=false), so every task runs again: the
    fast path would skip the stage and prove nothing about the roles."""
    root = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
    env = dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_COLLECTIONS_PATH=str(root / ".cache" / "collections"))
    run = subprocess.run(["ansible-playbook", "-i", str(EPHEMERAL / "inventory"), "-e", '{"clusterdos_fast_path": false}',
                          str(root / "playbooks" / "slurm.yml")],
                         env=env, capture_output=True, text=True, cwd=root, timeout=1800, check=False)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    recap = {name: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
             for name, fields in re.findall(r"^(\S+)\s+: (ok=.*)$", run.stdout, re.M)}
    assert set(recap) >= {CONTROLLER, *COMPUTE}, run.stdout[-4000:]
    assert all(r["changed"] == 0 and r["failed"] == 0 and r["unreachable"] == 0 for r in recap.values()), recap
    assert "Stage slurm converges: the fast path is off" in " ".join(run.stdout.split()), run.stdout[-4000:]


def test_a_stopped_compute_node_fails_node_states_and_srun(host):
    """Stop slurmd on one compute node; the module (run by ansible) must name it."""
    down = COMPUTE[-1]
    inventory = [str(EPHEMERAL / "inventory")]  # molecule's inventory directory (hosts + the lab's variables)
    env = dict(os.environ)
    if (EPHEMERAL / "ansible.cfg").exists():
        env["ANSIBLE_CONFIG"] = str(EPHEMERAL / "ansible.cfg")
    env["ANSIBLE_COLLECTIONS_PATH"] = str(Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / ".cache" / "collections")
    nodes = json.dumps([{"name": n, "slurm_compute": True} for n in COMPUTE])

    # The json callback prints one JSON document for the whole run (the default callback's
    # one-line output is followed by warnings and other text that is not JSON).
    env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    env["ANSIBLE_LOAD_CALLBACK_PLUGINS"] = "1"

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
