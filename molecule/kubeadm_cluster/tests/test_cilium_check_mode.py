"""The Kubernetes stage's pod network with kubernetes_cluster_cni: cilium, in check mode, on
the live cluster's first control plane (molecule/kubeadm_cluster/cilium_check.yml run with
--check). The chart comes from the site's chart mirror: ../shared/charts served on the lab
bridge, given as the collection's clusterdos_chart_mirror. helm (put there for real first,
as a site's first run does) and the add-on plan run on the control plane and read and
render the real chart; the cluster is left as it was. No Cilium image can be had here, so
no Cilium release is ever applied (coverage_exempt.yml)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from conftest import CONTROL_PLANES, INVENTORY, PROJECT, SCENARIO, run_playbook

CATALOG = yaml.safe_load((PROJECT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
CHARTS = PROJECT.parent / "shared" / "charts"
VENV_BIN = PROJECT / ".venv" / "bin"


def _results(doc: dict, name: str, host: str) -> list[dict]:
    return [task["hosts"][host] for play in doc["plays"] for task in play["tasks"]
            if task["task"]["name"].split(" : ", 1)[-1] == name and host in task["hosts"]]


@pytest.fixture(scope="module")
def chart_mirror():
    """../shared/charts on the lab bridge, as a site's chart mirror (a web server)."""
    name = yaml.safe_load((INVENTORY / "clusterdos_lab.yml").read_text())["all"]["vars"]["clusterdos_lab"]["name"]
    res = subprocess.run([str(PROJECT / "bin" / "clusterdos-lab"), "serve", "--name", name, "--dir", str(CHARTS)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cilium_check(kubectl, chart_mirror):
    helm_version = subprocess.run([str(VENV_BIN / "helm"), "version", "--template", "{{.Version}}"],
                                  capture_output=True, text=True, check=True).stdout.strip().lstrip("v")
    before = kubectl.ok("get", "secrets", "-n", "kube-system", "-l", "owner=helm", "-o", "name")
    res = run_playbook(SCENARIO / "cilium_check.yml", "--check", "-e", json.dumps({
        "kubernetes_cluster_cni": "cilium", "clusterdos_chart_mirror": chart_mirror,
        # helm for the control plane from a controller directory (login_source: directory).
        "login_source": "directory", "login_binaries_dir": str(VENV_BIN), "login_helm_version": helm_version}),
        env_extra={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    return {"doc": json.loads(res.stdout[res.stdout.index("{"):]), "helm_before": before, "mirror": chart_mirror}


def test_check_mode_reads_the_catalogs_cilium_chart_from_the_mirror_on_the_control_plane(cilium_check):
    cp = CONTROL_PLANES[0]
    plan = _results(cilium_check["doc"], "Plan Cilium and read its chart", cp)
    assert plan and not plan[0].get("failed"), plan
    assert [(r["name"], r["version"]) for r in plan[0]["releases"]] == [("cilium", CATALOG["cilium"]["version"])]
    # helm on the control plane read the chart from the mirror, then rendered it with the stage's values.
    charts = [" ".join(c) for c in plan[0]["commands"] if "version" not in c[1:2]]
    assert [c.split()[1:3] for c in charts] == [["show", "chart"], ["template", "cilium"]], charts
    assert all(f"--repo {cilium_check['mirror']} " in c for c in charts), charts
    # Only the control plane ran it: the stage talks to the API from there.
    assert set(cilium_check["doc"]["stats"]) <= {cp, "localhost"}, cilium_check["doc"]["stats"]


def test_check_mode_leaves_the_cluster_as_it_was(kubectl, cilium_check):
    assert kubectl.ok("get", "secrets", "-n", "kube-system", "-l", "owner=helm", "-o", "name") == cilium_check["helm_before"]
    assert kubectl.run("get", "daemonset", "cilium", "-n", "kube-system").rc != 0
    assert kubectl.run("get", "configmap", "cilium-config", "-n", "kube-system").rc != 0
    nodes = kubectl.json("get", "nodes")["items"]
    assert all([c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True" for n in nodes)
