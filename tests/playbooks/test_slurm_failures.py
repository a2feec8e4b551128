"""The Slurm stage's failure policy, on the controller with hosts that do not answer.

playbooks/slurm.yml ends each play that has compute hosts with the slurm role's
`failures` step and gathers facts through its `facts` step. Here a small playbook runs
those two steps, then a second play, against local hosts and hosts whose SSH port is
closed (unreachable at once), and checks what the real run relies on:

  * a compute node that does not answer is left out, the run goes on for the others, and
    its hardware (its slurm.conf record) is the one saved at the last run;
  * a controller that does not answer stops the run before the next play;
  * more than slurm_compute_max_fail_percentage of the compute nodes failing stops it too;
  * adding nodes (the new_nodes step first, with a stand-in sinfo), the hosts already
    running Slurm are not probed for hardware: a compute node's comes from the saved file
    (probed in full only when the file lacks it); one whose address the inventory gives
    and whose record holds its OS family is not in the facts play at all (asked for its
    OS facts when a file from before lacks the family).
  * adding nodes, the primary controller alone finds the new nodes and sets the facts of
    the running compute nodes their record fully describes, contacting none of them
    (with a stand-in sinfo: no slurmctld here).

The whole Slurm stage with a stopped lab host: molecule/slurm_cluster (verify).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"

FIND_PLAY = """
- name: Find the nodes to add, as playbooks/stages/slurm.yml does in add_node mode
  hosts: "slurm_controller[0]"
  gather_facts: false
  tasks:
    - name: Find the new nodes (slurm role, new_nodes)
      ansible.builtin.include_role:
        name: clusterdos.cluster.slurm
        tasks_from: new_nodes
"""

PLAYBOOK = """
- name: Facts, as playbooks/slurm.yml gathers them
  # Adding nodes, as the stage's facts play: not the nodes the new_nodes step recorded.
  hosts: "{{ 'all:!slurm_recorded_nodes' if 'slurm_recorded_nodes' in groups else 'all' }}"
  gather_facts: false
  tasks:
    - name: Gather facts (slurm role, facts)
      ansible.builtin.include_role:
        name: clusterdos.cluster.slurm
        tasks_from: facts
    - name: Failure policy (slurm role, failures)
      ansible.builtin.include_role:
        name: clusterdos.cluster.slurm
        tasks_from: failures

- name: The next play
  hosts: all
  gather_facts: false
  tasks:
    - name: Show what the node records would be built from
      ansible.builtin.debug:
        msg: "NEXT-PLAY {{ inventory_hostname }} {{ groups['slurm_compute'] | map('extract', hostvars, ['ansible_facts', 'memtotal_mb'])
          | map('default', 'none') | join(',') }}"
    - name: Show the OS family each host's vars would be loaded for
      ansible.builtin.debug:
        msg: "OS-FAMILY {{ inventory_hostname }} {{ ansible_facts['os_family'] | default('none') }}"
