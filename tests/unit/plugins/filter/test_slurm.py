"""Slurm filters: hostlists, records and rendering as the role's templates use them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterdos.cluster.plugins.filter.slurm import FilterModule

F = FilterModule().filters()

FACTS = {"processor_count": 2, "processor_cores": 16, "processor_threads_per_core": 2,
         "processor_vcpus": 64, "memtotal_mb": 515000}
HOSTVARS = {
    "gpu01": {"ansible_facts": FACTS, "clusterdos_gpus": [{"vendor": "nvidia", "type": "h100", "count": 8}]},
    "gpu02": {"ansible_facts": FACTS, "clusterdos_gpus": [{"vendor": "nvidia", "type": "h100", "count": 8}]},
    "cpu1": {"ansible_facts": {**FACTS, "memtotal_mb": 257000}, "slurm_node_features": ["bigmem"]},
}


@pytest.mark.parametrize(
    ("names", "hostlist"),
    [
        (["c1", "c2", "c3"], "c[1-3]"),
        (["c1", "c3", "c4", "c9"], "c[1,3-4,9]"),
        (["gpu01", "gpu02", "gpu10"], "gpu[01-02,10]"),
        (["login", "c1"], "login,c1"),
        (["rack1-n1", "rack1-n2", "rack2-n1"], "rack1-n[1-2],rack2-n1"),
        (["c2", "c1", "c2"], "c[1-2]"),
        ([], ""),
    ],
)
def test_hostlist_compresses_and_expands_back(names, hostlist):
    assert F["slurm_hostlist"](names) == hostlist
    assert sorted(F["slurm_expand_hostlist"](hostlist)) == sorted(set(names))


def test_expand_rejects_unbalanced_brackets():
    with pytest.raises(AnsibleFilterError, match="unbalanced"):
        F["slurm_expand_hostlist"]("c[1-3")


def test_conf_line_formats_values_and_drops_empty_ones():
    line = F["slurm_conf_line"]({"NodeName": "c[1-2]", "CPUs": 4, "Feature": ["a", "b"], "Gres": [], "Weight": None,
                                 "Default": True, "Hidden": False})
    assert line == "NodeName=c[1-2] CPUs=4 Feature=a,b Default=YES Hidden=NO"


def test_conf_line_rejects_multiline_values():
    with pytest.raises(AnsibleFilterError, match="single line"):
        F["slurm_conf_line"]({"Prolog": "a\nb"})


def test_conf_lines_are_sorted_key_value_lines():
    assert F["slurm_conf_lines"]({"b": 1, "a": "x", "c": ""}) == ["a=x", "b=1"]


def test_nodes_from_facts_gpus_merged_by_hardware():
    recs = F["slurm_nodes"](["gpu01", "gpu02", "cpu1"], HOSTVARS, {"slurm_node_weight": 1})
    assert recs == [
        {"NodeName": "gpu[01-02]", "CPUs": 64, "Sockets": 2, "CoresPerSocket": 16, "ThreadsPerCore": 2,
         "RealMemory": 515000, "Gres": ["gpu:h100:8"], "Feature": [], "Weight": 1, "State": "UNKNOWN"},
        {"NodeName": "cpu1", "CPUs": 64, "Sockets": 2, "CoresPerSocket": 16, "ThreadsPerCore": 2,
         "RealMemory": 257000, "Gres": [], "Feature": ["bigmem"], "Weight": 1, "State": "UNKNOWN"},
    ]
    assert F["slurm_conf_line"](recs[0]) == (
        "NodeName=gpu[01-02] CPUs=64 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=515000 "
        "Gres=gpu:h100:8 Weight=1 State=UNKNOWN")


def test_node_config_overrides_facts():
    hv = {"n1": {"ansible_facts": FACTS, "slurm_node_config": {"RealMemory": 500000, "MemSpecLimit": 8000}}}
    rec = F["slurm_nodes"](["n1"], hv)[0]
    assert rec["RealMemory"] == 500000 and rec["MemSpecLimit"] == 8000


def test_gres_conf_autodetects_nvml_on_nvidia_and_lists_others():
    hv = dict(HOSTVARS)
    hv["amd1"] = {"clusterdos_gpus": [{"vendor": "amd", "type": "mi300x", "count": 8}]}
    hv["odd1"] = {"slurm_node_gpus": [{"vendor": "intel", "type": "max", "count": 4, "file": "/dev/dri/renderD[128-131]"}]}
    recs = F["slurm_gres"](["gpu01", "gpu02", "cpu1", "amd1", "odd1"], hv)
    lines = [F["slurm_conf_line"](r) for r in recs]
    assert lines == [
        "NodeName=gpu[01-02] AutoDetect=nvml",
        "NodeName=amd1 AutoDetect=rsmi",
        "NodeName=odd1 Name=gpu Type=max Count=4 File=/dev/dri/renderD[128-131]",
    ]


def test_partitions_from_groups_gpu_partition_only_gpu_hosts():
    groups = {"slurm_compute": ["gpu01", "gpu02", "cpu1"]}
    parts = [
        {"name": "batch", "groups": ["slurm_compute"], "default": True, "config": {"MaxTime": "INFINITE"}},
        {"name": "gpu", "groups": ["slurm_compute"], "gpus": True, "optional": True},
    ]
    recs = F["slurm_partitions"](parts, groups, groups["slurm_compute"], HOSTVARS)
    assert [F["slurm_conf_line"](r) for r in recs] == [
        "PartitionName=batch Nodes=gpu[01-02],cpu1 Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=gpu Nodes=gpu[01-02] State=UP",
    ]


def test_optional_partition_without_nodes_is_dropped():
    parts = [{"name": "gpu", "groups": ["slurm_compute"], "gpus": True, "optional": True}]
    assert F["slurm_partitions"](parts, {"slurm_compute": ["cpu1"]}, ["cpu1"], HOSTVARS) == []


def test_controller_lines_primary_first_with_addresses():
    assert F["slurm_controller_lines"]([{"name": "ctl1", "address": "10.0.0.1"}, {"name": "ctl2", "address": None}]) == [
        "SlurmctldHost=ctl1(10.0.0.1)", "SlurmctldHost=ctl2"]


@pytest.mark.parametrize(("version", "series"), [("22.05", "22.05"), ("22.05.8", "22.05"), ("24.11.1-1", "24.11")])
def test_version_series(version, series):
    assert F["slurm_version_series"](version) == series


def test_version_series_rejects_garbage():
    with pytest.raises(AnsibleFilterError):
        F["slurm_version_series"]("latest")


STARTED = {"changed": True, "status": {"ActiveState": "inactive"}}  # started from stopped
RUNNING = {"changed": False, "status": {"ActiveState": "active"}}  # was running already
CONF = {"changed_tags": ["reconfigure"]}
FINGERPRINT_ONLY = {"changed_tags": ["restart_compute"]}


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (STARTED, True),
        ({"changed": True, "status": {"ActiveState": "failed"}}, True),
        (RUNNING, False),
        ({"changed": True, "status": {"ActiveState": "active"}}, False),  # e.g. only enabled
        ({"skipped": True, "changed": False}, False),
        ({}, False),
    ],
)
def test_started_from_stopped(result, expected):
    assert F["slurm_started_from_stopped"](result) is expected


@pytest.mark.parametrize(
    ("hostvars", "configless", "expected"),
    [
        # A first converge: every daemon started from stopped after its files were written.
        ({"ctl": {"__slurm_files_written": CONF, "__slurm_slurmctld_started": STARTED}}, False, False),
        ({"c1": {"__slurm_files_written": CONF, "__slurm_slurmd_started": STARTED},
          "c2": {"__slurm_files_written": CONF, "__slurm_slurmd_started": STARTED}}, False, False),
        # A login host's files are read by the clients: no daemon to tell.
        ({"login": {"__slurm_files_written": CONF}}, False, False),
        ({"login": {"__slurm_files_written": CONF}}, True, False),
        # A running daemon whose files changed needs it.
        ({"ctl": {"__slurm_files_written": CONF, "__slurm_slurmctld_started": RUNNING}}, False, True),
        ({"c1": {"__slurm_files_written": CONF, "__slurm_slurmd_started": STARTED},
          "c2": {"__slurm_files_written": CONF, "__slurm_slurmd_started": RUNNING}}, False, True),
        # The reconfigure entry point starts nothing: a changed daemon host always needs it.
        ({"c1": {"__slurm_files_written": CONF}}, False, True),
        # Configless, running slurmd elsewhere fetch a controller's change only at a reconfigure.
        ({"ctl": {"__slurm_files_written": CONF, "__slurm_slurmctld_started": STARTED}}, True, True),
        # Only restart fingerprints changed (their handlers restart), or nothing did.
        ({"c1": {"__slurm_files_written": FINGERPRINT_ONLY, "__slurm_slurmd_started": RUNNING}}, False, False),
        ({"c1": {"__slurm_slurmd_started": RUNNING}}, False, False),
    ],
)
def test_reconfigure_needed(hostvars, configless, expected):
    assert F["slurm_reconfigure_needed"](list(hostvars), hostvars, ["ctl"], ["c1", "c2"], configless) is expected


def test_up_nodes_counts_a_drained_node_and_not_a_silent_or_down_one():
    """sinfo --Node '%N %T' lines: a node an administrator drained (or that is draining, or in a
    maintenance reservation) runs slurmd and is up; one not responding (`*`), down, unknown,
    failing or with a rejected registration (inval) is not. A node listed once per partition
    counts once. compute.yml's wait and adding nodes both read it (found on a lab: a drained
    node made every Slurm converge fail it after a minute's wait)."""
    lines = ["c1 idle", "c2 drained", "c3 draining", "c4 mixed$", "c5 idle*", "c6 down*", "c7 drained*",
             "c8 unknown", "c9 failing", "c10 inval", "c11 future", "c12 allocated", "c2 drained", "", "c13"]
    assert F["slurm_up_nodes"](lines) == ["c1", "c2", "c3", "c4", "c12"]
    assert F["slurm_up_nodes"]([]) == []


