"""The converge record (roles/converge_stamp): what makes a stage's digest change, what a
host's probe calls drift, and the action + module run for real through ansible-playbook on
localhost (records in a temporary directory; no other host state is touched)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ansible_collections.clusterdos.cluster.plugins.module_utils import converge_stamp as cs
from playbook_outcome import run_json

PREFIXES = ["slurm_", "munge_"]


def _inputs(variables: dict, facts: dict | None = None) -> dict:
    return cs.host_inputs(variables.keys(), facts or {}, PREFIXES, variables.__getitem__, variables.__getitem__)


def _stage(hosts: dict[str, dict], collection: str = "c1") -> str:
    return cs.stage_digest(collection, "slurm", {h: cs.host_digest(_inputs(v)) for h, v in hosts.items()})


def test_only_the_stage_prefixes_and_common_variables_count():
    names = ["slurm_cluster_name", "munge_key_file", "base_sysctl_config", "__slurm_private", "group_names",
             "ansible_host", "clusterdos_fast_path", "ansible_facts"]
    assert cs.select_vars(names, PREFIXES) == ["ansible_host", "group_names", "munge_key_file", "slurm_cluster_name"]
    assert cs.select_vars(names, []) == ["ansible_host", "group_names"]


def test_the_stage_digest_changes_with_any_host_input_and_the_collection():
    hosts = {"ctl": {"slurm_cluster_name": "lab", "group_names": ["slurm_controller"]},
             "c1": {"group_names": ["slurm_compute"]}}
    same = _stage(json.loads(json.dumps(hosts)))
    assert _stage(hosts) == same
    # A peer's variable changes every host's digest (slurm.conf lists every node).
    changed = json.loads(json.dumps(hosts))
    changed["c1"]["slurm_node_features"] = ["ib"]
    assert _stage(changed) != same
    # A host added to the stage, a group membership, the collection's content.
    assert _stage({**hosts, "c2": {"group_names": ["slurm_compute"]}}) != same
    moved = json.loads(json.dumps(hosts))
    moved["c1"]["group_names"] = ["slurm_login"]
    assert _stage(moved) != same
    assert _stage(hosts, collection="c2") != same
    # Turning the fast path on or off, or a variable of another stage, changes nothing.
    assert _stage({**hosts, "ctl": {**hosts["ctl"], "clusterdos_fast_path": False, "base_swap_disabled": False}}) == same


def test_facts_the_roles_read_count_and_counters_do_not():
    base = {"memtotal_mb": 4096, "processor_vcpus": 4,
            "default_ipv4": {"address": "10.0.0.5", "interface": "eth0"}, "uptime_seconds": 10}
    digest = cs.host_digest(_inputs({}, base))
    assert cs.host_digest(_inputs({}, {**base, "uptime_seconds": 99})) == digest
    assert cs.host_digest(_inputs({}, {**base, "default_ipv4": {**base["default_ipv4"], "macaddress": "x"}})) == digest
    assert cs.host_digest(_inputs({}, {**base, "memtotal_mb": 8192})) != digest
    assert cs.host_digest(_inputs({}, {**base, "clusterdos_hw": {"gpus": {"count": 1}}})) != digest


def test_a_fact_a_module_returned_counts_as_a_fact_only_and_not_where_the_stage_ignores_it():
    """The hardware_facts module returns clusterdos_hw as a fact, and Ansible also makes it a
    variable of that name: with the `clusterdos_` prefix it would count as a variable too, so
    base (which ignores the fact) got another digest once site.yml discovered the hardware
    before comparing base's record than base.yml alone, which discovers none."""
    hw = {"gpus": {"count": 1}}
    variables = {"clusterdos_x": 1, "clusterdos_hw": hw}
    inputs = cs.host_inputs(variables, {"clusterdos_hw": hw}, ["clusterdos_"], variables.__getitem__,
                            variables.__getitem__, ignore_facts=["clusterdos_hw"])
    plain = cs.host_inputs({"clusterdos_x": 1}, {}, ["clusterdos_"], variables.__getitem__, variables.__getitem__)
    assert inputs == plain == {"vars": {"clusterdos_x": 1}, "facts": {}}
    counted = cs.host_inputs(variables, {"clusterdos_hw": hw}, ["clusterdos_"], variables.__getitem__, variables.__getitem__)
    assert counted == {"vars": {"clusterdos_x": 1}, "facts": {"clusterdos_hw": hw}}


