"""The base role's input checks (roles/base/tasks/validate.yml, also its preflight entry
point), run through ansible-playbook on this machine with its real facts (connection
local, read-only: the container-only kernel-module probe is off): every problem is named at
once in one failure, and the role's defaults pass."""

from __future__ import annotations

import pytest

BASE = {"base_container_host": False, "base_time_servers": ["10.0.0.254"], "base_hosts_manage": False}


@pytest.fixture(autouse=True)
def _json_results(monkeypatch):
    # JSON results: the messages' quotes as written (YAML output doubles them).
    monkeypatch.setenv("ANSIBLE_CALLBACK_RESULT_FORMAT", "json")


def _run(role_runner, extra):
    return role_runner("base", "preflight.yml", {**BASE, **extra}, gather_facts=True)[0]


def test_defaults_pass(role_runner):
    proc = _run(role_runner, {})
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.mark.parametrize(
    ("bad", "messages"),
    [
        ({"base_package_proxy": "ftp://proxy"}, ["base_package_proxy = 'ftp://proxy'", "must look like http://HOST:PORT"]),
        ({"base_kernel_modules": "overlay"}, ["base_kernel_modules must be YAML lists"]),
        ({"base_kernel_modules": ["bad module"]}, ["not kernel module names: ['bad module']"]),
        ({"base_sysctl_config": {"Not A Key": 1}}, ["base_sysctl_config keys must be dotted sysctl names", "['Not A Key']"]),
        ({"base_sysctl_config": {"net.ipv4.ip_forward": "1=2"}}, ["single-line without '='"]),
        ({"base_time_servers": [], "base_time_pools": []}, ["name at least one NTP source"]),
        ({"base_dnf_repos": [{"name": "x"}]}, ["base_dnf_repos needs a name and one of baseurl"]),
        ({"base_hosts_manage": True, "base_hosts_group": "nogroup"}, ["base_hosts_group is 'nogroup', which is not a group"]),
        ({"base_package_mirror": "ftp://m", "base_kernel_modules": ["a b"], "base_time_servers": [], "base_time_pools": []},
         ["base_package_mirror = 'ftp://m'", "not kernel module names: ['a b']", "name at least one NTP source"]),
    ],
    ids=["proxy", "not-a-list", "module-name", "sysctl-key", "sysctl-value", "time", "dnf", "hosts-group", "all-at-once"],
)
def test_bad_inputs_fail_naming_each_problem(role_runner, bad, messages):
    proc = _run(role_runner, bad)
    assert proc.returncode != 0
    failure = " ".join(proc.stdout[proc.stdout.find("FAILED!"):].split())
    for message in messages:
        assert message in failure, (message, failure[-2000:])
