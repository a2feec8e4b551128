"""The Kubernetes stage installs Cilium through the add-on catalog, on a real API server.

roles/kubernetes_cluster/tasks/cilium.yml (what playbooks/kubernetes.yml runs on the first
control plane when kubernetes_cluster_cni is cilium) is played on localhost, standing in
for that control plane: localhost is the inventory's only kube_control_plane host at
127.0.0.1, helm is copied from the venv by the login role's tools entry point
(login_source: directory), and the admin kubeconfig is the test API server's. The real
Cilium chart (upstream's package, ../shared/charts) comes from the chart mirror.

One install path, one version, one set of knobs: the release runs the catalog's pinned
chart, and its values are those the Kubernetes stage's kubernetes_cluster_cilium_* ask
for, merged over the catalog entry's defaults. No kubelet runs here, so no agent starts
(addons_wait: false); the objects are checked.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from playbook import ROOT, VENV_BIN, run_play

CATALOG = yaml.safe_load((ROOT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
K8S_DEFAULTS = yaml.safe_load((ROOT / "roles" / "kubernetes_cluster" / "defaults" / "main.yml").read_text())


@pytest.fixture(scope="module")
def stage(apiserver, chart_repo, tmp_path_factory):
    """What the Kubernetes stage runs, and the inventory it reads (the knobs set unlike the defaults)."""
    tools = tmp_path_factory.mktemp("tools")
    extra = {
        # The stage's own knobs: the only Cilium settings there are.
        "kubernetes_cluster_cilium_kube_proxy_replacement": True,
        "kubernetes_cluster_cilium_hubble": True,
        "kubernetes_cluster_cilium_values": {"bpf": {"masquerade": True}},
        # Where the chart comes from: the add-on stage's source (clusterdos_chart_mirror on a site).
        "clusterdos_chart_mirror": chart_repo,
        # The test API server instead of /etc/kubernetes/admin.conf on a control plane.
        "__kubernetes_cluster_admin_conf": str(apiserver.kubeconfig),
        "login_source": "directory", "login_binaries_dir": str(VENV_BIN), "login_install_dir": str(tools),
        # The release that directory holds (the login role checks the installed tool's version).
        "login_helm_version": subprocess.run([str(VENV_BIN / "helm"), "version", "--template", "{{.Version}}"],
                                             capture_output=True, text=True, check=True).stdout.strip().lstrip("v"),
        # No kubelet: nothing becomes ready, no hook Job runs; this apiserver cannot serve OpenAPI v2 as protobuf.
        "addons_wait": False, "addons_atomic": False, "addons_helm_openapi_validation": False,
        # The venv's helm: in check mode the login role copies nothing into tools/ (on a site, helm is there from the
        # first run); the copy itself is checked by the real runs below.
        "addons_helm_binary": str(VENV_BIN / "helm"),
    }
    tasks = [{"name": "The Kubernetes stage's Cilium tasks", "ansible.builtin.include_role": {
        "name": "clusterdos.cluster.kubernetes_cluster", "tasks_from": "cilium.yml"}}]
    return {"extra": extra, "tasks": tasks, "host_vars": {"clusterdos_node_ip": "127.0.0.1"},
            "groups": {"kube_control_plane": ["localhost"]}}


def _play(tmp_path, stage, **kw):
    return run_play(tmp_path, stage["tasks"], stage["extra"], host_vars=stage["host_vars"], groups=stage["groups"],
                    dump="__addons_progress", **kw)


def test_check_mode_says_cilium_would_be_installed(apiserver, stage, tmp_path):
    run = _play(tmp_path, stage, check=True)
    assert run.ok, run.tail()
    assert [(s["name"], s["action"]) for s in run.results] == [("cilium", "installed")]
    assert "kube-system/cilium" not in apiserver.helm_list()


def test_the_kubernetes_stage_installs_the_catalogs_cilium_with_its_values(apiserver, stage, tmp_path):
    run = _play(tmp_path, stage)
    assert run.ok, run.tail()
    assert [(s["name"], s["action"]) for s in run.results] == [("cilium", "installed")]
    assert "1/1 cilium (cilium %s): installed in " % CATALOG["cilium"]["version"] in run.proc.stdout
    release = apiserver.helm_list()["kube-system/cilium"]
    # One version: the catalog's pin (the Kubernetes stage has no version of its own any more).
    assert release["chart"] == "cilium-%s" % CATALOG["cilium"]["version"]
    assert release["status"] == "deployed"
    assert not [k for k in K8S_DEFAULTS if k.startswith("kubernetes_cluster_cilium_") and "version" in k]
    values = json.loads(apiserver.helm("get", "values", "cilium", "-n", "kube-system", "-o", "json"))
    # What the stage asks for (kubernetes_cluster_cilium_* and the endpoint), over the entry's defaults.
    assert values["kubeProxyReplacement"] is True
    assert (values["k8sServiceHost"], values["k8sServicePort"]) == ("127.0.0.1", 6443)
    assert (values["routingMode"], values["tunnelProtocol"]) == ("tunnel", "vxlan")
    assert values["hubble"] == {"enabled": True, "relay": {"enabled": True}, "ui": {"enabled": True}}
    assert values["bpf"] == {"masquerade": True}
    assert values["ipam"] == {"mode": "kubernetes"}
    assert values["operator"]["replicas"] == 1  # one node in this inventory
    # ...and the real chart turned them into these objects on the real API server.
    config = apiserver.get("configmap", "cilium-config", "-n", "kube-system")["data"]
    assert config["kube-proxy-replacement"] == "true"
    assert config["routing-mode"] == "tunnel" and config["tunnel-protocol"] == "vxlan"
    assert config["enable-hubble"] == "true"
    assert config["ipam"] == "kubernetes"
    agent = apiserver.get("daemonset", "cilium", "-n", "kube-system")
    env = {e["name"]: e.get("value") for e in agent["spec"]["template"]["spec"]["containers"][0].get("env", [])}
    assert (env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")) == ("127.0.0.1", "6443")
    apiserver.get("deployment", "cilium-operator", "-n", "kube-system")
    apiserver.get("deployment", "hubble-relay", "-n", "kube-system")


def test_a_second_run_of_the_kubernetes_stage_leaves_cilium_unchanged(apiserver, stage, tmp_path):
    before = apiserver.helm_list()["kube-system/cilium"]["revision"]
    run = _play(tmp_path, stage, diff=True)
    assert run.ok, run.tail()
    assert [(s["name"], s["action"]) for s in run.results] == [("cilium", "unchanged")]
    assert run.changed == 0, run.tail()
    assert apiserver.helm_list()["kube-system/cilium"]["revision"] == before


def test_one_knob_changed_upgrades_cilium_and_says_so(apiserver, stage, tmp_path):
    changed = dict(stage, extra=dict(stage["extra"], kubernetes_cluster_cilium_hubble=False))
    run = _play(tmp_path, changed, diff=True)
    assert run.ok, run.tail()
    assert [(s["name"], s["action"]) for s in run.results] == [("cilium", "upgraded")]
    assert apiserver.get("configmap", "cilium-config", "-n", "kube-system")["data"]["enable-hubble"] == "false"
    assert apiserver.kubectl("get", "deployment", "hubble-relay", "-n", "kube-system", check=False).returncode != 0
