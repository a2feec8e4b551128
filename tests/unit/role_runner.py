"""Run a role's tasks on this machine (connection local) through ansible-playbook.

Used for read-only entry points (validate.yml) and for computing what a role would
apply; nothing here changes this machine.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def run_role(tmp_path: Path, role: str, tasks_from: str, role_vars: dict, groups: dict | None = None,
             gather_facts: bool = False, dump: list[str] | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    """Play ROLE's TASKS_FROM on localhost with ROLE_VARS; return the run and the values named in DUMP."""
    inventory = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                                 "ansible_python_interpreter": os.environ.get("PYTHON", "/usr/bin/python3")}},
                         "children": {name: {"hosts": {h: {"ansible_connection": "local"} for h in hosts}}
                                      for name, hosts in (groups or {}).items()}}}
    out = tmp_path / "dump.json"
    tasks = [{"name": "Run the role", "ansible.builtin.include_role": {"name": f"clusterdos.cluster.{role}",
                                                                    "tasks_from": tasks_from, "public": True}}]
    if dump:
        tasks.append({"name": "Dump values", "ansible.builtin.copy": {
            "content": "{{ {" + ", ".join(f"'{v}': {v}" for v in dump) + "} | to_json }}", "dest": str(out),
            "mode": "0600"}})
    play = [{"name": "unit", "hosts": "localhost", "gather_facts": gather_facts, "vars": role_vars, "tasks": tasks}]
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    binary = ROOT / ".venv" / "bin" / "ansible-playbook"
    proc = subprocess.run([str(binary), "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml")],
                          capture_output=True, text=True, env=env, check=False, cwd=tmp_path)
    values = json.loads(out.read_text()) if out.exists() else {}
    return proc, values

