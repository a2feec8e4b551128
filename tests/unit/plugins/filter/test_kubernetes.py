"""Filters of plugins/filter/kubernetes.py: TOML rendering, kubeadm args, taints,
versions and CIDR overlaps."""

from __future__ import annotations

import tomllib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterdos.cluster.plugins.filter.kubernetes import (
    archive_mismatches,
    bad_image_archives,
    image_archives_to_load,
    cidr_overlaps,
    differing_vars,
    kube_binaries_to_copy,
    kube_binary_version_mismatches,
    kube_minor,
    kube_minor_skew,
    kube_nodes_not_ready,
    kube_taints,
    kube_version_in_range,
    kubeadm_args,
    to_toml,
)


def test_to_toml_round_trips_a_containerd_dropin():
    data = {
        "version": 2,
        "plugins": {
            "io.containerd.grpc.v1.cri": {
                "sandbox_image": "registry.k8s.io/pause:3.10",
                "restrict_oom_score_adj": True,
                "containerd": {"runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2",
                                                     "options": {"SystemdCgroup": True}}}},
            }
        },
        "imports": ["/etc/containerd/conf.d/*.toml"],
    }
    text = to_toml(data)
    assert tomllib.loads(text) == data
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]' in text


def test_to_toml_quotes_keys_and_escapes_strings():
    data = {"host": {"http://mirror:5000": {"capabilities": ["pull", "resolve"]}}, "server": 'a "b"\n'}
    assert tomllib.loads(to_toml(data)) == data


def test_to_toml_array_of_tables():
    data = {"rule": [{"a": 1}, {"a": 2, "b": {"c": "x"}}]}
    assert tomllib.loads(to_toml(data)) == data


@pytest.mark.parametrize("bad", [{"a": None}, {"a": [1, {"b": 2}]}, {"a": object()}])
def test_to_toml_rejects_what_toml_cannot_hold(bad):
    with pytest.raises(AnsibleFilterError):
        to_toml(bad)


def test_kubeadm_args_from_mapping_sorted_and_stringified():
    assert kubeadm_args({"b": 1, "a": True, "c": ["x", "y"]}) == [
        {"name": "a", "value": "true"}, {"name": "b", "value": "1"}, {"name": "c", "value": "x,y"}]


def test_kubeadm_args_keeps_v1beta4_list_order_and_repeats():
    args = [{"name": "feature-gates", "value": "A=true"}, {"name": "feature-gates", "value": "B=true"}]
    assert kubeadm_args(args) == args
    assert kubeadm_args(None) == []
    with pytest.raises(AnsibleFilterError):
        kubeadm_args([{"name": "x"}])


def test_kube_taints_parses_strings_and_mappings():
    assert kube_taints(["node-role.kubernetes.io/control-plane:NoSchedule", "gpu=true:NoExecute",
                        {"key": "a", "value": "", "effect": "PreferNoSchedule"}]) == [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
        {"key": "gpu", "value": "true", "effect": "NoExecute"},
        {"key": "a", "effect": "PreferNoSchedule"}]


@pytest.mark.parametrize("bad", ["gpu=true", "gpu:Sometimes", {"key": "a", "effect": "Never"}])
def test_kube_taints_rejects_bad_effects(bad):
    with pytest.raises(AnsibleFilterError):
        kube_taints([bad])


def test_versions():
    assert kube_minor("v1.34.1") == "1.34"
    assert kube_minor_skew("v1.33.5", "1.34.1") == 1
    assert kube_minor_skew("1.32.0", "1.34.1") == 2
    assert kube_minor_skew("1.34.2", "1.34.1") == 0
    assert kube_minor_skew("1.35.0", "1.34.1") == -1
    assert kube_version_in_range("1.34.1", "1.31", "1.36")
    assert not kube_version_in_range("1.30.9", "1.31", "1.36")
    assert not kube_version_in_range("1.37.0", "1.31", "1.36")
    with pytest.raises(AnsibleFilterError):
        kube_minor("latest")


def test_cidr_overlaps():
    assert cidr_overlaps({"pod": "10.244.0.0/16", "svc": "10.96.0.0/12", "nodes": ["192.168.1.10/32"]}) == []
    assert cidr_overlaps({"pod": "10.0.0.0/8", "svc": "10.96.0.0/12"}) == ["pod 10.0.0.0/8 overlaps svc 10.96.0.0/12"]
    problems = cidr_overlaps({"pod": "10.244.0.0/16", "nodes": ["10.244.3.4/32", "10.1.0.1/32"]})
    assert problems == ["pod 10.244.0.0/16 overlaps nodes 10.244.3.4/32"]
    assert cidr_overlaps({"pod": "10.244.0.0/33"}) == ["pod 10.244.0.0/33 is not a valid CIDR"]
    # Members of one named list are never compared with each other; empty values are skipped.
    assert cidr_overlaps({"nodes": ["10.0.0.1/32", "10.0.0.1/32"], "svc": ""}) == []


# --- image archives, binary versions, node readiness ---------------------------------------

GOOD_ARCHIVE = {"file": "pause.tar", "sha256": "a" * 64, "images": ["registry.k8s.io/pause:3.10.2"]}


