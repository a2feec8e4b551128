"""inventory_errors and duplicate_key_errors: the controller-side preflight's checks."""

from __future__ import annotations

import pytest

from ansible_collections.clusterdos.cluster.plugins.filter import inventory as inv


def errors(hostvars: dict) -> list[str]:
    return inv.inventory_errors(hostvars, list(hostvars))


def test_good_values_pass():
    hv = {"n1": {"slurm_db_port": 3306, "clusterdos_time_servers": ["10.0.0.1"], "base_swap_disabled": "true",
                 "slurm_config": {"SlurmctldPort": "6817-6818"}, "slurm_node_config": {"RealMemory": 1024},
                 "slurm_version": "23.02", "slurm_db_password": "Str0ng-pass_word", "ansible_host": "10.0.0.1",
                 "addons_hosts": "localhost"}}
    assert errors(hv) == []


@pytest.mark.parametrize(
    ("hostvars", "expected"),
    [
        ({"n1": {"slurm_db_port": 70000}}, "slurm_db_port = 70000 (on n1): must be a TCP port, 1-65535."),
        ({"n1": {"slurm_config": {"SlurmdPort": 0}}}, "SlurmdPort=0 must be a TCP port"),
        ({"n1": {"slurm_node_config": {"RealMemory": -1}}}, "RealMemory=-1 must be a whole number, 1 or more"),
        ({"n1": {"slurm_db_password": "a#b"}}, "slurm_db_password = (hidden)"),
        ({"n1": {"clusterdos_time_servers": "a,b"}}, "must be a YAML list, not a string (a string is read one character at a time): write ['a', 'b']"),
        ({"n1": {"slurm_accounting_enforce": ["qos", ["x"]]}}, "must be a list whose items are each a string"),
        ({"n1": {"slurm_partitons": []}}, "slurm_partitons (on n1): is not a variable of any role (did you mean slurm_partitions?)."),
        ({"n1": {"nvidia_gpu_kernel_modules": "closed"}}, "must be one of open, proprietary"),
        ({"n1": {"slurm_version": 22.1}}, "quote it"),
        ({"n1": {"clusterdos_package_mirror": "mirror/debian"}}, "clusterdos_package_mirror = 'mirror/debian'"),
        ({"n1": {"clusterdos_upgrade_batch": 0}}, "must be 1 or more"),
        ({"n1": {"clusterdos_time_servers": [], "clusterdos_package_proxy": "http://p:3142"}}, "is empty and no pool is set"),
        ({"n1": {"validate_report_formats": ["json", "pdf"]}},
         "validate_report_formats = ['json', 'pdf'] (on n1): each item must be one of json, junit, html (not pdf)."),
    ],
)
def test_bad_values_are_named_with_host_value_and_fix(hostvars, expected):
    found = errors(hostvars)
    assert any(expected in e for e in found), found


def test_a_list_option_with_choices_takes_any_of_them_per_item():
    assert errors({"n1": {"validate_report_formats": ["json", "html"]}}) == []


def test_one_message_per_problem_lists_the_hosts():
    hv = {f"n{i}": {"slurm_db_port": 0} for i in range(8)}
    found = errors(hv)
    assert len(found) == 1
    assert "(on n0, n1, n2, n3, n4 and 3 more)" in found[0]


def test_empty_time_servers_without_proxy_keep_the_public_pool():
    assert errors({"n1": {"clusterdos_time_servers": []}}) == []


def test_duplicate_keys_are_found_with_lines(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    a: {}\n    b: {}\n    a: {x: 1}\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("k: 1\nsecret: !vault |\n  abc\nk: 2\n")
    found = inv.duplicate_key_errors([str(tmp_path / "hosts.yml")])
    assert any("hosts.yml:5: key 'a' is given twice in one mapping (first on line 3)" in f for f in found), found
    assert any("all.yml:4: key 'k'" in f for f in found), found


def test_no_duplicates_no_messages(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    a: {}\n    b: {}\n")
    assert inv.duplicate_key_errors([str(tmp_path / "hosts.yml")]) == []
