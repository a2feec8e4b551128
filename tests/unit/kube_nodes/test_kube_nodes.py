"""plugins/filter/kube_nodes.py: the labels clusterdos_hw gives, each node's wanted labels
and taints, the changes against the Node objects the API returns, and the upgrade's
version step. Cases are data (cases.yml): input and the exact expected output."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterdos.cluster.plugins.filter.kube_nodes import (
    FilterModule,
    kube_hw_labels,
    kube_label_changes,
    kube_node_changes,
    kube_node_wanted,
    kube_nodes_off_version_step,
    kube_taint_changes,
)

CASES = yaml.safe_load((Path(__file__).parent / "cases.yml").read_text())


def _ids(section: str) -> list[str]:
    return [case["name"] for case in CASES[section]]


@pytest.mark.parametrize("case", CASES["hw_labels"], ids=_ids("hw_labels"))
def test_hw_labels(case):
    kwargs = {"prefix": case["prefix"]} if "prefix" in case else {}
    assert kube_hw_labels(case["hw"], **kwargs) == case["labels"]


@pytest.mark.parametrize("case", CASES["wanted"], ids=_ids("wanted"))
def test_wanted(case):
    got = kube_node_wanted(case["nodes"], case["hostvars"], case["control_planes"],
                           case.get("control_plane_taints"), case.get("hardware_labels", True))
    assert got == case["wanted"]


@pytest.mark.parametrize("case", CASES["changes"], ids=_ids("changes"))
def test_changes(case):
    assert kube_node_changes(case["items"], case["wanted"]) == case["changes"]


@pytest.mark.parametrize("case", CASES["version_step"], ids=_ids("version_step"))
def test_version_step(case):
    assert kube_nodes_off_version_step(case["items"], case["version"]) == case["refused"]


def test_changes_apply_to_the_present_state_converge():
    """Applying the changes (a merge patch, k8s_taint's add-or-replace) leaves nothing to change."""
    case = CASES["changes"][1]
    node = case["items"][0]
    patch = kube_node_changes(case["items"], case["wanted"])[0]["labels"]
    labels = {k: v for k, v in {**node["metadata"]["labels"], **patch}.items() if v is not None}
    assert kube_label_changes(labels, case["wanted"]["w1"]["labels"]) == {}
    assert labels["other"] == "kept"

    case = CASES["changes"][2]
    present = case["items"][0]["spec"]["taints"]
    add = kube_taint_changes(present, case["wanted"]["cp1"]["taints"])
    merged = [t for t in present if not any((t["key"], t["effect"]) == (a["key"], a["effect"]) for a in add)] + add
    assert kube_taint_changes(merged, case["wanted"]["cp1"]["taints"]) == []


def test_bad_inputs_are_refused_with_the_host_named():
    with pytest.raises(AnsibleFilterError, match="w1 must be a mapping"):
        kube_node_wanted(["w1"], {"w1": {"kubernetes_cluster_node_labels": ["a=b"]}}, [])
    with pytest.raises(AnsibleFilterError, match="KEY\\[=VALUE\\]:EFFECT"):
        kube_node_wanted(["w1"], {"w1": {"kubernetes_cluster_node_taints": ["no-effect"]}}, [])
    with pytest.raises(AnsibleFilterError, match="must be a mapping"):
        kube_hw_labels(["gpus"])


def test_label_values_are_valid_kubernetes_label_values():
    import re
    valid = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
    hw = {"gpus": {"vendor": "nvidia", "count": 1, "type": "--Weird  Model (rev 2)--" + "x" * 80, "architecture": "a/b"}}
    for key, value in kube_hw_labels(hw).items():
        assert value is None or (valid.match(value) and len(value) <= 63), (key, value)


def test_every_filter_is_registered():
    assert set(FilterModule().filters()) == {
        "kube_hw_labels", "kube_node_wanted", "kube_label_changes", "kube_taint_changes",
        "kube_node_changes", "kube_nodes_off_version_step"}
