"""The controller preflight names a host variable that cannot be evaluated (a template that
fails in the inventory), instead of failing on its own message: a real ansible-playbook
run of playbooks/preflight.yml, no host contacted."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from playbook_outcome import run_json

ROOT = Path(__file__).resolve().parents[4]


def test_a_host_var_that_cannot_be_evaluated_is_named_before_any_host_is_contacted(tmp_path):
    # A site writes another host's variable into a host var: hostvars is not defined where
    # inventory variables are evaluated, so the value cannot be had.
    inventory = {"all": {
        "vars": {"clusterdos_package_proxy": "http://10.0.0.1:3142"},
        "hosts": {
            "n1": {"ansible_host": "10.0.0.11"},
            "n2": {"ansible_host": "10.0.0.12", "clusterdos_package_proxy": "",
                   "clusterdos_package_mirror": "{{ hostvars['n1']['clusterdos_package_proxy'] }}/debian"}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    run = run_json(tmp_path / "hosts.yml", ROOT / "playbooks" / "preflight.yml", timeout=300)
    assert run.returncode != 0
    out = json.loads(run.stdout)
    failed = [(t["task"]["name"], h, r.get("msg", "")) for p in out["plays"] for t in p["tasks"]
              for h, r in t["hosts"].items() if r.get("failed")]
    assert len(failed) == 1, failed
    task, host, msg = failed[0]
    assert (task, host) == ("Check the inventory (hosts, YAML keys, names, addresses, proxy, every host's variables)",
                            "localhost"), failed
    assert "nothing changed on any host" in msg, msg
    assert "clusterdos_package_mirror (on n2): cannot be evaluated: " in msg and "hostvars" in msg, msg
    # No host was contacted (their addresses lead nowhere: a connection would be
    # unreachable); what ran for them ran on the controller (assert is an action plugin).
    results = [(h, r) for p in out["plays"] for t in p["tasks"] for h, r in t["hosts"].items()]
    assert not [h for h, r in results if r.get("unreachable")], results
    assert {r.get("action") for h, r in results if h != "localhost"} <= {"ansible.builtin.assert"}, results
