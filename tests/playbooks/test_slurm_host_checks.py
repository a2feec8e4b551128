"""The Slurm host checks' controller read (roles/slurm/tasks/preflight.yml), every branch,
with a stand-in `scontrol`.

One shell call per controller reads where its current slurm.conf keeps slurmctld's state,
compares that state with the one at slurm_state_save_location, reads the saved cluster
name, and has the installed Slurm parse the slurm.conf the run would write. Here the
controller is this machine (a local connection), its slurm.conf and state directories
are temporary ones, and `scontrol` is a stand-in script that fails the way Slurm's parser
does when the file holds a key named `Bogus` (no Slurm is installed here). The real read
against a running slurmctld, and a real parse error, are in molecule/slurm_cluster
(test_a_moved_state_save_location_stops_until_the_state_is_copied,
test_a_misspelt_slurm_conf_key_stops_the_run); the branch where the new place holds an
older state runs only here. The port check reads a real listener with this machine's `ss`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"

PLAYBOOK = """
- name: The Slurm host checks, as playbooks/slurm.yml runs them alone
  hosts: slurm_controller
  gather_facts: false
  tasks:
    - name: Check (slurm role, preflight)
      ansible.builtin.include_role:
        name: clusterdos.cluster.slurm
        tasks_from: preflight
        rolespec_validate: false
"""

# Parses like Slurm's: a line whose key it does not know stops it (rc 1, two lines on stderr).
STAND_IN_SCONTROL = """#!/bin/sh
if grep -q '^Bogus=' "$SLURM_CONF"; then
  echo "scontrol: error: _parse_next_key: Parsing error at unrecognized key: Bogus" >&2
  echo "scontrol: fatal: Unable to process configuration file" >&2
  exit 1