"""


def run(tmp_path: Path, down: set[str], compute: list[str], saved: dict | None = None,
        extra: dict | None = None, new_nodes: list[str] | None = None,
        python: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    def host(name: str) -> dict:
        if name in down:
            # Nothing listens on port 9 here: the connection is refused at once (unreachable).
            return {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_connection": "ssh",
                    "ansible_ssh_common_args": "-o ConnectTimeout=3 -o ConnectionAttempts=1"}
        return {"ansible_connection": "local", "ansible_python_interpreter": (python or {}).get(name, sys.executable)}

    inventory = {"all": {"children": {
        "slurm_controller": {"hosts": {"ctl": host("ctl")}},
        "slurm_dbd": {"hosts": {"ctl": None}},
        "slurm_compute": {"hosts": {name: host(name) for name in compute}},
        "slurm_login": {"hosts": {"login": host("login")}},
    }}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if new_nodes is not None:
        # Adding nodes (slurm_add_node.yml): the new_nodes entry point runs first and asks
        # slurmctld which nodes are up. No slurmctld here: a stand-in sinfo reports every
        # compute host but the new ones idle.
        up = "".join(f"{name} idle\\n" for name in compute if name not in new_nodes)
        (bin_dir / "sinfo").write_text(f"#!/bin/sh\nprintf '{up}'\n")
        (bin_dir / "sinfo").chmod(0o755)
    (tmp_path / "play.yml").write_text((FIND_PLAY if new_nodes is not None else "") + PLAYBOOK)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    if saved is not None:
        (state / "nodes_hardware.yml").write_text(yaml.safe_dump(saved))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{bin_dir}:{BIN}:{os.environ['PATH']}")
    variables = {"__slurm_fingerprint_dir": str(state), **(extra or {})}
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", yaml.safe_dump(variables, default_flow_style=True).strip()],
                          capture_output=True, text=True, env=env, check=False, cwd=ROOT)


def recap(out: str) -> dict[str, dict[str, int]]:
    rows = re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M)
    return {host: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)} for host, fields in rows}


def next_play(out: str) -> dict[str, str]:
    return dict(re.findall(r'msg: NEXT-PLAY (\S+) (\S+)', out))


def test_a_compute_node_that_does_not_answer_is_left_out_and_keeps_its_record(tmp_path):
    saved = {"c2": {"memtotal_mb": 4242, "processor_vcpus": 8, "processor_count": 1, "processor_cores": 8,
                    "processor_threads_per_core": 1, "clusterdos_hw": {"gpus": []}}}
    result = run(tmp_path, down={"c2"}, compute=["c1", "c2"], saved=saved)
    out = result.stdout
    assert result.returncode == 2, out[-3000:]
    stats = recap(out)
    assert stats["c2"]["failed"] == 1 and stats["c2"].get("unreachable", 0) == 0, stats
    assert all(stats[h]["failed"] == 0 for h in ("ctl", "c1", "login")), stats
    assert "c2 did not answer" in out and "its slurm.conf record stays as it was" in out
    assert "Left out of the rest of this run: c2" in out
    ran = next_play(out)
    assert sorted(ran) == ["c1", "ctl", "login"], out[-3000:]
    c1_memory, c2_memory = ran["c1"].split(",")
    assert c1_memory.isdigit() and c2_memory == "4242"


def test_a_compute_node_never_seen_before_is_left_out_without_a_record(tmp_path):
    result = run(tmp_path, down={"c2"}, compute=["c1", "c2"])
    assert result.returncode == 2, result.stdout[-3000:]
    assert "c2 did not answer" in result.stdout and "record stays" not in result.stdout
    assert sorted(next_play(result.stdout)) == ["c1", "ctl", "login"]


def test_a_controller_that_does_not_answer_stops_the_run(tmp_path):
    result = run(tmp_path, down={"ctl"}, compute=["c1", "c2"])
    out = result.stdout
    assert result.returncode == 2, out[-3000:]
    assert "ctl failed above (Slurm controller or slurmdbd host)" in out
    assert next_play(out) == {}, out[-3000:]


@pytest.mark.parametrize(("threshold", "goes_on"), [(50, False), (100, True)])
def test_more_failed_compute_nodes_than_the_threshold_stop_the_run(tmp_path, threshold, goes_on):
    result = run(tmp_path, down={"c2", "c3"}, compute=["c1", "c2", "c3"],
                 extra={"slurm_compute_max_fail_percentage": threshold})
    out = result.stdout
    assert result.returncode == 2, out[-3000:]
    if goes_on:
        assert sorted(next_play(out)) == ["c1", "ctl", "login"], out[-3000:]
    else:
        assert "2 of 3 compute nodes failed above (c2, c3), more than slurm_compute_max_fail_percentage (50%)" in out
        assert next_play(out) == {}, out[-3000:]


def test_no_failure_changes_nothing_and_says_nothing(tmp_path):
    result = run(tmp_path, down=set(), compute=["c1", "c2"])
    assert result.returncode == 0, result.stdout[-3000:]
    assert "Left out" not in result.stdout
    assert sorted(next_play(result.stdout)) == ["c1", "c2", "ctl", "login"]


def stand_in_os_python(tmp_path: Path, release_file: str, content: str) -> str:
    """A Python for a local host that sees a copy of /etc with one more release file, in a
    mount namespace of its own: Ansible's setup module then reads another OS from real files."""
    etc = tmp_path / "stand-in-etc"
    subprocess.run(["cp", "-a", "/etc", str(etc)], check=True)
    (etc / release_file).write_text(content)
    wrapper = tmp_path / "stand-in-python"
    wrapper.write_text(f"#!/bin/sh\nexec unshare -m sh -c 'mount --bind {etc} /etc && exec {sys.executable} \"$@\"' sh \"$@\"\n")
    wrapper.chmod(0o755)
    return str(wrapper)


