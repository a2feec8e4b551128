"""scripts/coverage.py: the task enumerator, the merge of callback records, exemptions,
and a real ansible-playbook run with the task_coverage callback (file:line agreement)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("clusterdos_coverage", ROOT / "scripts" / "coverage.py")
cov = importlib.util.module_from_spec(_SPEC)
sys.modules["clusterdos_coverage"] = cov
_SPEC.loader.exec_module(cov)

ROLE_TASKS = """\
---
- name: First
  ansible.builtin.debug:
    msg: one

- name: Imported (static, never a result)
  ansible.builtin.import_tasks: other.yml

- name: A block
  when: true
  block:
    - name: In the block
      ansible.builtin.command: "true"
      changed_when: false
  rescue:
    - name: In rescue
      ansible.builtin.debug:
        msg: rescued
  always:
    - name: Nested
      block:
        - name: Deep
          ansible.builtin.debug:
            msg: deep

- name: Flush (meta, no result)
  ansible.builtin.meta: flush_handlers

- name: Skipped
  ansible.builtin.debug:
    msg: never
  when: false

- name: Included
  ansible.builtin.include_tasks: other.yml

- name: Delegated to the controller
  ansible.builtin.command: "true"
  changed_when: false
  delegate_to: localhost
"""

OTHER_TASKS = """\
---
# a comment first
- ansible.builtin.debug:
    msg: unnamed
  changed_when: true
  notify: Say hi
"""

HANDLERS = """\
---
- name: Say hi
  ansible.builtin.debug:
    msg: hi
"""

PLAYBOOK = """\
---
- name: Earlier stage
  ansible.builtin.import_playbook: other.yml

