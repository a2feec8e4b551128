"""awx/preflight_survey.yml rejects survey answers of the wrong shape with a clear message.

Runs the real task file with ansible-playbook on the controller (nothing else is contacted),
included the way playbooks/preflight.yml includes it. Every case is one host of a single
run (connection local), its survey answers that host's variables: the checks read each
variable only where it is set, per host, so one run asks what thirteen runs asked (a
process start-up and a parse each) and each case still passes or fails on its own host's
result. AWX passes survey answers as extra vars; the checks see the same values either way.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from playbook_outcome import host_outcomes, run_json

ROOT = Path(__file__).resolve().parents[3]

GOOD = {
    "nothing-set": {},
    "every-survey-answer-good": {
        "clusterdos_kubernetes_version": "1.34.1", "addons_enabled": ["cert_manager", "metrics_server"],
        "node": "gpu07", "clusterdos_upgrade_batch": 2, "clusterdos_reset_confirm": "true",
        "validate_checks": ["kubernetes", "slurm"], "validate_strict": False},
}
BAD = {
    "version-with-v": ({"clusterdos_kubernetes_version": "v1.34.1"},
                       "clusterdos_kubernetes_version must be a version X.Y.Z such as 1.34.1"),
    "version-latest": ({"clusterdos_kubernetes_version": "latest"}, "got 'latest'"),
    "version-two-parts": ({"clusterdos_kubernetes_version": "1.34"}, "got '1.34'"),
    "version-empty": ({"clusterdos_kubernetes_version": ""}, "got ''"),
    "unknown-addon": ({"addons_enabled": ["cert_manager", "grafana"]}, "Unknown add-on(s): grafana."),
    "addons-not-a-list": ({"addons_enabled": "cert_manager"}, "addons_enabled must be a list of add-on names"),
    "node-with-space": ({"node": "gpu07 gpu08"}, "node must be one inventory host name (e.g. gpu07)"),
    "node-pattern": ({"node": "gpu0[7:9]"}, "take one node per run, got 'gpu0[7:9]'"),
    "batch-zero": ({"clusterdos_upgrade_batch": 0}, "a whole number >= 1, got '0'"),
    "reset-not-bool": ({"clusterdos_reset_confirm": "yes please"}, "clusterdos_reset_confirm must be true or false"),
    "checks-not-a-list": ({"validate_checks": "all"}, "validate_checks must be a list"),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    """Every case's outcome from one run: {case: {"failed": bool, "msgs": [...]}}."""
    tmp = tmp_path_factory.mktemp("survey")
    cases = {**GOOD, **{name: answers for name, (answers, _) in BAD.items()}}
    inventory = {"all": {"hosts": {name: {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                                          **answers} for name, answers in cases.items()}}}
    (tmp / "hosts.yml").write_text(yaml.safe_dump(inventory))
    playbook = tmp / "preflight.yml"
    playbook.write_text(yaml.safe_dump([{
        "name": "Survey checks", "hosts": "all", "gather_facts": False,
        "tasks": [{"name": "Check survey answers (AWX)",
                   "ansible.builtin.include_tasks": str(ROOT / "awx" / "preflight_survey.yml")}]}]))
    proc = run_json(tmp / "hosts.yml", playbook)
    return host_outcomes(json.loads(proc.stdout), cases, proc.stdout[-2000:] + proc.stderr[-2000:])


@pytest.mark.parametrize("case", list(GOOD))
def test_good_answers_pass(results, case):
    assert not results[case]["failed"], results[case]["msgs"]


@pytest.mark.parametrize(("case", "message"), [(name, message) for name, (_, message) in BAD.items()], ids=list(BAD))
def test_bad_answers_are_rejected_with_a_clear_message(results, case, message):
    assert results[case]["failed"]
    assert any(message in m for m in results[case]["msgs"]), results[case]["msgs"]
