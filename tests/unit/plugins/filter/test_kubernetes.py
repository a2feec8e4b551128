"""Filters of plugins/filter/kubernetes.py: TOML rendering, kubeadm args, taints,
versions and CIDR overlaps."""

from __future__ import annotations

import tomllib

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterdos.cluster.plugins.filter.kubernetes import (
    cidr_overlaps,
    kube_minor,
    kube_minor_skew,
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
