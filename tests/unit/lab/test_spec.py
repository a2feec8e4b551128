"""Lab specs are checked before anything on the machine changes."""

from __future__ import annotations

import ipaddress
import os

import pytest

from clusterdos_lab.spec import SUBNET_POOL, build_spec, cpuset_cpus, default_subnet
from clusterdos_lab.util import LabError


def test_count_makes_named_hosts_in_lab_group():
    spec = build_spec("t1", None, None, [], 3, None, None)
    assert [h.name for h in spec.hosts] == ["t1-1", "t1-2", "t1-3"]
    assert all(h.groups == ["lab"] for h in spec.hosts)
    assert spec.backend == "podman"


def test_host_args_carry_groups_and_addresses_follow_gateway():
    spec = build_spec("t2", None, "10.99.0.0/24", ["cp1=kube_control_plane,slurm_controller", "gpu1=kube_node"], None, None, None)
    assert spec.hosts[0].groups == ["kube_control_plane", "slurm_controller"]
    assert spec.gateway == "10.99.0.1"
    assert spec.host_ip(0) == "10.99.0.10" and spec.host_ip(1) == "10.99.0.11"


def test_default_subnet_is_stable_and_from_pool():
    a, b = default_subnet("alpha"), default_subnet("alpha")
    assert a == b
    assert ipaddress.ip_network(a).subnet_of(SUBNET_POOL)


def test_site_layout_loads():
    spec = build_spec("t3", None, None, [], None, "site", None)
    groups = {g for h in spec.hosts for g in h.groups}
    assert {"slurm_login", "slurm_controller", "slurm_dbd", "slurm_compute"} <= groups


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad_Name"}, "lab name"),
        ({"backend": "docker"}, "backend"),
        ({"subnet": "8.8.8.0/24"}, "private IPv4"),
        ({"subnet": "10.0.0.0/30"}, "/26 or larger"),
        ({"subnet": "not-a-net"}, "not a network"),
        ({"hosts": ["a", "a"]}, "given twice"),
        ({"hosts": ["UPPER"]}, "host name"),
        ({"hosts": ["a=all"]}, "not a valid inventory group"),
        ({"hosts": [], "count": None}, "no hosts"),
        ({"layout": "no-such-layout"}, "not found"),
        ({"cpuset": "1;2"}, "not a CPU list"),
        ({"cpuset": "3-1"}, "not a CPU list"),
        ({"cpuset": "4096"}, "does not offer"),
        ({"cpuset": "0", "backend": "qemu"}, "podman hosts only"),
    ],
)
def test_bad_input_is_refused_with_a_reason(kwargs, message):
    args = {"name": "ok", "backend": None, "subnet": None, "hosts": ["h1"], "count": None, "layout": None, "memory": None,
            "cpuset": None}
    args.update(kwargs)
    with pytest.raises(LabError, match=message):
        build_spec(args["name"], args["backend"], args["subnet"], args["hosts"], args["count"], args["layout"], args["memory"],
                   args["cpuset"])


def test_cpuset_reaches_every_host_and_reads_as_cpu_numbers():
    usable = min(os.sched_getaffinity(0))
    spec = build_spec("t4", None, None, ["a", "b"], None, None, None, str(usable))
    assert [h.cpuset for h in spec.hosts] == [str(usable), str(usable)]
    assert cpuset_cpus("0,2-4,7") == {0, 2, 3, 4, 7}