- name: On the controller
  hosts: localhost
  gather_facts: false
  pre_tasks:
    - name: Pre
      ansible.builtin.debug:
        msg: pre
  tasks:
    - name: Apply the role
      ansible.builtin.include_role:
        name: demo
  handlers:
    - name: Play handler
      ansible.builtin.debug:
        msg: h
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "collection"
    for rel, text in {"roles/demo/tasks/main.yml": ROLE_TASKS, "roles/demo/tasks/other.yml": OTHER_TASKS,
                      "roles/demo/handlers/main.yml": HANDLERS, "playbooks/stage.yml": PLAYBOOK,
                      "playbooks/other.yml": "---\n- name: Empty\n  hosts: all\n  gather_facts: false\n  tasks: []\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _places(tasks):
    return [(t.where, t.name) for t in tasks]


def test_enumerate_opens_blocks_and_leaves_out_imports_and_meta(tree):
    tasks = cov.enumerate_tasks(tree)
    assert _places(tasks) == [
        ("roles/demo/tasks/main.yml:2", "First"),
        ("roles/demo/tasks/main.yml:12", "In the block"),
        ("roles/demo/tasks/main.yml:16", "In rescue"),
        ("roles/demo/tasks/main.yml:22", "Deep"),
        ("roles/demo/tasks/main.yml:29", "Skipped"),
        ("roles/demo/tasks/main.yml:34", "Included"),
        ("roles/demo/tasks/main.yml:37", "Delegated to the controller"),
        ("roles/demo/tasks/other.yml:3", ""),
        ("roles/demo/handlers/main.yml:2", "Say hi"),
        ("playbooks/stage.yml:9", "Pre"),
        ("playbooks/stage.yml:13", "Apply the role"),
        ("playbooks/stage.yml:17", "Play handler"),
    ]
    assert [t.handler for t in tasks if t.handler] == [True, True]
    assert {t.group for t in tasks} == {"role demo", "playbook stage.yml"}
    assert tasks[-2].action == "ansible.builtin.include_role"


def _record(file, line, status="ok", **extra):
    record = {"file": file, "line": line, "status": status, "scenario": "s1", "controller": False,
              "play_file": "molecule/s1/converge.yml", "play_hosts": ["all"], "delegated_to": ""}
    record.update(extra)
    return record


@pytest.mark.parametrize("record, real", [
    (_record("f", 1), True),
    (_record("f", 1, "changed"), True),
    (_record("f", 1, "failed"), True),
    (_record("f", 1, "skipped"), False),
    (_record("f", 1, "unreachable"), False),
    # a unit-test harness playing a role on localhost: rendering, not a real run
    (_record("f", 1, controller=True, play_file="/tmp/x/play.yml", play_hosts=["localhost"]), False),
    # a role task on localhost from a shipped playbook whose play targets hosts
    (_record("f", 1, controller=True, play_file="playbooks/base.yml", play_hosts=["all"]), False),
    # the controller by design: a playbooks/ play on localhost, or delegate_to localhost
    (_record("f", 1, controller=True, play_file="playbooks/preflight.yml", play_hosts=["localhost"]), True),
    (_record("f", 1, controller=True, play_file="playbooks/kubernetes.yml", play_hosts=["kube_node"],
             delegated_to="localhost"), True),
    (_record("f", 1, controller=True, play_file="playbooks/preflight.yml", play_hosts="localhost"), True),
])
def test_what_counts_as_run_for_real(record, real):
    assert cov.is_real(record) is real


def test_merge_counts_real_runs_per_scenario_and_reports_strays(tree):
    tasks = cov.enumerate_tasks(tree)
    unmatched = cov.merge(tasks, [
        _record("roles/demo/tasks/main.yml", 2),
        _record("roles/demo/tasks/main.yml", 2, "changed", scenario="s2"),
        _record("roles/demo/tasks/main.yml", 29, "skipped"),
        _record("roles/demo/tasks/main.yml", 12, controller=True, play_file="/tmp/p.yml", play_hosts=["localhost"]),
        _record("roles/demo/tasks/main.yml", 99),                       # no task there: stray
        _record("roles/demo/tasks/main.yml", 27, action="ansible.builtin.meta"),   # meta: not a stray
        _record("playbooks/stage.yml", 5, implicit=True),               # argument spec check
        _record("molecule/s1/converge.yml", 4),                         # not the collection's
    ])
    by_where = {t.where: t for t in tasks}
    assert by_where["roles/demo/tasks/main.yml:2"].runs == {"s1": ["ok"], "s2": ["changed"]}
    assert not by_where["roles/demo/tasks/main.yml:29"].ran
    assert by_where["roles/demo/tasks/main.yml:29"].other == {"s1": ["skipped"]}
    assert not by_where["roles/demo/tasks/main.yml:12"].ran
    assert [(r["file"], r["line"]) for r in unmatched] == [("roles/demo/tasks/main.yml", 99)]
    assert cov.totals(tasks) == {"total": 12, "run": 1, "exempt": 0, "never": 11}


def test_exemptions_by_file_name_and_line_and_their_problems(tree):
    tasks = cov.enumerate_tasks(tree)
    problems = cov.apply_exempt(tasks, [
        {"file": "roles/demo/tasks/other.yml", "needs": "gpu", "reason": "loads the driver"},
        {"file": "roles/demo/tasks/main.yml", "name": "Deep", "needs": "kvm", "reason": "starts a VM"},
        {"file": "roles/demo/tasks/main.yml:16", "needs": "infiniband", "reason": "an HCA"},
        {"file": "roles/demo/tasks/main.yml", "name": "Gone", "needs": "gpu", "reason": "renamed since"},
        {"file": "roles/demo/tasks/main.yml:2", "needs": "time", "reason": "not hardware"},
        {"file": "roles/demo/tasks/main.yml:2"},
    ])
    exempt = {t.where: t.exempt["needs"] for t in tasks if t.exempt}
    assert exempt == {"roles/demo/tasks/other.yml:3": "gpu", "roles/demo/tasks/main.yml:22": "kvm",
                      "roles/demo/tasks/main.yml:16": "infiniband"}
    assert len(problems) == 3
    assert "no task matches roles/demo/tasks/main.yml named 'Gone'" in problems[0]
    assert "needs must be one of gpu, infiniband, kvm, offline" in problems[1]
    assert "needs file and reason" in problems[2]


def _write_records(directory: Path, records):
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "s1-host-1-1.jsonl", "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
        handle.write("{not json\n")
        # an ad-hoc command: no task file; neither a task nor an unreadable line
        handle.write(json.dumps({"file": "", "line": 0, "status": "ok", "task": "ansible.builtin.ping"}) + "\n")


def test_main_fails_on_tasks_neither_run_nor_exempt_and_writes_html(tree, tmp_path, capsys):
    records = tmp_path / "records"
    _write_records(records, [_record(t.file, t.line) for t in cov.enumerate_tasks(tree) if t.name != "Deep"])
    exempt = tmp_path / "exempt.yml"
    page = tmp_path / "out" / "coverage.html"
    args = ["--root", str(tree), "--records", str(records), "--exempt", str(exempt), "--html", str(page)]
    assert cov.main(args) == 1
    out = capsys.readouterr().out
    assert "role demo                              8 / 9          0      1" in out
    assert "coverage: 11 of 12 tasks run for real (92%), 0 exempt (hardware/offline), 1 never run" in out
    assert "never run (1):\n  roles/demo/tasks/main.yml:22  Deep" in out
    assert "1 unreadable record line(s) skipped" in out
    assert cov.main(args + ["--no-fail"]) == 0
    capsys.readouterr()

    exempt.write_text("exempt:\n  - file: roles/demo/tasks/main.yml\n    name: Deep\n    needs: kvm\n"
                      "    reason: starts a guest under KVM\n")
    assert cov.main(args) == 0
    out = capsys.readouterr().out
    assert "exempt, need hardware or downloads this machine lacks (1):\n  roles/demo/tasks/main.yml:22  Deep  [kvm]" in out
    text = page.read_text()
    # The validation report's look, by reuse of its style sheet.
    from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import report
    assert report._CSS in text
    assert '<tr class="skipped"><td class="status">exempt (kvm)</td><td>roles/demo/tasks/main.yml:22</td>' in text
    assert '<span class="badge passed">11 of 12 run for real (92%)</span>' in text


def test_the_exemption_file_names_only_tasks_that_exist():
    tasks = cov.enumerate_tasks(ROOT)
    assert cov.apply_exempt(tasks, cov.load_exempt(cov.DEFAULT_EXEMPT)) == []


# A real run: ansible-playbook on localhost with the callback ------------------------------
def _ansible_playbook(tmp_path: Path, playbook: Path, inventory: str, records: Path | str, scenario: str):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               CLUSTERDOS_COVERAGE_DIR=str(records), CLUSTERDOS_COVERAGE_SCENARIO=scenario,
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_ROLES_PATH=str(playbook.parent.parent / "roles"))
    return subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", inventory, str(playbook)],
                          capture_output=True, text=True, env=env, check=False, cwd=tmp_path)