def test_jobs_at_risk_names_the_dropped_partitions_and_nodes_with_their_job_counts():
    """squeue '%P|%N|%n' lines of unfinished jobs: a partition the next slurm.conf no longer
    has, and a compute node it no longer lists (held by a running job, %N, or asked for by
    name, %n, hostlists expanded), are named with the jobs they would take (found on a lab:
    both converged, a running job ended NODE_FAIL and held ones left the queue). A partition
    that only loses nodes, a job in several partitions one of which stays named, and jobs
    on kept nodes are not."""
    lines = ["batch|slurm-c[1-2]|", "debug||slurm-c2", "batch,old||", "old|slurm-c1|", "batch|slurm-c3|slurm-c3",
             "", "batch||"]
    problems = F["slurm_jobs_at_risk"](lines, ["batch", "debug"], ["slurm-c1", "slurm-c3"], "compute")
    assert len(problems) == 2
    assert problems[0].startswith("slurmctld has 2 job(s) not finished in partition(s) old, which slurm_partitions "
                                  "no longer gives")
    assert problems[1].startswith("slurmctld has 2 job(s) running on or asking for compute node(s) slurm-c2, which "
                                  "the compute group no longer holds")
    assert "keep it in compute until then" in problems[1]
    # Every partition and node kept: nothing at risk, whatever the jobs' states.
    assert F["slurm_jobs_at_risk"](lines, ["batch", "debug", "old"], ["slurm-c1", "slurm-c2", "slurm-c3"]) == []
    # No job, or squeue gave nothing (slurmctld not answering is skipped before this).
    assert F["slurm_jobs_at_risk"]([], ["batch"], []) == []
    assert F["slurm_jobs_at_risk"](None, ["batch"], None) == []
    # Only nodes: the partition sentence is absent, the node one names each node once, sorted.
    only = F["slurm_jobs_at_risk"](["batch|n[2-3]|", "batch||n3"], ["batch"], ["n1"])
    assert len(only) == 1 and "2 job(s) running on or asking for compute node(s) n2, n3, which the slurm_compute" in only[0]


