"""A name in validate_checks or validate_skip that matches no check stops playbooks/validate.yml
before any check runs, naming the bad name and the valid groups and names.

The playbook runs unchanged with ansible-playbook. Every host of the inventory is at an
address where nothing listens (127.0.0.1 port 1): a run that contacted one would say
UNREACHABLE. The refusal is the validate role's name check (roles/validate/tasks/check_names.yml),
which playbooks/preflight.yml runs on the controller for each host that sets names (and the
role's input checks again per host); its check names are the module's, read through the
clusterdos.cluster.validate_checks lookup.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from ansible.plugins.loader import lookup_loader
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.runner import CHECKS

ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = ROOT / ".venv" / "bin"
ROLE_VARS = yaml.safe_load((ROOT / "roles" / "validate" / "vars" / "main.yml").read_text())
NOWHERE = {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody",
           "ansible_ssh_common_args": "-o ConnectTimeout=2 -o BatchMode=yes"}


def _validate_playbook(tmp_path: Path, playbook: str = "validate.yml", **validate_vars) -> tuple[int, str, Path]:
    report = tmp_path / "report"
    inventory = {"all": {
        "vars": {**NOWHERE, "clusterdos_time_servers": ["10.0.0.254"], "kubernetes_cluster_node_cidr": "10.0.0.0/24",
                 "addons_enabled": [], "validate_report_dir": str(report), **validate_vars},
        "hosts": {"ctl1": {"clusterdos_node_ip": "10.0.0.1"}, "c1": {"clusterdos_node_ip": "10.0.0.11"}},
        "children": {"kube_control_plane": {"hosts": {"ctl1": {}}}, "kube_node": {"hosts": {"c1": {}}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"), ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_NOCOLOR="1", PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(ROOT / "playbooks" / playbook)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert "UNREACHABLE" not in out, out[-3000:]
    return proc.returncode, " ".join(out.split()), report


def test_the_roles_check_names_are_the_modules():
    """The role reads the names and groups from the module's registry (the lookup), never a list of its own."""
    assert ROLE_VARS["__validate_check_names"] == "{{ query('clusterdos.cluster.validate_checks') }}"
    assert ROLE_VARS["__validate_groups"] == "{{ query('clusterdos.cluster.validate_checks', groups=true) }}"
    lookup = lookup_loader.get("clusterdos.cluster.validate_checks")
    assert lookup.run([], {}) == [c.name for c in CHECKS]
    assert lookup.run([], {}, groups=True) == ["kubernetes", "slurm", "hardware", "clusterd"]


def test_a_name_that_matches_no_check_stops_the_run_before_any_check(tmp_path):
    rc, out, report = _validate_playbook(tmp_path, validate_checks=["kubernetes", "kubernetes.node_ready"],
                                         validate_skip=["slurm.gres", "infiniband"])
    assert rc != 0
    # The preflight that validate.yml (like every stage playbook) imports refuses it, on the
    # controller, naming the first host whose names it checks.
    assert any((f'{host}: validate_checks has "kubernetes.node_ready"; validate_skip has "infiniband", which match(es) '
                'no check. validate_checks takes "all", a group (kubernetes, slurm, hardware, clusterd) or a check name; '
                'validate_skip a group or a check name.') in out for host in ("ctl1", "c1")), out[-3000:]
    assert "PLAY [Preflight - validation check names, on the controller]" in out
    assert "The checks: %s (docs/validation.md" % ", ".join(c.name for c in CHECKS) in out
    # Stopped in the play that describes the cluster: no stage ran a check, no report was written.
    assert "TASK [clusterdos.cluster.validate : Run the checks of the stage" not in out
    assert "Validate - the report" not in out
    assert not report.exists()


def test_names_that_each_match_a_check_pass(tmp_path):
    """Good names of every kind, and none selected to run (so no host is needed): the run completes."""
    rc, out, report = _validate_playbook(tmp_path, validate_checks=[],
                                         validate_skip=["hardware", "kubernetes.coredns", "hardware.nccl_slurm", "clusterd"])
    assert rc == 0, out[-3000:]
    assert "match(es) no check" not in out
    assert json.loads((report / "validation.json").read_text())["summary"]["failed"] == 0


def test_the_preflight_refuses_a_bad_name_so_site_yml_stops_before_any_stage(tmp_path):
    """playbooks/preflight.yml (the first play of site.yml and of every stage playbook) runs the
    same input check on the controller: a bad name stops the run before any stage touches a host."""
    rc, out, _report = _validate_playbook(tmp_path, "preflight.yml", validate_skip=["slurm.gress"])
    assert rc != 0
    assert any(f'{host}: validate_skip has "slurm.gress", which match(es) no check.' in out for host in ("ctl1", "c1")), out[-3000:]
    assert "PLAY [Preflight - validation check names, on the controller]" in out
    assert "PLAY [Preflight - done]" not in out