def test_callback_records_agree_with_the_enumerator_on_a_real_run(tree, tmp_path):
    """Every task the play reaches is recorded at the file:line the enumerator gives it,
    with its status; the play runs on localhost, so every record says controller."""
    records = tmp_path / "records"
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    proc = _ansible_playbook(tmp_path, tree / "playbooks" / "stage.yml", str(inventory), records, "unit-real-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [record_file] = list(records.glob("unit-real-run-*.jsonl"))
    lines = [json.loads(line) for line in record_file.read_text().splitlines()]
    real_root = os.path.realpath(tree)
    seen = {}
    for line in lines:
        assert line["controller"] is True and line["host"] == "localhost" and line["scenario"] == "unit-real-run"
        assert line["file"].startswith(real_root + "/"), line
        seen[(os.path.relpath(line["file"], real_root), line["line"])] = (line["task"], line["status"], line["role"])
    expected = {(t.file, t.line): t.name for t in cov.enumerate_tasks(tree)}
    assert set(seen) <= set(expected), set(seen) - set(expected)
    statuses = {"%s:%d" % k: v[1] for k, v in seen.items()}
    assert statuses == {
        "playbooks/stage.yml:9": "ok", "playbooks/stage.yml:13": "ok",
        "roles/demo/tasks/main.yml:2": "ok", "roles/demo/tasks/main.yml:12": "ok",
        "roles/demo/tasks/main.yml:22": "ok", "roles/demo/tasks/main.yml:29": "skipped",
        "roles/demo/tasks/main.yml:34": "ok", "roles/demo/tasks/other.yml:3": "changed",
        "roles/demo/tasks/main.yml:37": "ok", "roles/demo/handlers/main.yml:2": "ok",
    }
    for (file, line), (name, _status, role) in seen.items():
        # ansible names role tasks "ROLE : NAME"; an unnamed task by its action
        assert not expected[(file, line)] or name.endswith(expected[(file, line)]), (file, line, name)
        assert role == ("demo" if file.startswith("roles/") else "")


def test_callback_agrees_on_the_collection_itself(tmp_path):
    """slurm_preflight.yml (a play of playbooks/ on the controller that includes the slurm
    role's checks) on a two-host Slurm inventory: each record of the collection names a task the enumerator
    lists, at the same file:line and with the same name, and counts as run for real."""
    records = tmp_path / "records"
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[slurm_controller]\nctl ansible_host=10.0.0.1\n[slurm_compute]\nc1 ansible_host=10.0.0.2\n")
    proc = _ansible_playbook(tmp_path, ROOT / "playbooks" / "slurm_preflight.yml", str(inventory), records,
                             "unit-preflight")
    lines = [json.loads(line) for f in records.glob("*.jsonl") for line in f.read_text().splitlines()]
    assert lines, proc.stdout + proc.stderr
    tasks = {(t.file, t.line): t for t in cov.enumerate_tasks(ROOT)}
    ours = [r for r in lines if r["file"].startswith(("roles/", "playbooks/"))
            and not r.get("implicit") and r["action"] not in cov.NOT_RUNNABLE]
    assert any(r["file"].startswith("roles/") for r in ours) and any(r["file"].startswith("playbooks/") for r in ours)
    for record in ours:
        task = tasks.get((record["file"], record["line"]))
        assert task is not None, record
        assert record["task"].endswith(task.name), (record, task)
    assert cov.merge(list(tasks.values()), lines) == []
    assert any(t.ran for t in tasks.values())


def test_an_empty_records_dir_in_the_environment_records_nothing(tree, tmp_path):
    """CLUSTERDOS_COVERAGE_DIR="" (what benchmarks/slurm_peer.py sets) turns recording off:
    no record file anywhere, the run's directory included (it once received adhoc-*.jsonl)."""
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    proc = _ansible_playbook(tmp_path, tree / "playbooks" / "stage.yml", str(inventory), "", "unit-off")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.rglob("*.jsonl")) == []