def test_node_hardware_errors_name_what_slurm_node_config_asks_above_the_host():
    """A compute node's slurm_node_config (its own, or the role's default) asking for more
    memory or CPUs than its facts show, or a socket/core/thread layout with more CPUs: each
    named with the value, what the host has and the fix (found on a lab: RealMemory above
    the host's made both nodes INVAL after a run that wrote slurm.conf). Equal or lower
    values, other keys, and a host without facts pass."""
    facts = {"processor_count": 1, "processor_cores": 2, "processor_threads_per_core": 1, "processor_vcpus": 2,
             "memtotal_mb": 24105}
    errors = F["slurm_node_hardware_errors"]("c1", {"c1": {"ansible_facts": facts,
                                                          "slurm_node_config": {"RealMemory": 999999, "CPUs": 4}}})
    assert len(errors) == 2
    assert errors[0].startswith("slurm_node_config sets RealMemory=999999, but the host has 24105 MB of memory: ")
    assert "INVAL (Low RealMemory)" in errors[0] and "leave RealMemory out" in errors[0]
    assert errors[1].startswith("slurm_node_config sets CPUs=4, but the host has 2 CPUs: ")
    # The role-wide default applies where the host sets none.
    layout = F["slurm_node_hardware_errors"]("c1", {"c1": {"ansible_facts": facts}},
                                             {"slurm_node_config": {"Sockets": 2, "CoresPerSocket": 2}})
    assert len(layout) == 1 and "Sockets=2, CoresPerSocket=2 and ThreadsPerCore=1, 4 CPUs, but the host has 2" in layout[0]
    fine = {"RealMemory": 20000, "CPUs": 2, "Sockets": 1, "CoresPerSocket": 2, "MemSpecLimit": 512, "State": "UNKNOWN"}
    assert F["slurm_node_hardware_errors"]("c1", {"c1": {"ansible_facts": facts, "slurm_node_config": fine}}) == []
    assert F["slurm_node_hardware_errors"]("c1", {"c1": {"ansible_facts": facts}}) == []
    assert F["slurm_node_hardware_errors"]("c1", {"c1": {"slurm_node_config": {"RealMemory": 999999}}}) == []


