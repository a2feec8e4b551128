"""The Slurm preflight: each bad input from issue 3 is rejected with a message that says
what to fix, and a good inventory passes."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.clusterdos.cluster.plugins.filter.slurm import FilterModule

check = FilterModule().filters()["slurm_inventory_errors"]

DEFAULT_PARTITIONS = [
    {"name": "batch", "groups": ["slurm_compute"], "default": True},
    {"name": "gpu", "groups": ["slurm_compute"], "gpus": True, "optional": True},
]


def run(groups: dict[str, list[str]] | None = None, hostvars: dict[str, Any] | None = None,
        partitions: list[dict[str, Any]] | None = None, version: str = "22.05", munge_key: str = "") -> list[str]:
    groups = groups if groups is not None else {"slurm_controller": ["ctl"], "slurm_compute": ["c1", "c2"], "gpus": []}
    return check(groups, hostvars or {}, controller_group="slurm_controller", compute_group="slurm_compute",
                 partitions=partitions if partitions is not None else DEFAULT_PARTITIONS, version=version,
                 munge_key=munge_key)


def test_good_inventory_passes():
    assert run() == []


def test_partition_with_no_nodes():
    errors = run(partitions=DEFAULT_PARTITIONS + [{"name": "big", "groups": ["gpus"]}])
    assert len(errors) == 1
    assert "Partition 'big' has no nodes" in errors[0] and "set optional: true" in errors[0]


def test_partition_naming_a_missing_group_says_so():
    errors = run(partitions=[{"name": "x", "groups": ["nosuch"], "default": True}])
    assert "no such inventory group: nosuch" in errors[0]


def test_non_optional_gpu_partition_without_gpu_hosts():
    errors = run(partitions=[{"name": "gpu", "groups": ["slurm_compute"], "gpus": True}])
    assert "Partition 'gpu' has no nodes" in errors[0] and "declares GPUs" in errors[0]


def test_node_in_conflicting_partitions():
    parts = DEFAULT_PARTITIONS + [{"name": "debug", "hosts": ["c2"], "exclusive": True}]
    errors = run(partitions=parts)
    assert errors == [
        "Node c2 is in partitions batch, debug, but debug is exclusive (its nodes belong to no other partition): "
        "take the node out of one of them."]


def test_two_default_partitions_conflict():
    parts = [{"name": "a", "groups": ["slurm_compute"], "default": True},
             {"name": "b", "groups": ["slurm_compute"], "default": True}]
    assert any("mark only one default" in e for e in run(partitions=parts))


def test_duplicate_partition_names():
    parts = DEFAULT_PARTITIONS + [{"name": "batch", "groups": ["slurm_compute"]}]
    assert any("'batch' is defined more than once" in e for e in run(partitions=parts))


def test_partition_host_outside_compute_group():
    parts = DEFAULT_PARTITIONS + [{"name": "x", "hosts": ["ctl"]}]
    errors = run(partitions=parts)
    assert any("lists ctl, not in group 'slurm_compute'" in e for e in errors)


def test_gres_on_host_without_gpus():
    errors = run(hostvars={"c1": {"slurm_node_gres": [{"name": "gpu", "type": "a100", "count": 4}]},
                           "c2": {"slurm_node_gres": ["gpu:2"], "clusterdos_gpus": [{"vendor": "nvidia", "count": 2}]}})
    assert len(errors) == 1
    assert errors[0].startswith("Host c1 declares GPU GRES") and "clusterdos_gpus" in errors[0]


def test_non_gpu_gres_needs_no_gpus():
    assert run(hostvars={"c1": {"slurm_node_gres": ["nic:mlx5:1"]}}) == []


@pytest.mark.parametrize("key", ["short", "x" * 31])
def test_short_munge_key(key):
    errors = run(munge_key=key)
    assert len(errors) == 1 and f"munge_key is {len(key)} bytes" in errors[0] and "at least 32" in errors[0]


def test_munge_key_of_32_bytes_passes():
    assert run(munge_key="k" * 32) == []


@pytest.mark.parametrize("controllers", [[], ["a", "b", "c"]])
def test_controller_group_size(controllers):
    errors = run(groups={"slurm_controller": controllers, "slurm_compute": ["c1"]})
    assert len(errors) == 1
    assert f"has {len(controllers)} hosts" in errors[0] and "put 1 or 2 hosts" in errors[0]


def test_backup_controller_is_fine():
    assert run(groups={"slurm_controller": ["a", "b"], "slurm_compute": ["c1"]}) == []


@pytest.mark.parametrize("version", ["21.08", "99.99.1", "latest", "22.5"])
def test_unknown_slurm_version(version):
    errors = run(version=version)
    assert len(errors) == 1 and "slurm_version" in errors[0] and "22.05" in errors[0]


def test_empty_compute_group():
    errors = run(groups={"slurm_controller": ["ctl"], "slurm_compute": []})
    assert any("has no hosts: add at least one compute node" in e for e in errors)


cluster_wide = FilterModule().filters()["slurm_cluster_wide_errors"]


def test_cluster_wide_values_set_for_all_hosts_pass():
    hostvars = {h: {"slurm_config": {"MpiDefault": "pmix"}, "slurm_cluster_name": "hpc"} for h in ("ctl", "c1", "c2")}
    assert cluster_wide(["ctl", "c1", "c2"], hostvars) == []


def test_cluster_wide_values_left_to_the_role_pass():
    assert cluster_wide(["ctl", "c1", "c2"], {"ctl": {}, "c1": {"slurm_node_weight": 5}, "c2": {}}) == []


def test_slurm_config_set_for_some_hosts_only_is_refused_naming_hosts_and_values():
    hostvars = {"ctl": {"slurm_config": {"MpiDefault": "pmix"}}, "c1": {}, "c2": {}}
    errors = cluster_wide(["ctl", "c1", "c2", "ctl"], hostvars)
    assert len(errors) == 1
    assert errors[0].startswith("slurm_config differs between the Slurm hosts (")
    assert 'ctl: {"MpiDefault": "pmix"}' in errors[0]
    assert "c1, c2: the role's default" in errors[0]
    assert "set slurm_config once for all Slurm hosts" in errors[0]


def test_each_differing_variable_has_its_own_message_and_long_values_are_cut():
    long_config = {f"Key{i}": "x" * 20 for i in range(20)}
    hostvars = {"ctl": {"slurm_cluster_name": "a", "slurm_config": long_config},
                "c1": {"slurm_cluster_name": "b", "slurm_config": long_config}, "c2": {"slurm_cluster_name": "a"}}
    errors = cluster_wide(["ctl", "c1", "c2"], hostvars)
    assert [e.split(" ", 1)[0] for e in errors] == ["slurm_config", "slurm_cluster_name"]
    assert "c1, ctl: " in errors[0] and "...; c2: the role's default" in errors[0]
    assert 'c1: "b"' in errors[1] and 'c2, ctl: "a"' in errors[1]


def test_log_rotation_set_for_some_hosts_only_is_refused_as_one_policy():
    hostvars = {"ctl": {}, "c1": {"slurm_log_rotation": {"rotate": 2}}, "c2": {}}
    errors = cluster_wide(["ctl", "c1", "c2"], hostvars)
    assert len(errors) == 1
    assert errors[0].startswith("slurm_log_rotation differs between the Slurm hosts (c1: {\"rotate\": 2}; c2, ctl: the role's default)")
    assert "log rotation is one policy for the cluster" in errors[0] and "gres.conf" not in errors[0]


log_rotation_errors = FilterModule().filters()["slurm_log_rotation_errors"]


def test_log_rotation_directives_as_data_pass():
    assert log_rotation_errors({"size": "50M", "rotate": 12, "compress": True, "dateext": False, "maxage": None}) == []


@pytest.mark.parametrize(("directives", "says"), [
    (["size 50M"], "must be a mapping of logrotate directives"),
    ({"Size": "50M"}, "has the key 'Size': a key is one logrotate directive"),
    ({"create": "0644 root root"}, "sets 'create', which the role writes itself"),
    ({"postrotate": "kill -HUP 1"}, "sets 'postrotate', which the role writes itself"),
    ({"size": ["50M"]}, "slurm_log_rotation's size is [\"50M\"]"),
    ({"rotate": "4\npostrotate"}, "give true (the word alone), false or null (left out), or one line"),
])
def test_bad_log_rotation_directives_are_refused_naming_the_key_and_fix(directives, says):
    errors = log_rotation_errors(directives)
    assert len(errors) == 1 and says in errors[0], errors
