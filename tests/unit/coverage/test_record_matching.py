"""Records must count for the task that produced them, and only for it.

- A delegated task with a loop: ansible gives the delegation per item only, so the
  task_coverage callback must read it there (a controller-side check looped over archives
  or binaries, delegated to localhost, is a real run; it used to look like a role played
  on the controller by a unit-test harness, and did not count).
- A record written before its file changed: another task may sit at its file:line now;
  scripts/coverage.py compares the recorded name and leaves such a record unmatched.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("clusterdos_coverage_matching", ROOT / "scripts" / "coverage.py")
cov = importlib.util.module_from_spec(_SPEC)
sys.modules["clusterdos_coverage_matching"] = cov
_SPEC.loader.exec_module(cov)

TASKS = """\
---
- name: Checksum each archive on the controller
  ansible.builtin.stat:
    path: "/etc/{{ item }}"
  loop: [hostname, passwd]
  delegate_to: localhost
  run_once: true

- name: Read one file on the controller
  ansible.builtin.stat:
    path: /etc/hostname
  delegate_to: localhost

- name: "Progress: {{ 'demo' }}"
  ansible.builtin.debug:
    msg: templated name
  delegate_to: localhost
"""

PLAYBOOK = """\
---
- name: A play whose hosts are not the controller
  hosts: managed
  gather_facts: false
  tasks:
    - name: Apply the role
      ansible.builtin.include_role:
        name: demo
"""


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "collection"
    for rel, text in {"roles/demo/tasks/main.yml": TASKS, "playbooks/stage.yml": PLAYBOOK}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_delegated_loop_is_recorded_as_delegated_and_counts(tmp_path):
    root = _tree(tmp_path)
    records = tmp_path / "records"
    inventory = tmp_path / "inventory.ini"
    # A managed host that is never contacted: every task is delegated to the controller.
    inventory.write_text("[managed]\nfar ansible_host=192.0.2.7 ansible_python_interpreter=%s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               CLUSTERDOS_COVERAGE_DIR=str(records), CLUSTERDOS_COVERAGE_SCENARIO="unit-delegated",
               ANSIBLE_NOCOLOR="1", ANSIBLE_ROLES_PATH=str(root / "roles"))
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inventory),
                           str(root / "playbooks" / "stage.yml")],
                          capture_output=True, text=True, env=env, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for f in records.glob("*.jsonl") for line in f.read_text().splitlines()]
    by_task = {r["task"].split(" : ", 1)[-1]: r for r in lines if r["role"] == "demo"}
    assert set(by_task) == {"Checksum each archive on the controller", "Read one file on the controller",
                            "Progress: demo"}
    for record in by_task.values():
        assert record["delegated_to"] == "localhost" and record["controller"] is True, record
    # Played from a playbook of playbooks/ on managed hosts: delegated, so run for real.
    real_root = os.path.realpath(root)
    for record in lines:
        record["file"] = os.path.relpath(record["file"], real_root)
        record["play_file"] = os.path.relpath(record["play_file"], real_root)
    tasks = cov.enumerate_tasks(root)
    assert cov.merge(tasks, lines) == []
    assert {t.where: t.ran for t in tasks} == {
        "roles/demo/tasks/main.yml:2": True, "roles/demo/tasks/main.yml:9": True,
        "roles/demo/tasks/main.yml:14": True, "playbooks/stage.yml:6": True}


def _record(line, task, role="demo"):
    return {"file": "roles/demo/tasks/main.yml", "line": line, "task": task, "role": role, "status": "ok",
            "scenario": "s1", "controller": False, "play_file": "molecule/s1/converge.yml",
            "play_hosts": ["all"], "delegated_to": ""}


def test_a_record_naming_another_task_is_stale_and_does_not_count(tmp_path):
    tasks = cov.enumerate_tasks(_tree(tmp_path))
    unmatched = cov.merge(tasks, [
        _record(2, "clusterdos.cluster.demo : Checksum each archive on the controller"),  # FQCN prefix
        _record(9, "demo : Something that used to be at line 9"),                          # stale
        _record(14, "demo : Progress: demo"),                                              # templated name
    ])
    ran = {t.where: t.ran for t in tasks}
    assert ran["roles/demo/tasks/main.yml:2"] and ran["roles/demo/tasks/main.yml:14"]
    assert not ran["roles/demo/tasks/main.yml:9"]
    assert [(r["line"], r["task"]) for r in unmatched] == [(9, "demo : Something that used to be at line 9")]


def test_records_without_a_name_or_of_unnamed_tasks_still_match(tmp_path):
    tasks = cov.enumerate_tasks(_tree(tmp_path))
    record = _record(2, "")
    del record["task"]
    assert cov.merge(tasks, [record]) == []
    assert {t.where: t.ran for t in tasks}["roles/demo/tasks/main.yml:2"]