@pytest.mark.skipif(os.geteuid() != 0, reason="the stand-in OS needs a mount namespace (root)")
def test_a_host_of_an_os_family_the_role_does_not_run_on_stops_the_run_before_any_change_with_a_stand_in_release_file(
        tmp_path):
    """slurm.yml alone (no base host preflight): c2 reports Alpine through a copy of /etc
    with /etc/alpine-release (a stand-in: this machine runs Debian). Every host fails the
    facts step with one message naming the host and its family, and no later play runs,
    rather than c2 being left out as a failed node while the others go on."""
    python = stand_in_os_python(tmp_path, "alpine-release", "3.19.1\n")
    result = run(tmp_path, down=set(), compute=["c1", "c2"], python={"c2": python})
    out = result.stdout
    assert result.returncode == 2, out[-3000:]
    assert "The slurm role runs on Debian and RedHat hosts (ansible_facts.os_family), and c2 is Alpine." in out, out[-3000:]
    assert "Take it out of the Slurm groups (slurm_controller, slurm_dbd, slurm_compute, slurm_login)" in out
    stats = recap(out)
    assert all(stats[h]["failed"] == 1 for h in ("ctl", "c1", "c2", "login")), stats
    assert next_play(out) == {}, out[-3000:]
    assert "OS-FAMILY" not in out


SAVED_C1 = {"c1": {"memtotal_mb": 4242, "processor_vcpus": 8, "processor_count": 1, "processor_cores": 8,
                   "processor_threads_per_core": 1, "clusterdos_hw": {"gpus": []}}}


def test_adding_a_node_reads_the_others_hardware_from_the_saved_file(tmp_path):
    result = run(tmp_path, down=set(), compute=["c1", "c2"], saved=SAVED_C1, new_nodes=["c2"])
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    memory = next_play(out)["ctl"].split(",")
    # c1 (running Slurm) keeps its saved record (a probe would have given its real
    # memory), c2 (new) is probed for real.
    assert memory[0] == "4242" and memory[1].isdigit() and memory[1] != "4242", out[-3000:]


def section(out: str, task: str) -> str:
    found = [t for t in out.split("\nTASK [") if t.startswith(f"clusterdos.cluster.slurm : {task}]")]
    assert len(found) == 1, out[-3000:]
    return found[0]


def gathered(out: str) -> str:
    return section(out, "Gather facts unless this run already has them")


def test_adding_a_node_probes_a_node_missing_from_the_saved_file(tmp_path):
    result = run(tmp_path, down=set(), compute=["c1", "c2"], saved={}, new_nodes=["c2"])
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    memory = next_play(out)["ctl"].split(",")
    assert all(m.isdigit() and m != "4242" for m in memory), out[-3000:]
    # In full (no record to read its hardware from).
    assert "ok: [c1]" in gathered(out), out[-3000:]


def test_adding_a_node_does_not_ask_a_running_node_its_record_describes(tmp_path):
    saved = {"c1": {**SAVED_C1["c1"], "os_family": "Debian"}}
    result = run(tmp_path, down=set(), compute=["c1", "c2"], saved=saved, new_nodes=["c2"],
                 extra={"clusterdos_node_ip": "192.0.2.10"})
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    # The new_nodes step recorded c1: it is not in the facts play at all.
    asked = gathered(out)
    assert "[c1]" not in asked and "ok: [c2]" in asked and "ok: [ctl]" in asked, out[-3000:]
    assert next_play(out)["ctl"].split(",")[0] == "4242", out[-3000:]
    assert dict(re.findall(r"msg: OS-FAMILY (\S+) (\S+)", out))["c1"] == "Debian", out[-3000:]


def test_adding_a_node_asks_a_running_node_whose_record_lacks_its_os_family(tmp_path):
    result = run(tmp_path, down=set(), compute=["c1", "c2"], saved=SAVED_C1, new_nodes=["c2"],
                 extra={"clusterdos_node_ip": "192.0.2.10"})
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    # Its OS facts only: the hardware comes from the record (a probe would have given
    # its real memory).
    assert "ok: [c1]" in gathered(out), out[-3000:]
    assert next_play(out)["ctl"].split(",")[0] == "4242", out[-3000:]
    assert dict(re.findall(r"msg: OS-FAMILY (\S+) (\S+)", out))["c1"] not in ("none", ""), out[-3000:]