def _read(*lines, rc=0):
    return {"__slurm_saved_state": {"rc": rc, "stdout_lines": list(lines)}}


def test_daemon_moves_name_a_daemon_left_running_and_what_the_new_host_lacks():
    state, conf = "/var/lib/slurm/slurmctld", "old=/var/lib/slurm/slurmctld"
    hostvars = {
        "old": _read(conf, "old_state", "ctld_active", "dbd_active", "db", "ctld_host=old", "acct_host=old"),
        "new": _read(conf, "ctld_host=old", "acct_host=old"),
        "c1": _read(conf, "ctld_host=old"),
        "skipped": {"__slurm_saved_state": {"skipped": True}},
    }
    hosts = list(hostvars)
    problems = F["slurm_daemon_moves"](hosts, hostvars, ["new"], ["new"], state, "acct", True, "ctl", "dbd")
    assert len(problems) == 2
    ctl, dbd = problems
    assert ctl.startswith("old runs slurmctld, but ctl no longer holds it (new): left running, it would go on as a second "
                          "controller with the old configuration, and its state (jobs, node states, reservations in "
                          f"{state}) is not on new: slurmctld would start there with none")
    assert f"cp -a {state}/. into {state} there" in ctl and ctl.endswith("or keep old in ctl.")
    assert dbd.startswith("old runs slurmdbd, but dbd no longer holds it (new): left running, it would go on serving the "
                          "old accounting database, and its accounting database acct")
    assert "mysqldump --single-transaction --databases acct on old" in dbd and dbd.endswith("or keep old in dbd.")

    # Stopped, not copied: the state and the database are still named, the daemons no more.
    hostvars["old"] = _read(conf, "old_state", "db")
    stopped = F["slurm_daemon_moves"](hosts, hostvars, ["new"], ["new"], state, "acct", True, "ctl", "dbd")
    assert [p.split(",")[0] for p in stopped] == ["slurmctld's state is on old", "The accounting database acct is on old"]
    assert "move /var/lib/slurm/slurmctld aside on old first" in stopped[0]

    # Copied: the new host has state (same or other) and the database.
    hostvars["new"] = _read(conf, "other_state", "db")
    assert F["slurm_daemon_moves"](hosts, hostvars, ["new"], ["new"], state, "acct", True) == []
    # An external database is not the role's to copy; no slurmdbd group, no accounting.
    hostvars["new"] = _read(conf, "same_state")
    assert F["slurm_daemon_moves"](hosts, hostvars, ["new"], ["new"], state, "acct", False) == []
    assert F["slurm_daemon_moves"](hosts, hostvars, ["new"], [], state, "acct", True) == []
    # The new host not read (it did not answer): nothing can be said of what it lacks.
    del hostvars["new"]
    assert F["slurm_daemon_moves"](list(hostvars), hostvars, ["new"], ["new"], state, "acct", True) == []


