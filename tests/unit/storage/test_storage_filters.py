"""Storage filters: LNet NIDs and networks, Lustre mounts and packages, storage classes."""

from __future__ import annotations

import pytest

from ansible_collections.clusterdos.cluster.plugins.filter.storage import (
    lnet_import_config,
    lnet_network_problems,
    lnet_nid_problems,
    lustre_client_packages,
    lustre_mount_problems,
    lustre_mount_source,
    storage_class_problems,
)

GOOD_NIDS = ["10.0.0.1@tcp", "10.0.0.1@tcp0", "192.168.1.2@o2ib", "192.168.1.2@o2ib1", "10.2.0.9@kfi", "10.0.0.1@tcp12"]
BAD_NIDS = {
    "10.0.0.1": "must be ADDRESS@NET",
    "10.0.0.1@": "is not an LNet network",
    "10.0.0.1@eth0": "is not an LNet network",
    "10.0.0.1@tcp@o2ib": "must be ADDRESS@NET",
    "10.0.0.300@tcp": "is not an IPv4 address",
    "mgs1@tcp": "is not an IPv4 address",
    "10.0.0.1@o2ib01": "leading zero",
    "10.0.0.1@TCP": "is not an LNet network",
    "@tcp": "is not an IPv4 address",
}


@pytest.mark.parametrize("nid", GOOD_NIDS)
def test_well_formed_nids_pass(nid):
    assert lnet_nid_problems([nid]) == []


@pytest.mark.parametrize(("nid", "reason"), sorted(BAD_NIDS.items()))
def test_malformed_nids_are_named_with_the_reason(nid, reason):
    (problem,) = lnet_nid_problems([nid])
    assert f"'{nid}'" in problem and reason in problem


def test_mount_with_a_malformed_nid_is_refused():
    mounts = [{"fsname": "scratch", "mgs_nids": ["10.0.0.1@tcp", "10.0.0.256@o2ib"], "path": "/lustre/scratch"}]
    (problem,) = lustre_mount_problems(mounts)
    assert problem.startswith("lustre mount scratch:") and "10.0.0.256@o2ib" in problem


@pytest.mark.parametrize(
    ("mount", "fragment"),
    [
        ({"fsname": "toolongname", "mgs_nids": ["10.0.0.1@tcp"], "path": "/l"}, "fsname 'toolongname'"),
        ({"fsname": "fs", "mgs_nids": [], "path": "/l"}, "at least one MGS NID"),
        ({"fsname": "fs", "mgs_nids": [[]], "path": "/l"}, "at least one MGS NID"),
        ({"fsname": "fs", "mgs_nids": ["10.0.0.1@tcp"], "path": "relative"}, "must be an absolute directory"),
        ({"fsname": "fs", "mgs_nids": ["10.0.0.1@tcp"], "path": "/"}, "must be an absolute directory"),
        ("fs", "is not a mapping"),
    ],
)
def test_mount_problems(mount, fragment):
    problems = lustre_mount_problems([mount])
    assert any(fragment in p for p in problems), problems


def test_mount_point_used_twice():
    mounts = [{"fsname": "a", "mgs_nids": ["10.0.0.1@tcp"], "path": "/lustre"},
              {"fsname": "b", "mgs_nids": ["10.0.0.1@tcp"], "path": "/lustre/"}]
    assert lustre_mount_problems(mounts) == ["lustre mount b: path '/lustre/' is already used by another Lustre mount"]


@pytest.mark.parametrize(
    ("mgs_nids", "source"),
    [
        (["10.0.0.1@tcp"], "10.0.0.1@tcp:/scratch"),
        ("10.0.0.1@tcp", "10.0.0.1@tcp:/scratch"),
        (["10.0.0.1@tcp", "10.0.0.2@tcp"], "10.0.0.1@tcp:10.0.0.2@tcp:/scratch"),
        ([["10.0.0.1@tcp", "192.168.1.1@o2ib"], "10.0.0.2@tcp"], "10.0.0.1@tcp,192.168.1.1@o2ib:10.0.0.2@tcp:/scratch"),
    ],
)
def test_mount_source_failover_and_multirail(mgs_nids, source):
    assert lustre_mount_source({"fsname": "scratch", "mgs_nids": mgs_nids}) == source