def test_a_variable_that_cannot_be_resolved_counts_by_its_text():
    variables = {"slurm_db_password": "{{ vault_password }}"}

    def failing(_name):
        raise ValueError("undefined")

    one = cs.host_inputs(variables.keys(), {}, PREFIXES, failing, variables.__getitem__)
    assert one["vars"]["slurm_db_password"] == {"unresolved": '"{{ vault_password }}"'}
    other = cs.host_inputs(["slurm_db_password"], {}, PREFIXES, failing, lambda name: "{{ other }}")
    assert cs.host_digest(one) != cs.host_digest(other)


def test_drift_names_each_difference(tmp_path: Path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\n")
    gone = tmp_path / "gone"
    record = cs.build_record("slurm", "d1", [str(conf), str(gone), str(tmp_path)], ["slurmd"], {"vm.swappiness": "1"})
    assert record == cs.build_record("slurm", "d1", [str(tmp_path), str(gone), str(conf)], ["slurmd"], {"vm.swappiness": 1})
    everything_fine = {"active": lambda units: {u: True for u in units}, "sysctl_of": lambda key: "1"}
    assert cs.drift(record, "d1", **everything_fine) == []
    assert cs.drift(None, "d1", **everything_fine) == ["no record of a converge of this stage"]
    assert cs.drift({**record, "version": 0}, "d1", **everything_fine) == ["the record is of another format (0)"]
    assert cs.drift(record, "d2", **everything_fine) == ["the inputs changed since the last converge"]
    conf.write_text("ClusterName=other\n")
    assert cs.drift(record, "d1", **everything_fine) == [f"{tmp_path} changed since the last converge",
                                                         f"{conf} changed since the last converge"]
    conf.unlink()
    gone.write_text("")
    reasons = cs.drift(record, "d1", active=lambda units: {u: False for u in units}, sysctl_of=lambda key: "60")
    assert reasons == [f"{tmp_path} changed since the last converge", f"{gone} appeared since the last converge",
                       f"{conf} is gone since the last converge", "service slurmd is not active",
                       "sysctl vm.swappiness is '60', converged as '1'"]


def test_a_service_disabled_or_masked_while_running_has_drifted():
    """Found on a lab: `systemctl disable munge slurmd` on a compute node (both still running)
    and the fast path skipped the Slurm stage, so the node would come back from its next boot
    without them. A running service that would not start at boot is drift, with its state
    named; one that is static or generated (no [Install] to enable) is not."""
    show = ("ActiveState=active\nUnitFileState=disabled\n\n"
            "UnitFileState=masked\nActiveState=active\n\n"
            "ActiveState=active\nUnitFileState=enabled\n\n"
            "ActiveState=active\nUnitFileState=static\n\n"
            "ActiveState=failed\nUnitFileState=enabled\n\n"
            "ActiveState=inactive\nUnitFileState=\n")
    units = ["munge", "slurmd", "chrony", "dbus", "slurmctld", "nosuch", "missing"]
    states = cs.unit_states(show, units)
    assert states == {"munge": "is disabled: it would not start at boot", "slurmd": "is masked: it would not start at boot",
                      "chrony": True, "dbus": True, "slurmctld": False, "nosuch": False, "missing": False}
    assert cs.unit_states("", ["munge"]) == {"munge": False}
    record = cs.build_record("slurm", "d1", [], units, {})
    assert cs.drift(record, "d1", active=lambda wanted: {u: states[u] for u in wanted}) == [
        "service missing is not active",
        "service munge is disabled: it would not start at boot", "service nosuch is not active",
        "service slurmctld is not active", "service slurmd is masked: it would not start at boot"]


def test_a_file_whose_mode_changed_has_drifted_though_its_content_has_not(tmp_path: Path):
    """A key made world-readable by hand (found on a lab: munge.key chmod 0644 and the fast
    path still skipped the stage) drifts, file and directory alike; so does a new owner."""
    keydir = tmp_path / "munge"
    keydir.mkdir(mode=0o700)
    key = keydir / "munge.key"
    key.write_bytes(b"secret")
    key.chmod(0o400)
    record = cs.build_record("slurm", "d1", [str(key), str(keydir)], [], {})
    fine = {"active": lambda units: {}, "sysctl_of": lambda key: None}
    assert cs.drift(record, "d1", **fine) == []
    key.chmod(0o644)
    assert cs.drift(record, "d1", **fine) == [f"{keydir} changed since the last converge",
                                              f"{key} changed since the last converge"]
    key.chmod(0o400)
    keydir.chmod(0o755)
    assert cs.drift(record, "d1", **fine) == [f"{keydir} changed since the last converge"]
    keydir.chmod(0o700)
    assert cs.drift(record, "d1", **fine) == []
    owner = cs.file_state(str(key))
    assert owner.endswith(":0400:%d:%d" % (key.stat().st_uid, key.stat().st_gid))


def test_a_changed_digest_names_what_changed():
    before = {"collection": "c1", "hosts": {"ctl": "a", "c1": "b", "c2": "c"}}
    assert cs.input_changes(before, {"collection": "c2", "hosts": {"ctl": "a", "c1": "B", "c3": "d"}}) == [
        "the collection changed (its roles, playbooks or plugins)", "hosts new to the stage: c3",
        "hosts no longer in this run: c2", "inputs (variables, facts or groups) changed of c1"]
    record = cs.build_record("slurm", "d1", [], [], {}, inputs=before)
    assert record["inputs"] == before
    assert cs.drift(record, "d2", active=dict, inputs={**before, "hosts": {**before["hosts"], "ctl": "x"}}) == [
        "inputs (variables, facts or groups) changed of ctl"]


def test_tree_digest_follows_the_content(tmp_path: Path):
    (tmp_path / "roles" / "r").mkdir(parents=True)
    (tmp_path / "roles" / "r" / "main.yml").write_text("a\n")
    (tmp_path / "roles" / "r" / "__pycache__").mkdir()
    (tmp_path / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"1")
    first = cs.tree_digest(str(tmp_path), ("roles",))
    cs._TREE_CACHE.clear()
    (tmp_path / "roles" / "r" / "__pycache__" / "x.pyc").write_bytes(b"2")
    assert cs.tree_digest(str(tmp_path), ("roles",)) == first
    cs._TREE_CACHE.clear()
    (tmp_path / "roles" / "r" / "main.yml").write_text("b\n")
    assert cs.tree_digest(str(tmp_path), ("roles",)) != first
    cs._TREE_CACHE.clear()


PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: digest
      clusterdos.cluster.converge_stamp:
        stage: unit
        state: digest
        prefixes: [unit_]
      run_once: true
      register: digest
    - name: check before
      clusterdos.cluster.converge_stamp:
        stage: unit
        digest: "{{ digest.digest }}"
        inputs: "{{ digest.inputs }}"
        directory: "{{ dir }}"
      register: before
    - name: record
      clusterdos.cluster.converge_stamp:
        stage: unit
        state: record
        digest: "{{ digest.digest }}"
        inputs: "{{ digest.inputs }}"
        directory: "{{ dir }}"
        paths: ["{{ dir }}/managed.conf"]
    - name: check after
      clusterdos.cluster.converge_stamp:
        stage: unit
        digest: "{{ digest.digest }}"
        directory: "{{ dir }}"
"""


def _run(tmp_path: Path, unit_value: str, *args: str) -> dict:
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local"}},
                                             "vars": {"ansible_python_interpreter": sys.executable,
                                                      "unit_value": unit_value, "dir": str(tmp_path / "records")}}}))
    (tmp_path / "play.yml").write_text(PLAY)
    res = run_json(inventory, tmp_path / "play.yml", *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    tasks = json.loads(res.stdout)["plays"][0]["tasks"]
    return {t["task"]["name"]: t["hosts"]["h1"] for t in tasks}


def test_record_then_check_through_the_action_and_module(tmp_path: Path):
    (tmp_path / "records").mkdir()
    managed = tmp_path / "records" / "managed.conf"
    managed.write_text("one\n")
    first = _run(tmp_path, "a")
    assert first["check before"]["current"] is False
    assert first["check before"]["reasons"] == ["no record of a converge of this stage"]
    assert first["record"]["changed"] is True
    assert first["check after"]["current"] is True and first["check after"]["changed"] is False
    record = json.loads((tmp_path / "records" / "unit.json").read_text())
    assert (tmp_path / "records" / "unit.json").stat().st_mode & 0o777 == 0o600
    assert record["digest"] == first["digest"]["digest"] and record["paths"] == {
        str(managed): cs.file_state(str(managed))}
    # The same inputs: the record is current and rewriting it changes nothing.
    again = _run(tmp_path, "a")
    assert again["digest"]["digest"] == first["digest"]["digest"]
    assert again["check before"]["current"] is True and again["record"]["changed"] is False
    # Drift of a managed file.
    managed.write_text("two\n")
    drifted = _run(tmp_path, "a", "--check")
    assert drifted["check before"]["reasons"] == [f"{managed} changed since the last converge"]
    # Check mode writes no record.
    assert drifted["record"]["changed"] is True
    assert json.loads((tmp_path / "records" / "unit.json").read_text()) == record
    # Another input value: another digest.
    other = _run(tmp_path, "b")
    assert other["digest"]["digest"] != first["digest"]["digest"]
    assert other["check before"]["reasons"] == ["inputs (variables, facts or groups) changed of h1",
                                                f"{managed} changed since the last converge"]


def test_bad_prefixes_are_refused_with_a_message(tmp_path: Path):
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local",
                                                              "ansible_python_interpreter": sys.executable}}}}))
    play = tmp_path / "p.yml"
    play.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n    - clusterdos.cluster.converge_stamp:\n"
                    "        stage: unit\n        state: digest\n        prefixes: ['']\n")
    res = run_json(inventory, play)
    assert res.returncode == 2, res.stdout[-2000:]
    assert "'prefixes' must be a list of non-empty strings, got ['']" in res.stdout


# The role's check entry point with two stages in one call (as site.yml's host preflight
# compares base and Slurm): stage `first` on both hosts, stage `second` on h1 only and
# listed `after: [first]`; then the record entry point records each (what each stage's
# last play does). Two localhost hosts, each with its own record directory.
ROLE_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: compare
      ansible.builtin.include_role:
        name: clusterdos.cluster.converge_stamp
        tasks_from: check
      vars:
        converge_stamp_stages:
          - {stage: first, prefixes: [first_], hosts: [h1, h2]}
          - {stage: second, prefixes: [second_], hosts: [h1], after: [first]}
    - name: decisions
      ansible.builtin.debug:
        msg: {skip: "{{ __clusterdos_converge_skip }}", asked: "{{ __converge_stamp_check.stages | default({}) | list }}"}
    - name: record
      ansible.builtin.include_role:
        name: clusterdos.cluster.converge_stamp
        tasks_from: record
      vars:
        converge_stamp_stage: "{{ item }}"
        converge_stamp_roles: []
      loop: "{{ ['first', 'second'] if inventory_hostname == 'h1' else ['first'] }}"
      when: record | bool
"""


def _role_run(tmp_path: Path, first_value: str, record: bool) -> dict:
    hosts = {h: {"ansible_connection": "local", "converge_stamp_dir": str(tmp_path / h)} for h in ("h1", "h2")}
    inventory = tmp_path / "inv.json"
    inventory.write_text(json.dumps({"all": {"hosts": hosts, "vars": {
        "ansible_python_interpreter": sys.executable, "first_value": first_value, "second_value": "s",
        "record": record}}}))
    (tmp_path / "play.yml").write_text(ROLE_PLAY)
    res = run_json(inventory, tmp_path / "play.yml")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    tasks = json.loads(res.stdout)["plays"][0]["tasks"]
    # The json callback lists a task once for all hosts under Ansible's `linear` strategy, and
    # once per host under any other name (ansible.builtin.linear, clusterdos.cluster.linear).
    return {h: next(t["hosts"][h]["msg"] for t in tasks if t["task"]["name"] == "decisions" and h in t["hosts"])
            for h in ("h1", "h2")}


def test_two_stages_in_one_call_each_host_asked_only_its_own(tmp_path: Path):
    # No records: both stages converge, both decided.
    fresh = _role_run(tmp_path, "a", record=True)
    assert fresh["h1"]["skip"] == {"first": False, "second": False} == fresh["h2"]["skip"]
    assert fresh["h1"]["asked"] == ["first", "second"] and fresh["h2"]["asked"] == ["first"]
    # Recorded with the same inputs: both skipped.
    again = _role_run(tmp_path, "a", record=False)
    assert again["h1"]["skip"] == {"first": True, "second": True} == again["h2"]["skip"]


def test_a_later_stage_keeps_no_skip_where_an_earlier_one_converges(tmp_path: Path):
    _role_run(tmp_path, "a", record=True)
    # Only `first`'s inputs changed: it converges; `second` is current but runs after it, so
    # it is left undecided (its own play compares again once `first` converged).
    changed = _role_run(tmp_path, "b", record=False)
    assert changed["h1"]["skip"] == {"first": False} == changed["h2"]["skip"]


def test_the_stages_between_base_and_slurm_touch_nothing_slurm_records():
    """site.yml's host preflight reads Slurm's record before the GPU, RDMA and storage stages
    run, and keeps its "skip" where base is skipped (playbooks/tasks/stage_compare.yml). That
    holds only while the stages between base and Slurm manage nothing Slurm records (its
    files, the munge key, MariaDB's, their services): none of their roles' tasks, templates,
    variables or handlers may name Slurm, munge or MariaDB (comments aside)."""
    root = Path(__file__).resolve().parents[3]
    site = (root / "playbooks" / "site.yml").read_text()
    order = re.findall(r"import_playbook: stages/(\w+)\.yml", site)
    between = order[order.index("base") + 1:order.index("slurm")]
    assert between == ["gpu", "rdma", "storage"], order  # the stages this test reads; a new one joins them
    roles = set()
    for stage in between:
        text = (root / "playbooks" / "stages" / f"{stage}.yml").read_text()
        roles |= set(re.findall(r"clusterdos\.cluster\.(\w+)", text))
        for tasks in re.findall(r"import_tasks: \.\./tasks/(\w+\.yml)", text):
            roles |= set(re.findall(r"clusterdos\.cluster\.(\w+)", (root / "playbooks" / "tasks" / tasks).read_text()))
    assert {"nvidia_gpu", "amd_gpu", "rdma", "nfs_server", "nfs_client", "lustre_client", "hardware_facts"} <= roles, roles
    named = []
    for role in sorted(roles):
        for part in ("tasks", "templates", "vars", "defaults", "handlers", "files"):
            for path in sorted((root / "roles" / role / part).rglob("*")):
                if not path.is_file():
                    continue
                for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                    if not line.strip().startswith("#") and re.search(r"slurm|munge|mariadb", line, re.I):
                        named.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert named == [], named


def test_probe_then_decide_is_drift_and_asks_systemd_once(tmp_path: Path):
    """The host half (probe_directory: every record, services asked in one call) and the
    controller half (decide) give drift()'s answer, for each way a host can differ."""
    directory = tmp_path / "records"
    directory.mkdir()
    managed = tmp_path / "managed.conf"
    managed.write_text("one\n")
    for stage, services in (("base", ["chrony"]), ("slurm", ["munge", "slurmd"])):
        record = cs.build_record(stage, "d-" + stage, [str(managed)], services, {}, inputs={"collection": "c", "hosts": {"h1": "x"}})
        (directory / f"{stage}.json").write_text(cs.record_text(record))
    (directory / "broken.json").write_text("{not json")
    calls = []

    def active(units):
        calls.append(list(units))
        return {u: u != "slurmd" for u in units}

    probes = cs.probe_directory(str(directory), active)
    assert sorted(probes) == ["base", "slurm"] and calls == [["chrony", "munge", "slurmd"]]
    managed.write_text("two\n")
    drifted = cs.probe_directory(str(directory), active)
    for stage in ("base", "slurm"):
        for digest, inputs in (("d-" + stage, {}), ("other", {"collection": "c2", "hosts": {"h1": "x"}})):
            record = cs.load_record(str(directory / f"{stage}.json"))
            expected = cs.drift(record, digest, active, inputs=inputs)
            assert cs.decide(drifted[stage], digest, inputs) == expected
    assert cs.decide(probes["base"], "d-base") == []
    assert cs.decide(probes["slurm"], "d-slurm") == ["service slurmd is not active"]
    assert cs.decide(drifted["base"], "d-base") == [f"{managed} changed since the last converge"]
    assert cs.decide(drifted["base"], "other", {"collection": "c2", "hosts": {"h1": "x"}})[0] == \
        "the collection changed (its roles, playbooks or plugins)"
    # No record (the stage never converged here, or its file does not parse).
    assert cs.decide(None, "d") == cs.decide(drifted.get("broken"), "d") == ["no record of a converge of this stage"]
    assert cs.probe_directory(str(tmp_path / "none"), active) == {}
    # The host compare (check_stages) is the same two halves: one systemd call, the same answers.
    calls.clear()
    answers = cs.check_stages([{"stage": "base", "digest": "d-base"}, {"stage": "slurm", "digest": "d-slurm"},
                               {"stage": "none", "digest": "d"}], str(directory), active)
    assert calls == [["chrony", "munge", "slurmd"]]
    assert answers == {"base": {"current": False, "reasons": [f"{managed} changed since the last converge"]},
                       "slurm": {"current": False, "reasons": [f"{managed} changed since the last converge",
                                                               "service slurmd is not active"]},
                       "none": {"current": False, "reasons": ["no record of a converge of this stage"]}}


PROBE_PLAY = """
- hosts: all
  gather_facts: false
  tasks:
    - name: probe
      clusterdos.cluster.hardware_facts:
        records: "{{ dir }}"
      register: probe
    - name: digest
      clusterdos.cluster.converge_stamp:
        state: digest
        stages: [{stage: unit, prefixes: [unit_]}]
        probes: "{{ {inventory_hostname: probe.records} }}"
      run_once: true
      register: digest
    - name: check
      clusterdos.cluster.converge_stamp:
        stages: [{stage: unit, digest: "{{ digest.stages.unit.digest }}", inputs: "{{ digest.stages.unit.inputs }}"}]
        directory: "{{ dir }}"
      register: check
    - name: record
      clusterdos.cluster.converge_stamp:
        stage: unit
        state: record
        digest: "{{ digest.stages.unit.digest }}"
        inputs: "{{ digest.stages.unit.inputs }}"
        directory: "{{ dir }}"
        paths: ["{{ dir }}/../managed.conf"]
      when: record | bool
    - name: answers
      ansible.builtin.debug:
        msg: {controller: "{{ digest.checks }}", host: "{{ check.stages }}"}
"""


def test_the_digest_decides_from_the_probes_as_each_host_would(tmp_path: Path):
    """converge_stamp's digest state with the probes of hardware_facts' `records` answers,
    on the controller, exactly what the host compare answers: no record, current, a
    managed file changed, inputs changed."""
    (tmp_path / "records").mkdir()
    (tmp_path / "managed.conf").write_text("one\n")
    (tmp_path / "play.yml").write_text(PROBE_PLAY)

    def run(unit_value: str, record: bool) -> dict:
        inventory = tmp_path / "inv.json"
        inventory.write_text(json.dumps({"all": {"hosts": {"h1": {"ansible_connection": "local"}}, "vars": {
            "ansible_python_interpreter": sys.executable, "unit_value": unit_value, "record": record,
            "dir": str(tmp_path / "records")}}}))
        res = run_json(inventory, tmp_path / "play.yml")
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
        tasks = json.loads(res.stdout)["plays"][0]["tasks"]
        msg = next(t["hosts"]["h1"]["msg"] for t in tasks if t["task"]["name"] == "answers")
        assert msg["controller"]["h1"]["stages"] == msg["host"], msg
        return msg["host"]["unit"]

    assert run("a", record=True)["reasons"] == ["no record of a converge of this stage"]
    assert run("a", record=False) == {"current": True, "reasons": []}
    (tmp_path / "managed.conf").write_text("two\n")
    assert run("a", record=False)["reasons"] == [f"{tmp_path / 'records' / '..' / 'managed.conf'} changed since the last converge"]
    assert run("b", record=False)["reasons"][0] == "inputs (variables, facts or groups) changed of h1"