def test_daemon_moves_read_hosts_out_of_the_slurm_groups_from_the_delegated_reads():
    """A host in no Slurm group any more is read from the primary (loop results, item: the host)."""
    hostvars = {"new": _read("old=/s", "ctld_host=old", "acct_host=old"), "c1": _read("old=/s", "ctld_host=old")}
    assert F["slurm_daemon_hosts_unread"](list(hostvars), hostvars) == ["old"]
    left = [{"__slurm_left_host": "old", "rc": 0, "stdout_lines": ["old=/s", "old_state", "ctld_active"]},
            {"__slurm_left_host": "gone", "unreachable": True}]
    problems = F["slurm_daemon_moves"](list(hostvars), hostvars, ["new"], ["new"], "/s", "acct", True,
                                       "slurm_controller", "slurm_dbd", left)
    assert len(problems) == 1 and problems[0].startswith("old runs slurmctld, but slurm_controller no longer holds it")
    assert F["slurm_daemon_hosts_unread"](["new"], {"new": _read("old=/s")}) == []

    # Stopped but still enabled there, the state copied (the new host has it): no play reaches
    # the host to disable slurmctld, which would start again at boot.
    hostvars["new"] = _read("old=/s", "same_state", "db")
    left[0]["stdout_lines"] = ["old=/s", "old_state", "slurmctld_on", "slurmdbd_on", "db"]
    problems = F["slurm_daemon_moves"](list(hostvars), hostvars, ["new"], ["new"], "/s", "acct", True,
                                       "slurm_controller", "slurm_dbd", left)
    assert problems == [
        "slurmctld is stopped but enabled on old, which slurm_controller no longer holds and which is in no Slurm group, "
        "so no play of this run reaches it: at its next boot slurmctld would start again and go on as a second controller "
        "with the old configuration. Disable it there (systemctl disable slurmctld) and run again.",
        "slurmdbd is stopped but enabled on old, which slurm_dbd no longer holds and which is in no Slurm group, so no "
        "play of this run reaches it: at its next boot slurmdbd would start again and go on serving the old accounting "
        "database. Disable it there (systemctl disable slurmdbd) and run again.",
    ]
    # The same read from a host still in the plays (its install play disables them): nothing.
    hostvars["old"] = {"__slurm_saved_state": {"rc": 0, "stdout_lines": left[0]["stdout_lines"]}}
    assert F["slurm_daemon_moves"](list(hostvars), hostvars, ["new"], ["new"], "/s", "acct", True) == []


def test_daemon_moves_name_a_renamed_accounting_database_left_behind():
    hostvars = {"dbd": _read("old=", "db_now=acct", "db_now_kept")}
    problems = F["slurm_daemon_moves"](["dbd"], hostvars, ["dbd"], ["dbd"], "/s", "acct2", True)
    assert len(problems) == 1
    assert problems[0].startswith("slurm_db_name is acct2, but slurmdbd on dbd keeps the accounting in database acct: ")
    assert "set slurm_db_name back to acct." in problems[0]
    # Copied (the new one exists), the same name, the old one gone, or an external database: nothing.
    for lines in (["db_now=acct", "db_now_kept", "db"], ["db_now=acct2", "db_now_kept"], ["db_now=acct"]):
        assert F["slurm_daemon_moves"](["dbd"], {"dbd": _read(*lines)}, ["dbd"], ["dbd"], "/s", "acct2", True) == []
    assert F["slurm_daemon_moves"](["dbd"], hostvars, ["dbd"], ["dbd"], "/s", "acct2", False) == []