def test_adding_a_node_probes_an_unrecorded_running_node_and_keeps_the_others_records_apart(tmp_path):
    """c1 recorded, c2 missing from the file, both with inventory addresses, c3 new: c1 is
    not asked, c2 is probed in full. c1's kept hardware must not show on c2 (ansible-core
    2.21 shares a run_once set_fact's dict between hosts that hold no variables yet; the
    facts step keeps clear of it, tasks/facts.yml)."""
    saved = {"c1": {**SAVED_C1["c1"], "os_family": "Debian"}}
    result = run(tmp_path, down=set(), compute=["c1", "c2", "c3"], saved=saved, new_nodes=["c3"],
                 extra={"clusterdos_node_ip": "192.0.2.10"})
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    asked = gathered(out)
    assert "[c1]" not in asked and "ok: [c2]" in asked and "ok: [c3]" in asked, out[-3000:]
    memory = next_play(out)["ctl"].split(",")
    assert memory[0] == "4242" and memory[1] != "4242" and memory[1].isdigit(), out[-3000:]


NEW_NODES_PLAYBOOK = FIND_PLAY + """
- name: What the next plays see
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Show the groups
      ansible.builtin.debug:
        msg: "GROUPS new={{ groups['slurm_new_nodes'] | default([]) | join(',') }} recorded={{ groups['slurm_recorded_nodes'] | default([]) | join(',') }}
          unchanged={{ groups['slurm_unchanged_nodes'] | default([]) | join(',') }}"
    - name: Show each compute node's facts
      ansible.builtin.debug:
        msg: "FACTS {{ item }} {{ hostvars[item]['ansible_facts']['memtotal_mb'] | default('none') }} {{ hostvars[item]['ansible_facts']['os_family'] | default('none') }}"
      loop: "{{ groups['slurm_compute'] }}"
"""


@pytest.mark.parametrize(("configless", "site_names", "unchanged"),
                         [(False, False, ""), (False, True, ""), (True, False, ""), (True, True, "c1")])
def test_finding_new_nodes_sets_recorded_facts_without_contacting_running_nodes_with_a_stand_in_sinfo(
        tmp_path, configless, site_names, unchanged):
    """The new_nodes entry point on the primary controller, with a stand-in `sinfo` (a
    script printing what slurmctld would report: c1 and c3 up, c2 absent; no slurmctld
    runs here -- molecule/slurm_cluster adds a node to a real one). c1 (recorded in full,
    address in the inventory) gets its facts from the record and lands in the recorded
    group; c3 (record without its OS family) does not; c2 is new. c1 and c3 answer no
    task (they are unreachable: a task on them would fail the run). c1 is also in the group
    of nodes the add changes nothing on only when the cluster is configless and c1's names
    come from the site (base_hosts_manage: false); c3, not recorded, never is (molecule/
    validate_slurm runs an add on real hosts with such a node)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sinfo").write_text("#!/bin/sh\nprintf 'c1 idle\\nc3 mixed\\nc2 down*\\n'\n")
    (bin_dir / "sinfo").chmod(0o755)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    down = {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_connection": "ssh",
            "ansible_ssh_common_args": "-o ConnectTimeout=3 -o ConnectionAttempts=1"}
    inventory = {"all": {"hosts": {"localhost": local}, "children": {
        "slurm_controller": {"hosts": {"ctl": local}},
        "slurm_compute": {"hosts": {"c1": {**down, "clusterdos_node_ip": "192.0.2.11",
                                           **({"base_hosts_manage": False} if site_names else {})},
                                    "c2": local,
                                    "c3": {**down, "clusterdos_node_ip": "192.0.2.13"}}},
    }}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(NEW_NODES_PLAYBOOK)
    state = tmp_path / "state"
    state.mkdir()
    (state / "nodes_hardware.yml").write_text(yaml.safe_dump({
        "c1": {**SAVED_C1["c1"], "os_family": "Debian"},
        "c3": {**SAVED_C1["c1"], "memtotal_mb": 3333}}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{bin_dir}:{BIN}:{os.environ['PATH']}")
    result = subprocess.run([str(BIN / "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                             "-e", yaml.safe_dump({"__slurm_fingerprint_dir": str(state), "slurm_configless": configless},
                                                  default_flow_style=True).strip()],
                            capture_output=True, text=True, env=env, check=False, cwd=ROOT)
    out = result.stdout
    assert result.returncode == 0, out[-3000:]
    assert re.findall(r"msg: GROUPS (.*)", out) == [f"new=c2 recorded=c1 unchanged={unchanged}"], out[-3000:]
    facts = dict((host, rest) for host, rest in re.findall(r"msg: FACTS (\S+) (.*)", out))
    assert facts == {"c1": "4242 Debian", "c2": "none none", "c3": "none none"}, out[-3000:]
    # Only the controller and localhost ran tasks: no worker touched a compute node.
    assert set(recap(out)) == {"ctl", "localhost"}, out[-3000:]