fi
echo localhost
"""


def run_checks(tmp_path: Path, *, old_state: str | None, new_state: str | None, same_place: bool = False,
               scontrol: bool = True, extra: dict | None = None) -> subprocess.CompletedProcess[str]:
    """Run the checks with slurm.conf naming OLD as the state location (job_state holding
    OLD_STATE, none where None) and slurm_state_save_location NEW (job_state NEW_STATE)."""
    old, new = tmp_path / "old-state", tmp_path / ("old-state" if same_place else "new-state")
    conf_dir = tmp_path / "etc-slurm"
    for directory in (old, new, conf_dir):
        directory.mkdir(exist_ok=True)
    (conf_dir / "slurm.conf").write_text(f"ClusterName=lab\nStateSaveLocation={old}\n")
    for directory, state in ((old, old_state), (new, new_state)):
        if state is not None:
            (directory / "job_state").write_text(state)
            (directory / "clustername").write_text("lab\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if scontrol:
        (bin_dir / "scontrol").write_text(STAND_IN_SCONTROL)
        (bin_dir / "scontrol").chmod(0o755)
    else:
        (bin_dir / "scontrol").unlink(missing_ok=True)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
             "clusterdos_node_ip": "127.0.0.1"}
    inventory = {"all": {"children": {"slurm_controller": {"hosts": {"ctl": local}}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    variables = {"slurm_cluster_name": "lab", "slurm_state_save_location": str(new),
                 "__slurm_conf_dir": str(conf_dir), **(extra or {})}
    # Only the stand-in and the system's own tools: no real Slurm command may answer.
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{bin_dir}:{BIN}:/usr/bin:/bin")
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", json.dumps(variables)], capture_output=True, text=True, env=env, check=False, cwd=ROOT)


def flat(result: subprocess.CompletedProcess[str]) -> str:
    return " ".join(result.stdout.split())


@pytest.mark.parametrize(("case", "old_state", "new_state", "same_place"), [
    ("unmoved", "jobs", "jobs", True),
    ("copied while slurmctld was stopped", "jobs", "jobs", False),
    ("a first converge: no state anywhere", None, None, False),
    ("the old place never held state", None, None, True),
])
def test_state_that_stays_or_was_copied_passes_with_a_stand_in_scontrol(tmp_path, case, old_state, new_state, same_place):
    result = run_checks(tmp_path, old_state=old_state, new_state=new_state, same_place=same_place)
    assert result.returncode == 0, (case, result.stdout[-3000:])


@pytest.mark.parametrize(("new_state", "holds", "older"), [
    (None, "no state", False),
    ("older jobs", "another, older state", True),
])
def test_state_left_behind_stops_the_run_with_a_stand_in_scontrol(tmp_path, new_state, holds, older):
    """Moved to an empty place, or to one holding other state (a directory used before):
    stopped, naming both places, what the new one holds and the copy that fixes it."""
    result = run_checks(tmp_path, old_state="current jobs", new_state=new_state)
    text = flat(result)
    assert result.returncode != 0, result.stdout[-3000:]
    old, new = tmp_path / "old-state", tmp_path / "new-state"
    assert (f"ctl: slurm_state_save_location is {new}, but slurmctld keeps its state in {old}: restarted on {new}, "
            f"which holds {holds}, it would lose its jobs") in text, text[-3000:]
    assert ("bring back the older ones kept there" in text) is older
    assert f"cp -a {old}/. {new}/" in text and "Nothing was changed." in text


def test_a_slurm_conf_slurm_cannot_parse_stops_the_run_with_a_stand_in_scontrol(tmp_path):
    """The parse error the installed scontrol prints is quoted, its "scontrol: " prefix and
    the temporary file's name left out; without scontrol (a first converge) nothing is
    parsed and the run goes on."""
    bogus = {"slurm_config": {"Bogus": "yes"}}
    result = run_checks(tmp_path, old_state="jobs", new_state="jobs", same_place=True, extra=bogus)
    text = flat(result)
    assert result.returncode != 0, result.stdout[-3000:]
    assert ("ctl: Slurm cannot read the files this run would write (slurm.conf: error: _parse_next_key: Parsing error at "
            "unrecognized key: Bogus; fatal: Unable to process configuration file).") in text, text[-3000:]
    assert "/tmp/" not in text.split("Slurm cannot read")[1].split("Nothing was changed")[0]
    without = run_checks(tmp_path, old_state="jobs", new_state="jobs", same_place=True, extra=bogus, scontrol=False)
    assert without.returncode == 0, without.stdout[-3000:]


def test_a_port_another_program_listens_on_stops_the_run(tmp_path):
    """A real listener (a Python web server on a free local port) on the port slurm_config gives
    slurmctld, read with this machine's own `ss`: stopped, naming the host, the port, the program
    and its pid; a range holding that port is read port by port; a free port passes."""
    import shutil
    import socket

    if not shutil.which("ss"):
        pytest.skip("no ss (iproute2) on this machine: the read checks no port without it")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Listening only once the server's process runs Python (its name before that is pytest's).
        for _ in range(600):
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            pytest.fail(f"the web server did not listen on port {port}")
        program = Path(f"/proc/{server.pid}/comm").read_text().strip()
        for value in (port, f"{port - 1}-{port}"):
            result = run_checks(tmp_path, old_state="jobs", new_state="jobs", same_place=True,
                                extra={"slurm_config": {"SlurmctldPort": value}})
            text = flat(result)
            assert result.returncode != 0, result.stdout[-3000:]
            assert (f"On ctl, SlurmctldPort {port} is taken by another program, {program} (pid {server.pid}): slurmctld "
                    "could not listen on it and would stop at its next start. Stop that program, or give slurmctld a free port "
                    "(slurm_config: {SlurmctldPort: ...}).") in text, text[-3000:]
    finally:
        server.terminate()
        server.wait()
    free = run_checks(tmp_path, old_state="jobs", new_state="jobs", same_place=True,
                      extra={"slurm_config": {"SlurmctldPort": port}})
    assert free.returncode == 0, free.stdout[-3000:]
