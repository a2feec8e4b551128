"""awx/preflight_survey.yml rejects survey answers of the wrong shape with a clear message.

Runs the real task file with ansible-playbook on the controller (localhost, nothing else is
contacted), included the way playbooks/preflight.yml includes it, with the extra vars an
AWX survey would pass.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"


def run_checks(tmp_path: Path, extra_vars: dict) -> subprocess.CompletedProcess[str]:
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Survey checks", "hosts": "localhost", "connection": "local", "gather_facts": False,
        "tasks": [{"name": "Check survey answers (AWX)",
                   "ansible.builtin.include_tasks": str(ROOT / "awx" / "preflight_survey.yml")}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=f"{BIN}:{os.environ['PATH']}")
    return subprocess.run([str(BIN / "ansible-playbook"), str(playbook), "-e", json.dumps(extra_vars)],
                          capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize("extra_vars", [
    {},
    {"clusterdos_kubernetes_version": "1.34.1", "addons_enabled": ["cert_manager", "metrics_server"],
     "node": "gpu07", "clusterdos_upgrade_batch": 2, "clusterdos_reset_confirm": "true",
     "validate_checks": ["kubernetes", "slurm"], "validate_strict": False},
], ids=["nothing-set", "every-survey-answer-good"])
def test_good_answers_pass(tmp_path, extra_vars):
    result = run_checks(tmp_path, extra_vars)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(("extra_vars", "message"), [
    ({"clusterdos_kubernetes_version": "v1.34.1"}, "clusterdos_kubernetes_version must be a version X.Y.Z such as 1.34.1"),
    ({"clusterdos_kubernetes_version": "latest"}, "got 'latest'"),
    ({"clusterdos_kubernetes_version": "1.34"}, "got '1.34'"),
    ({"clusterdos_kubernetes_version": ""}, "got ''"),
    ({"addons_enabled": ["cert_manager", "grafana"]}, "Unknown add-on(s): grafana."),
    ({"addons_enabled": "cert_manager"}, "addons_enabled must be a list of add-on names"),
    ({"node": "gpu07 gpu08"}, "node must be one inventory host name (e.g. gpu07)"),
    ({"node": "gpu0[7:9]"}, "take one node per run, got 'gpu0[7:9]'"),
    ({"clusterdos_upgrade_batch": 0}, "a whole number >= 1, got '0'"),
    ({"clusterdos_reset_confirm": "yes please"}, "clusterdos_reset_confirm must be true or false"),
    ({"validate_checks": "all"}, "validate_checks must be a list"),
], ids=["version-with-v", "version-latest", "version-two-parts", "version-empty", "unknown-addon",
        "addons-not-a-list", "node-with-space", "node-pattern", "batch-zero", "reset-not-bool", "checks-not-a-list"])
def test_bad_answers_are_rejected_with_a_clear_message(tmp_path, extra_vars, message):
    result = run_checks(tmp_path, extra_vars)
    assert result.returncode != 0
    assert message in result.stdout, result.stdout + result.stderr
