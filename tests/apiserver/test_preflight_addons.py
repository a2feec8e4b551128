"""Bad add-on input is refused by playbooks/preflight.yml, on the controller, before any host changes.

No API server: the preflight reads the real charts from a site chart mirror (../shared/charts
as a directory of chart archives, which addons_chart_mirror accepts) with helm on the
controller. Every host of these inventories is 127.0.0.1 port 1, where nothing listens: a run
that contacted a host would fail UNREACHABLE, so a refusal with the expected message and no
UNREACHABLE proves the preflight stopped it first (the tests/playbooks/bad_inventories idea).
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml
from playbook import ROOT, VENV_BIN
from realapi import CHARTS

HOSTS = {
    "all": {
        "vars": {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody",
                 "ansible_ssh_common_args": "-o ConnectTimeout=2 -o BatchMode=yes",
                 "clusterdos_time_servers": ["10.0.0.254"], "kubernetes_cluster_node_cidr": "10.0.0.0/24",
                 "clusterdos_chart_mirror": f"file://{CHARTS}"},
        "hosts": {"ctl1": {"clusterdos_node_ip": "10.0.0.1"}, "c1": {"clusterdos_node_ip": "10.0.0.11"}},
        "children": {"kube_control_plane": {"hosts": {"ctl1": {}}}, "kube_node": {"hosts": {"c1": {}}}},
    }
}


def _preflight(tmp_path, **addon_vars):
    inventory = yaml.safe_load(yaml.safe_dump(HOSTS))
    inventory["all"]["vars"].update(addon_vars)
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_NOCOLOR="1", PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / "preflight.yml")], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert "UNREACHABLE" not in out, out[-3000:]
    return proc.returncode, " ".join(out.split())


def test_good_add_ons_pass_with_every_chart_read_from_the_mirror(tmp_path):
    rc, out = _preflight(tmp_path, addons_enabled=["cert_manager", "kueue", "local_path", "shared_path"],
                         addons_shared_path_nfs_server="10.0.0.30")
    assert rc == 0, out[-3000:]
    assert "Check the catalog and the enabled add-ons, and read every chart" in out


def test_a_chart_version_missing_and_values_the_schema_refuses_are_named_together(tmp_path):
    rc, out = _preflight(tmp_path, addons_enabled=["cert_manager", "metrics_server"],
                         addons_catalog_overrides={"metrics_server": {"version": "3.99.0"}},
                         # cert-manager's values.schema.json: replicaCount is a number.
                         addons_values={"cert_manager": {"replicaCount": "three"}})
    assert rc != 0
    assert "metrics_server: chart metrics-server version 3.99.0 is not in the chart directory" in out
    assert "cert_manager: chart" in out and "replicaCount" in out


def test_a_missing_dependency_is_refused_also_without_a_chart_mirror(tmp_path):
    """Catalog and request checks need no chart: they run with upstream repositories too (no helm call)."""
    rc, out = _preflight(tmp_path, addons_enabled=["kueue"], clusterdos_chart_mirror="")
    assert rc != 0
    assert "kueue is enabled but depends on ['cert_manager'], which is not: enable cert_manager too" in out


@pytest.mark.parametrize("addon_vars, message", [
    ({"addons_enabled": ["cilium"]}, "Cilium is the Kubernetes stage's pod network"),
    ({"addons_cilium_kube_proxy_replacement": True},
     "addons_cilium_kube_proxy_replacement (on c1, ctl1): is gone: Cilium has one set of knobs, the Kubernetes stage's: "
     "set kubernetes_cluster_cilium_kube_proxy_replacement"),
    ({"kubernetes_cluster_cilium_chart_version": "1.18.5"},
     "kubernetes_cluster_cilium_chart_version (on c1, ctl1): is gone: the Cilium chart version is the add-on catalog's"),
], ids=["cilium-in-addons-enabled", "old-addons-cilium-knob", "old-kubernetes-cilium-version"])
def test_a_second_cilium_path_or_knob_is_refused(tmp_path, addon_vars, message):
    rc, out = _preflight(tmp_path, **addon_vars)
    assert rc != 0
    assert message in out, out[-3000:]
