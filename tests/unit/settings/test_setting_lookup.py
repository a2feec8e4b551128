"""clusterdos.cluster.setting: collection-wide defaults written once, run through
ansible-playbook on localhost (no host changes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.settings import DEFAULTS, setting
from playbook_outcome import run_json

ROOT = Path(__file__).resolve().parents[3]


def test_inventory_value_wins_else_the_default():
    assert setting("clusterdos_gpu_nvidia_group", {}) == "gpu_nvidia"
    assert setting("clusterdos_gpu_nvidia_group", {"clusterdos_gpu_nvidia_group": "h100"}) == "h100"
    with pytest.raises(KeyError, match="not a collection-wide setting"):
        setting("clusterdos_gpu_group", {})


def _play(tmp_path: Path, inventory_vars: dict, expr: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "inv.json").write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local"}},
                                                           "vars": {"ansible_python_interpreter": sys.executable, **inventory_vars}},
                                                   "mine": {"hosts": {"h1": {}}}}))
    (tmp_path / "play.yml").write_text(json.dumps([{
        "name": "setting", "hosts": "{{ lookup('clusterdos.cluster.setting', 'clusterdos_login_group') }}",
        "gather_facts": False, "tasks": [{"name": "Show", "ansible.builtin.debug": {"msg": expr}}]}]))
    return run_json(tmp_path / "inv.json", tmp_path / "play.yml", *args)


def _msg(proc: subprocess.CompletedProcess):
    data = json.loads(proc.stdout)
    return [r["msg"] for p in data["plays"] for t in p["tasks"] for r in t["hosts"].values()]


def test_lookup_in_a_play_reads_inventory_values_and_templates_them(tmp_path):
    expr = "{{ query('clusterdos.cluster.setting', 'slurm_compute_group', 'clusterdos_kubernetes_version') }}"
    proc = _play(tmp_path, {"clusterdos_kubernetes_version": "{{ '1.36' ~ '.2' }}"}, expr, "-e", "clusterdos_login_group=mine")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _msg(proc) == [["slurm_compute", "1.36.2"]]


def test_unknown_setting_is_refused_listing_the_known_ones(tmp_path):
    proc = _play(tmp_path, {}, "{{ lookup('clusterdos.cluster.setting', 'clusterdos_gpu_group') }}", "-e", "clusterdos_login_group=mine")
    assert proc.returncode != 0
    assert "'clusterdos_gpu_group' is not a collection-wide setting; known: clusterdos_clusterd_agent_group" in proc.stdout


# Every playbook and role file reads a collection-wide setting through the lookup and
# writes no fallback of its own (`clusterdos_kube_node_group | default('kube_node')`).
FILES = sorted(str(p.relative_to(ROOT)) for p in [*(ROOT / "playbooks").rglob("*.yml"), *(ROOT / "roles").rglob("*.yml"),
                                                  *(ROOT / "roles").rglob("*.j2")])


def test_no_second_copy_of_a_default():
    found = {path: [m.group(0) for m in re.finditer(r"\b([a-z_]+) \| default\(", (ROOT / path).read_text())
                    if m.group(1) in DEFAULTS] for path in FILES}
    assert {path: copies for path, copies in found.items() if copies} == {}


def test_primary_controller_is_the_first_host_of_the_group_the_setting_names():
    groups = {"slurm_controller": ["ctl-a", "ctl-b"], "masters": ["m2", "m1"]}
    assert setting("slurm_primary_controller", {"groups": groups}) == "ctl-a"
    assert setting("slurm_primary_controller", {"groups": groups, "slurm_controller_group": "masters"}) == "m2"
    assert setting("slurm_primary_controller", {"groups": {}}) == ""
    assert setting("slurm_primary_controller", {}) == ""


def test_primary_controller_in_a_play_follows_a_templated_group_setting(tmp_path):
    # The inventory's group "mine" holds h1; the setting names it through a template.
    expr = "{{ lookup('clusterdos.cluster.setting', 'slurm_primary_controller') }}|{{ query('clusterdos.cluster.setting', 'slurm_primary_controller', 'slurm_login_group') }}"
    proc = _play(tmp_path, {"slurm_controller_group": "{{ 'mi' ~ 'ne' }}"}, expr, "-e", "clusterdos_login_group=mine")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _msg(proc) == ["h1|['h1', 'slurm_login']"]
    proc = _play(tmp_path, {"slurm_controller_group": "nosuchgroup"}, expr, "-e", "clusterdos_login_group=mine")
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert _msg(proc) == ["|['', 'slurm_login']"]
