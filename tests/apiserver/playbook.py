"""Run the addons role (or one of its task files, or any tasks) with ansible-playbook on localhost, as a site would.

The venv's helm and kubectl are on PATH, the collection resolves from this checkout, and
the role's own variables are passed as extra vars (the precedence of group_vars over the
role's defaults is the same).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
SAMPLE_ADDONS = ROOT / "inventories" / "sample" / "group_vars" / "all" / "addons.yml"


@dataclass
class Run:
    proc: subprocess.CompletedProcess
    results: dict

    @property
    def ok(self) -> bool:
        return self.proc.returncode == 0

    @property
    def changed(self) -> int:
        m = re.search(r"^localhost\s+:.*?changed=(\d+)", self.proc.stdout, re.MULTILINE)
        assert m, self.proc.stdout[-3000:]
        return int(m.group(1))

    def recap(self) -> dict:
        """PLAY RECAP: host -> {ok, changed, unreachable, failed, skipped, ...} as numbers."""
        found = {}
        for host, counts in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", self.proc.stdout, re.MULTILINE):
            found[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
        assert found, self.tail()
        return found

    def tail(self, n: int = 6000) -> str:
        return (self.proc.stdout + self.proc.stderr)[-n:]


def sample_addon_vars() -> dict:
    """What inventories/sample sets for the add-ons stage."""
    return yaml.safe_load(SAMPLE_ADDONS.read_text())


def run_role(tmp_path: Path, role_vars: dict, tasks_from: str = "main.yml", check: bool = False, diff: bool = False,
             dump: str | None = None) -> Run:
    """Play the addons role's TASKS_FROM on localhost; DUMP names a variable to write out as JSON."""
    tasks = [{"name": "Apply the addons role", "ansible.builtin.include_role": {
        "name": "clusterdos.cluster.addons", "tasks_from": tasks_from, "public": True}}]
    return run_play(tmp_path, tasks, role_vars, check=check, diff=diff, dump=dump)


def run_play(tmp_path: Path, tasks: list, extra_vars: dict, check: bool = False, diff: bool = False,
             dump: str | None = None, host_vars: dict | None = None, groups: dict | None = None) -> Run:
    """TASKS in one play on localhost (in GROUPS too, with HOST_VARS), EXTRA_VARS as -e; DUMP as in run_role."""
    out = tmp_path / "dump.json"
    if out.exists():
        out.unlink()
    tasks = list(tasks)
    if dump:
        tasks.append({"name": "Write out a value", "ansible.builtin.copy": {
            "content": "{{ " + dump + " | to_json }}", "dest": str(out), "mode": "0600"}, "check_mode": False,
            # The test's own file: not a change of the role's, so the recap counts only the role.
            "changed_when": False})
    play = [{"name": "under test", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    local = dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **(host_vars or {}))
    inventory = {"all": {"hosts": {"localhost": local},
                         "children": {g: {"hosts": {h: None for h in members}} for g, members in (groups or {}).items()}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "vars.json").write_text(json.dumps(extra_vars))
    return _ansible_playbook(tmp_path, ["-i", str(tmp_path / "inventory.yml"), "-e", f"@{tmp_path / 'vars.json'}",
                                        str(tmp_path / "play.yml")], check, diff, out)


def _ansible_playbook(tmp_path: Path, args: list, check: bool, diff: bool, out: Path) -> Run:
    """ansible-playbook ARGS (with --check/--diff) in TMP_PATH; the values the run wrote to OUT."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    argv = [str(VENV_BIN / "ansible-playbook"), *args] + (["--check"] if check else []) + (["--diff"] if diff else [])
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, check=False, timeout=1500)
    results = json.loads(out.read_text()) if out.exists() else {}
    return Run(proc, results)


def site_inventory(hosts: dict, groups: dict, all_vars: dict) -> dict:
    """An inventory as a site writes it: HOSTS (name -> host vars), GROUPS (name -> host names), ALL_VARS.

    A host whose vars say ``ansible_connection: local`` is played on this machine (the first
    control plane, whose only job in these plays is to talk to the test API server); give every
    other host an address where nothing listens (UNREACHABLE if a play ever contacted it).
    """
    return {"all": {"vars": all_vars, "hosts": hosts,
                    "children": {g: {"hosts": {h: {} for h in members}} for g, members in groups.items()}}}


# Where nothing listens: a play that contacted such a host would fail UNREACHABLE.
NOWHERE = {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody",
           "ansible_ssh_common_args": "-o ConnectTimeout=2 -o BatchMode=yes"}
# The first control plane, played here with the venv's Python (kubernetes.core's client is there).
HERE_HOST = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def run_playbook(tmp_path: Path, playbook: str, inventory: dict, check: bool = False, diff: bool = False,
                 dump: dict | None = None, extra_args: list | None = None) -> Run:
    """playbooks/PLAYBOOK, unchanged, with INVENTORY, as a site runs it (its preflight included).

    The file run is a wrapper that imports the real playbook and then, when DUMP maps a name to
    ``[host, variable]``, writes those values out (``Run.results``); the real playbook's plays and
    tasks are recorded under their own file by the task_coverage callback.
    """
    out = tmp_path / "dump.json"
    if out.exists():
        out.unlink()
    wrapper = [{"name": "The playbook under test", "ansible.builtin.import_playbook": str(ROOT / "playbooks" / playbook)}]
    if dump:
        content = "{{ {" + ", ".join("%r: hostvars[%r][%r] | default(None)" % (k, h, v) for k, (h, v) in dump.items()) \
            + "} | to_json }}"
        wrapper.append({"name": "Write out values (the test's)", "hosts": "localhost", "connection": "local",
                        "gather_facts": False, "tasks": [{"name": "Write out values", "ansible.builtin.copy": {
                            "content": content, "dest": str(out), "mode": "0600"},
                            "check_mode": False, "changed_when": False}]})
    (tmp_path / "site.yml").write_text(yaml.safe_dump(wrapper, sort_keys=False))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    return _ansible_playbook(tmp_path, ["-i", str(tmp_path / "hosts.yml"), str(tmp_path / "site.yml"), *(extra_args or [])],
                             check, diff, out)