KERNEL = "5.14.0-427.13.1.el9_4.x86_64"


@pytest.mark.parametrize(
    ("os_family", "kernel", "module_type", "kmod_kernels", "expected"),
    [
        ("RedHat", KERNEL, "auto", [KERNEL], {"module_type": "kmod", "packages": ["kmod-lustre-client", "lustre-client"]}),
        ("RedHat", KERNEL, "auto", ["5.14.0-1.el9.x86_64"],
         {"module_type": "dkms", "packages": ["lustre-client-dkms", "lustre-client", f"kernel-devel-{KERNEL}"]}),
        ("RedHat", KERNEL, "dkms", [KERNEL],
         {"module_type": "dkms", "packages": ["lustre-client-dkms", "lustre-client", f"kernel-devel-{KERNEL}"]}),
        ("Debian", "6.8.0-45-generic", "auto", ["6.8.0-45-generic"],
         {"module_type": "kmod", "packages": ["lustre-client-modules-6.8.0-45-generic", "lustre-client-utils"]}),
        ("Debian", "6.8.0-47-generic", "auto", ["6.8.0-45-generic"],
         {"module_type": "dkms",
          "packages": ["lustre-client-modules-dkms", "lustre-client-utils", "linux-headers-6.8.0-47-generic"]}),
        ("Debian", "6.8.0-47-generic", "kmod", [],
         {"module_type": "kmod", "packages": ["lustre-client-modules-6.8.0-47-generic", "lustre-client-utils"]}),
    ],
)
def test_packages_match_the_running_kernel(os_family, kernel, module_type, kmod_kernels, expected):
    assert lustre_client_packages(os_family, kernel, module_type, kmod_kernels) == expected


@pytest.mark.parametrize(("args", "message"), [(("Suse", "6.4", "auto", []), "OS family"),
                                               (("Debian", "6.1", "rpm", []), "auto, kmod or dkms")])
def test_packages_refuse_unknown_inputs(args, message):
    with pytest.raises(ValueError, match=message):
        lustre_client_packages(*args)


def test_lnet_import_config_tcp_and_o2ib():
    config = lnet_import_config([{"net": "tcp", "interfaces": ["eth0"]}, {"net": "o2ib1", "interfaces": ["ib0", "ib1"]}])
    assert config == {"net": [
        {"net type": "tcp", "local NI(s)": [{"interfaces": {0: "eth0"}}]},
        {"net type": "o2ib1", "local NI(s)": [{"interfaces": {0: "ib0"}}, {"interfaces": {1: "ib1"}}]},
    ]}


@pytest.mark.parametrize(
    ("networks", "fragment"),
    [
        ([{"net": "eth", "interfaces": ["eth0"]}], "not an LNet network"),
        ([{"net": "tcp"}], "needs interfaces"),
        ([{"net": "tcp", "interfaces": "eth0"}], "needs interfaces"),
        ([{"net": "tcp", "interfaces": ["eth0"]}, {"net": "tcp0", "interfaces": ["eth1"]}], "listed twice"),
    ],
)
def test_lnet_network_problems(networks, fragment):
    assert any(fragment in p for p in lnet_network_problems(networks))


def test_lnet_import_config_refuses_bad_network():
    with pytest.raises(ValueError, match="not an LNet network"):
        lnet_import_config([{"net": "ib0", "interfaces": ["ib0"]}])


CLASSES = [{"name": "local-path", "default": True}, {"name": "shared-path"}, {"name": "local-disk"}]


def test_storage_classes_of_the_design_pass():
    assert storage_class_problems(CLASSES) == []


def test_storage_class_name_used_twice():
    problems = storage_class_problems([*CLASSES, {"name": "shared-path"}])
    assert problems == ["storage class name(s) used more than once: shared-path; give each class its own name"]


def test_two_default_storage_classes():
    (problem,) = storage_class_problems([*CLASSES[:2], {"name": "fast", "default": True}])
    assert "local-path, fast" in problem


def test_storage_class_name_kubernetes_would_refuse():
    (problem,) = storage_class_problems([{"name": "Shared_Path"}])
    assert "'Shared_Path' is not a valid Kubernetes name" in problem
