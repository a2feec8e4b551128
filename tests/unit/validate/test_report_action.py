"""cluster_report's action plugin through ansible-playbook: on the controller (a local
connection, octal mode) the report is written in-process; with a symbolic mode the module
runs. Both paths must write the same files and report the same changes; the in-process path
fails with the module's own message (test_validate_modules checks the module's)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from playbook_outcome import run_json

PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: in-process
      clusterdos.cluster.cluster_report:
        results: "{{ results }}"
        dest: "{{ dir }}/controller"
        generated: "2026-12-02T10:00:00Z"
        cluster_name: lab
        releases: "{{ releases | default([]) }}"
        stats: "{{ stats_a | default(omit) }}"
      vars:
        # No Python there: only a report written in-process can succeed.
        ansible_python_interpreter: /nonexistent/python3
    - name: module
      clusterdos.cluster.cluster_report:
        results: "{{ results }}"
        dest: "{{ dir }}/module"
        generated: "2026-12-02T10:00:00Z"
        cluster_name: lab
        mode: "u=rw,g=r,o=r"
        stats: "{{ stats_b | default(omit) }}"
"""


def _play(tmp_path: Path, results: list, *args: str) -> dict:
    """The json callback's whole output of PLAY on one local host."""
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local"}},
                                             "vars": {"ansible_python_interpreter": sys.executable,
                                                      "results": results, "dir": str(tmp_path)}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    return json.loads(run_json(inventory, tmp_path / "play.yml", *args).stdout)


def _run(tmp_path: Path, results: list, *args: str) -> dict:
    tasks = _play(tmp_path, results, *args)["plays"][0]["tasks"]
    return {t["task"]["name"]: t["hosts"]["h1"] for t in tasks}


def _files(directory: Path) -> dict:
    return {p.name: (p.read_text(), p.stat().st_mode & 0o777) for p in sorted(directory.iterdir())}


def test_in_process_and_module_write_the_same_report(tmp_path: Path):
    results = [{"name": "slurm.srun", "status": "passed", "duration": 0.5, "host": "login1"}]
    checked = _run(tmp_path, results, "--check")
    assert checked["in-process"]["changed"] is True and checked["module"]["changed"] is True
    assert not (tmp_path / "controller").exists() and not (tmp_path / "module").exists()

    first = _run(tmp_path, results)
    assert first["in-process"]["changed"] is True and first["module"]["changed"] is True
    assert first["in-process"]["summary"] == first["module"]["summary"] == {
        "passed": 1, "failed": 0, "skipped": 0, "total": 1}
    controller, module = _files(tmp_path / "controller"), _files(tmp_path / "module")
    assert sorted(controller) == ["validation-junit.xml", "validation.html", "validation.json"]
    assert controller == module
    assert {mode for _, mode in controller.values()} == {0o644}

    again = _run(tmp_path, results)
    assert again["in-process"]["changed"] is False and again["module"]["changed"] is False

    # A mode moved by hand is put back, and that is a change.
    (tmp_path / "controller" / "validation.json").chmod(0o600)
    moved = _run(tmp_path, results)
    assert moved["in-process"]["changed"] is True and moved["module"]["changed"] is False
    assert (tmp_path / "controller" / "validation.json").stat().st_mode & 0o777 == 0o644

    # Another outcome is a change in both.
    failed = _run(tmp_path, [{**results[0], "status": "failed"}])
    assert failed["in-process"]["changed"] is True and failed["module"]["changed"] is True


def test_in_process_refuses_results_it_cannot_read_with_the_modules_message(tmp_path: Path):
    out = _run(tmp_path, [{"name": "x", "status": "green"}])
    message = "results must come from cluster_validate: result 0 has no name or an unknown status ('green')"
    assert out["in-process"]["failed"] is True and out["in-process"]["msg"] == message
    # The play stops at the first failure: the module path's message is the module test's.
    assert "module" not in out


def test_in_process_refuses_bad_arguments(tmp_path: Path):
    out = _run(tmp_path, "not a list")
    assert out["in-process"]["failed"] is True
    assert "results" in out["in-process"]["msg"]


def test_both_paths_hand_the_report_to_awx_as_custom_stats(tmp_path: Path, monkeypatch):
    """What AWX keeps as the job's artifacts (set_stats's custom stats), read from Ansible's
    own json callback: each path's stat has the summary, files, failed checks, every check
    and the releases; without `stats` a task adds none."""
    results = [{"name": "slurm.srun", "status": "passed", "host": "login1"},
               {"name": "slurm.mpi", "status": "failed", "host": "login1", "detail": "no pmix"}]
    # The json callback lists custom stats when asked to (AWX reads them from the run itself).
    monkeypatch.setenv("ANSIBLE_SHOW_CUSTOM_STATS", "1")
    assert _play(tmp_path, results)["global_custom_stats"] == {}
    extra = json.dumps({"stats_a": "report_a", "stats_b": "report_b", "releases": [{"name": "kueue", "action": "unchanged"}]})
    stats = _play(tmp_path, results, "-e", extra)["global_custom_stats"]
    assert sorted(stats) == ["report_a", "report_b"], stats
    for key, where in (("report_a", "controller"), ("report_b", "module")):
        stat = stats[key]
        assert stat["summary"] == {"passed": 1, "failed": 1, "skipped": 0, "total": 2}, stat
        assert stat["files"]["json"] == str(tmp_path / where / "validation.json")
        assert [c["name"] for c in stat["failed"]] == ["slurm.mpi"]
        assert [c["name"] for c in stat["checks"]] == ["slurm.srun", "slurm.mpi"]
    assert stats["report_a"]["releases"] == [{"name": "kueue", "action": "unchanged"}]
    assert stats["report_b"]["releases"] == []
