"""A second site.yml on the built cluster changes no lab host (molecule's own idempotence
step cannot be used: the validation stage rewrites its report on the controller every
run, a change by design, so this test allows that one task on localhost and nothing else).
The fast path is off for this run (clusterdos_fast_path=false): every task runs again, as
in a molecule idempotence step; the fast path would skip the base stage and prove nothing
about its roles."""

from __future__ import annotations

import json

from conftest import run_playbook

REPORT_TASK = "Write the report (JUnit XML, JSON, HTML)"


def test_second_site_run_changes_nothing_on_any_host():
    res = run_playbook("playbooks/site.yml", "-e", '{"clusterdos_fast_path": false}',
                       env_extra={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    # The callback names tasks "role : task"; the task's own name is what counts.
    changed = {(host, task["task"]["name"].split(" : ", 1)[-1]) for play in doc["plays"] for task in play["tasks"]
               for host, result in task["hosts"].items() if result.get("changed")}
    assert changed <= {("localhost", REPORT_TASK)}, sorted(changed)
    assert doc["stats"], "no hosts ran"
    # The base role's tasks ran (the fast path would have ended its play at once).
    assert any(task["task"]["name"].split(" : ", 1)[0].endswith("base") and " : " in task["task"]["name"]
               for play in doc["plays"] for task in play["tasks"]), "the base role did not run"
    assert all(stats["changed"] == 0 for host, stats in doc["stats"].items() if host != "localhost"), doc["stats"]