@pytest.mark.parametrize("entry", [
    {"file": "pause.tar", "sha256": "a" * 63, "images": ["x"]},          # short checksum
    {"file": "pause.tar", "sha256": "A" * 64, "images": ["x"]},          # not lowercase hex
    {"file": "../pause.tar", "sha256": "a" * 64, "images": ["x"]},       # a path, not a name
    {"file": "pause.tar", "sha256": "a" * 64, "images": []},             # lists nothing
    {"file": "pause.tar", "sha256": "a" * 64, "images": "registry.k8s.io/pause:3.10.2"},  # a string
    {"sha256": "a" * 64, "images": ["x"]},                               # no file
    "pause.tar",                                                         # not a mapping
])
def test_bad_image_archives_names_each_bad_entry(entry):
    assert len(bad_image_archives([GOOD_ARCHIVE, entry])) == 1
    assert bad_image_archives([GOOD_ARCHIVE]) == []


def test_archive_mismatches_from_a_stat_loop():
    results = [
        {"item": GOOD_ARCHIVE, "stat": {"exists": True, "isreg": True, "checksum": "a" * 64}},
        {"item": {"file": "etcd.tar", "sha256": "b" * 64}, "stat": {"exists": False}},
        {"item": {"file": "dir.tar", "sha256": "b" * 64}, "stat": {"exists": True, "isreg": False}},
        {"item": {"file": "kube-proxy.tar", "sha256": "b" * 64}, "stat": {"exists": True, "isreg": True, "checksum": "c" * 64}},
    ]
    assert archive_mismatches(results) == [
        "etcd.tar: missing", "dir.tar: not a regular file",
        f"kube-proxy.tar: sha256 {'c' * 64} (expected {'b' * 64})"]


def _ran(name, stdout, rc=0, stderr=""):
    return {"item": {"name": name}, "rc": rc, "stdout": stdout, "stderr": stderr}


def test_binary_versions_match_exactly_and_kubectl_within_one_minor():
    ok = [_ran("kubeadm", "v1.36.2"), _ran("kubelet", "Kubernetes v1.36.2"),
          _ran("kubectl", '{"clientVersion": {"gitVersion": "v1.35.2"}}')]
    assert kube_binary_version_mismatches(ok, "1.36.2") == []
    bad = [_ran("kubeadm", "v1.36.1"), _ran("kubelet", "Kubernetes v1.35.2"),
           _ran("kubectl", '{"clientVersion": {"gitVersion": "v1.34.0"}}')]
    assert kube_binary_version_mismatches(bad, "1.36.2") == [
        "kubeadm is v1.36.1, not v1.36.2", "kubelet is v1.35.2, not v1.36.2",
        "kubectl is v1.34.0, more than one minor from v1.36.2"]


def test_a_binary_that_cannot_run_is_named():
    res = kube_binary_version_mismatches([_ran("kubeadm", "", rc=126, stderr="cannot execute binary file: Exec format error")],
                                         "1.36.2")
    assert res == ["kubeadm did not run (cannot execute binary file: Exec format error)"]
    assert kube_binary_version_mismatches([_ran("kubelet", "hello")], "1.36.2") == ["kubelet reports 'hello', no version"]


def _node(name, status, message=""):
    return {"metadata": {"name": name},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": status, "message": message}]}}


def test_nodes_not_ready_lists_missing_and_unready_nodes_only():
    items = [_node("cp1", "True"), _node("w1", "False", "container runtime network not ready"), _node("extra", "False")]
    assert kube_nodes_not_ready(items, ["cp1", "w1", "w2"]) == [
        "w1 (Ready False: container runtime network not ready)", "w2 (not registered)"]
    assert kube_nodes_not_ready(items, ["cp1"]) == []


def test_image_archives_to_load_are_those_with_a_missing_image():
    two = {"file": "two.tar", "sha256": "b" * 64, "images": ["a:1", "b:1"]}
    assert image_archives_to_load([GOOD_ARCHIVE, two], ["registry.k8s.io/pause:3.10.2", "a:1"]) == [two]
    assert image_archives_to_load([GOOD_ARCHIVE, two], ["registry.k8s.io/pause:3.10.2", "a:1", "b:1"]) == []


def test_binaries_to_copy_are_the_missing_and_the_other_versions():
    wanted = [_ran("kubeadm", "v1.36.2"), _ran("kubelet", "Kubernetes v1.36.2"),
              _ran("kubectl", '{"clientVersion": {"gitVersion": "v1.35.2"}}')]
    installed = [_ran("kubeadm", "v1.36.2"), _ran("kubelet", "Kubernetes v1.36.1"), _ran("kubectl", "", rc=2)]
    assert kube_binaries_to_copy(["kubeadm", "kubelet", "kubectl"], wanted, installed) == ["kubelet", "kubectl"]
    assert kube_binaries_to_copy(["kubeadm", "kubelet", "kubectl"], wanted, wanted) == []


def test_differing_vars_names_settings_not_alike_on_every_host():
    hostvars = {"a": {"x": [1], "y": "same"}, "b": {"x": [2], "y": "same"}, "c": {"y": "same", "z": 1}}
    assert differing_vars(["x", "y", "z", "unset"], ["a", "b", "c"], hostvars) == ["x", "z"]
    assert differing_vars(["x"], ["a"], hostvars) == []