def test_unshared_state_errors_name_controllers_whose_state_is_on_their_own_disk():
    hostvars = {"a": _read("state_fs=nfs"), "b": _read("state_fs=overlayfs"), "c": _read("state_fs=UNKNOWN (0x19830326)")}
    problems = F["slurm_unshared_state_errors"](list(hostvars), hostvars, ["a", "b"], "/var/lib/slurm/slurmctld", "ctl")
    assert problems == [
        "ctl has a backup controller (b), but slurm_state_save_location /var/lib/slurm/slurmctld is on a local file "
        "system on b (overlayfs): the controllers would not share slurmctld's state, and a backup taking over would "
        "start with none of the primary's jobs (or an older copy). Put slurm_state_save_location on storage every "
        "controller mounts (NFS or another network file system), with the state copied there (docs/slurm.md, "
        "\"Moving slurmctld's state\"), or keep one controller."]
    # Shared (nfs, a type coreutils does not name), one controller, or a controller not read: nothing.
    assert F["slurm_unshared_state_errors"](list(hostvars), hostvars, ["a", "c"], "/s") == []
    assert F["slurm_unshared_state_errors"](list(hostvars), hostvars, ["b"], "/s") == []
    assert F["slurm_unshared_state_errors"](["a"], hostvars, ["a", "b"], "/s") == []


def test_taken_port_errors_name_each_host_port_and_program_once():
    hostvars = {
        "c1": _read("old=/x", "port_taken=SlurmdPort 7000 slurmd slurm_config python3 1103",
                    "port_taken=SlurmdPort 7000 slurmd slurm_config python3 1103"),
        "ctl": _read("port_taken=DbdPort 6819 slurmdbd slurm_dbd_config nginx 7",
                     "port_taken=SlurmctldPort 6818 slurmctld slurm_config slurmd"),
        "c2": _read("ctld_active"),
    }
    assert F["slurm_taken_port_errors"](list(hostvars), hostvars) == [
        "On c1, SlurmdPort 7000 is taken by another program, python3 (pid 1103): slurmd could not listen on it and would "
        "stop at its next start. Stop that program, or give slurmd a free port (slurm_config: {SlurmdPort: ...}).",
        "On ctl, DbdPort 6819 is taken by another program, nginx (pid 7): slurmdbd could not listen on it and would stop "
        "at its next start. Stop that program, or give slurmdbd a free port (slurm_dbd_config: {DbdPort: ...}).",
        "On ctl, SlurmctldPort 6818 is taken by another program, slurmd: slurmctld could not listen on it and would "
        "stop at its next start. Stop that program, or give slurmctld a free port (slurm_config: {SlurmctldPort: ...}).",
    ]
    # A host not read, or read without such a line (a line cut short is not one): nothing.
    assert F["slurm_taken_port_errors"](["c2", "c9"], hostvars) == []
    assert F["slurm_taken_port_errors"](["c1"], {"c1": _read("port_taken=SlurmdPort 7000 slurmd slurm_config")}) == []


def test_mariadb_lines_write_booleans_as_mariadb_reads_them():
    assert F["slurm_mariadb_lines"]({"skip_name_resolve": True, "innodb_file_per_table": False, "max_allowed_packet": "16M",
                                     "unset": None}) == [
        "innodb_file_per_table=OFF", "max_allowed_packet=16M", "skip_name_resolve=ON"]
    with pytest.raises(AnsibleFilterError, match="single line"):
        F["slurm_mariadb_lines"]({"init_connect": "a\nb"})


def test_logrotate_lines_write_the_directives_as_data_then_the_owner_and_the_signal():
    lines = F["slurm_logrotate_lines"]("/var/log/slurm-ctld/slurmctld.log", "slurmctld", "slurm",
                                       {"size": "50M", "rotate": 12, "compress": True, "dateext": False, "maxage": None})
    assert lines == [
        "/var/log/slurm-ctld/slurmctld.log {", "    size 50M", "    rotate 12", "    compress",
        "    create 0600 slurm slurm", "    postrotate",
        "        systemctl kill --kill-whom=main --signal=SIGUSR2 slurmctld.service 2> /dev/null || true",
        "    endscript", "}"]


def test_logrotate_lines_refuse_a_directive_the_role_writes():
    with pytest.raises(AnsibleFilterError, match="sets 'postrotate', which the role writes itself"):
        F["slurm_logrotate_lines"]("/var/log/slurm/slurmd.log", "slurmd", "root", {"postrotate": "true"})
