"""The add-on catalog: the shipped one is sound; bad catalogs and requests are refused with a clear message."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.addon_catalog import (
    PINNED_VERSION,
    CatalogError,
    deep_merge,
    dependency_order,
    plan,
    removal_plan,
    validate_catalog,
)

ROOT = Path(__file__).parents[4]
CATALOG = yaml.safe_load((ROOT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
CASES = yaml.safe_load((Path(__file__).parents[2] / "addons" / "catalog_cases.yml").read_text())
ISSUE_ADDONS = {
    "cilium", "cert_manager", "metrics_server", "kube_state_metrics", "monitoring", "logging", "node_feature_discovery",
    "gpu_operator", "network_operator", "amd_gpu_operator", "sealed_secrets", "cloudnative_pg", "kueue", "mpi_operator",
    "training_operator", "vllm", "dashboard", "local_path", "shared_path", "local_disk",
}


def _catalog(changes):
    catalog = copy.deepcopy(CASES["base"])
    for name, entry in (changes or {}).items():
        if entry is None:
            catalog.pop(name, None)
        elif name in catalog:
            for key, value in entry.items():
                if value is None:
                    catalog[name].pop(key, None)
                else:
                    catalog[name][key] = value
        else:
            catalog[name] = entry
    return catalog


# --- the shipped catalog ------------------------------------------------------------
def test_shipped_catalog_is_sound():
    assert validate_catalog(CATALOG) == []


def test_shipped_catalog_has_every_addon_of_the_issue():
    assert ISSUE_ADDONS <= set(CATALOG)


def test_every_shipped_version_is_pinned():
    assert [n for n, e in CATALOG.items() if not PINNED_VERSION.match(e["version"])] == []


def test_one_nfd_shared_by_the_three_operators():
    nfd = [n for n, e in CATALOG.items() if e["chart"] == "node-feature-discovery"]
    assert nfd == ["node_feature_discovery"]
    for op in ("gpu_operator", "network_operator", "amd_gpu_operator"):
        assert "node_feature_discovery" in CATALOG[op]["depends_on"]
        assert CATALOG[op]["shared_nfd_values"], op


def test_whole_shipped_catalog_plans_in_dependency_order():
    enabled = [n for n in CATALOG if CATALOG[n]["repo_url"]]
    releases = plan(CATALOG, enabled)
    order = [r["name"] for r in releases]
    assert sorted(order) == sorted(enabled)
    for rel in releases:
        for dep in rel["depends_on"]:
            assert order.index(dep) < order.index(rel["name"]), (dep, rel["name"])


def test_shipped_gpu_operator_has_its_own_nfd_off_after_merging():
    gpu = plan(CATALOG, ["node_feature_discovery", "gpu_operator"])[1]
    assert gpu["release_values"]["nfd"] == {"enabled": False}


def test_chart_without_upstream_repository_needs_the_mirror():
    with pytest.raises(CatalogError, match="mpi_operator: chart mpi-operator has no upstream Helm repository"):
        plan(CATALOG, ["mpi_operator"])
    rel = plan(CATALOG, ["mpi_operator"], chart_mirror="oci://registry.site/charts")[0]
    assert rel["repo_url"] == "oci://registry.site/charts"


# --- bad catalogs and requests --------------------------------------------------------
def test_base_of_the_cases_is_sound():
    assert validate_catalog(CASES["base"]) == []


@pytest.mark.parametrize("case", CASES["invalid"], ids=[c["id"] for c in CASES["invalid"]])
def test_invalid_catalog_is_named(case):
    catalog = _catalog(case["catalog"])
    problems = validate_catalog(catalog)
    assert any(case["problem"] in p for p in problems), problems
    with pytest.raises(CatalogError, match="the add-on catalog is invalid"):
        plan(catalog, [])


@pytest.mark.parametrize("case", CASES["plan_errors"], ids=[c["id"] for c in CASES["plan_errors"]])
def test_bad_request_is_refused(case):
    with pytest.raises(CatalogError) as err:
        plan(CASES["base"], case["enabled"], case.get("values"), chart_mirror=case.get("chart_mirror", ""))
    assert case["problem"] in str(err.value)


def test_not_a_mapping_catalog():
    assert validate_catalog(["nfd"]) == ["the catalog must be a non-empty mapping of add-on name to entry"]


# --- order ---------------------------------------------------------------------------
def test_dependency_order_is_stable_and_respects_dependencies():
    assert dependency_order(CASES["base"], ["queue", "gpu", "certs", "nfd"]) == ["certs", "nfd", "gpu", "queue"]


def test_removal_goes_dependents_first():
    assert [r["name"] for r in removal_plan(CASES["base"], ["nfd", "gpu"], ["certs"])] == ["gpu", "nfd"]


@pytest.mark.parametrize(
    ("absent", "enabled", "problem"),
    [
        (["certs"], ["certs", "queue"], "cannot remove ['certs']: queue is enabled and depends on it"),
        (["certs"], ["certs"], "both enabled and to be removed"),
        (["grafana"], [], "unknown add-on(s) to remove ['grafana']"),
    ],
)
def test_removal_refusals(absent, enabled, problem):
    with pytest.raises(CatalogError) as err:
        removal_plan(CASES["base"], absent, enabled)
    assert problem in str(err.value)


# --- values --------------------------------------------------------------------------
def test_deep_merge_merges_mappings_and_replaces_lists():
    base = {"a": {"b": 1, "c": [1, 2]}, "d": "x"}
    assert deep_merge(base, {"a": {"c": [3], "e": None}, "f": 2}) == {"a": {"b": 1, "c": [3], "e": None}, "d": "x", "f": 2}
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": "x"}


def test_values_precedence_catalog_derived_node_selector_user():
    catalog = _catalog({"gpu": {"node_selector_paths": ["daemonsets.nodeSelector"],
                                "values": {"nfd": {"enabled": False}, "driver": {"enabled": False, "version": "570"}}}})
    rel = plan(
        catalog, ["nfd", "gpu"], {"gpu": {"driver": {"version": "580"}, "daemonsets": {"tolerations": []}}},
        derived={"gpu": {"driver": {"enabled": True}}},
        node_selectors={"gpu_nvidia": {"feature.node.kubernetes.io/pci-10de.present": "true"}},
    )[1]
    assert rel["release_values"] == {
        "nfd": {"enabled": False},
        "driver": {"enabled": True, "version": "580"},
        "daemonsets": {"nodeSelector": {"feature.node.kubernetes.io/pci-10de.present": "true"}, "tolerations": []},
    }
    assert rel["node_group"] == "gpu_nvidia"


def test_node_group_without_selector_is_refused():
    catalog = _catalog({"gpu": {"node_selector_paths": ["nodeSelector"]}})
    with pytest.raises(CatalogError, match="targets node group 'gpu_nvidia', which has no node selector"):
        plan(catalog, ["nfd", "gpu"])


def test_image_values_only_with_a_registry_mirror_and_rewritten():
    catalog = _catalog({"certs": {"values": {"crds": {"enabled": True}},
                                  "image_values": {"image": {"repository": "quay.io/jetstack/cert-manager-controller"}}}})
    upstream = plan(catalog, ["certs"])[0]
    assert upstream["release_values"] == {"crds": {"enabled": True}}
    mirrored = plan(catalog, ["certs"], {"certs": {"webhook": {"image": {"repository": "quay.io/jetstack/cert-manager-webhook"}}}},
                    registry_mirror="registry.site:5000/mirror")[0]
    assert mirrored["release_values"] == {
        "crds": {"enabled": True},
        "image": {"repository": "registry.site:5000/mirror/jetstack/cert-manager-controller"},
        "webhook": {"image": {"repository": "registry.site:5000/mirror/jetstack/cert-manager-webhook"}},
    }


@pytest.mark.parametrize(
    ("mirror", "repo_url", "chart_path"),
    [
        ("", "https://charts.jetstack.io", None),
        ("https://charts.site.example/helm/", "https://charts.site.example/helm", None),
        ("oci://registry.site/charts", "oci://registry.site/charts", None),
        ("/srv/charts", None, "/srv/charts"),
        ("file:///srv/charts/", None, "/srv/charts"),
    ],
)
def test_chart_location(mirror, repo_url, chart_path):
    rel = plan(CASES["base"], ["certs"], chart_mirror=mirror)[0]
    assert (rel["repo_url"], rel["chart_path"]) == (repo_url, chart_path)


STORAGE = ["local_path", "shared_path", "local_disk"]


def test_storage_classes_of_the_design_are_reported_with_their_default():
    releases = {r["name"]: r for r in plan(CATALOG, STORAGE)}
    assert releases["local_path"]["storage_classes"] == [{"name": "local-path", "default": True, "addon": "local_path"}]
    assert releases["shared_path"]["storage_classes"] == [{"name": "shared-path", "default": False, "addon": "shared_path"}]
    assert releases["local_disk"]["storage_classes"] == [{"name": "local-disk", "default": False, "addon": "local_disk"}]


def test_storage_class_name_used_twice_by_two_addons_is_refused():
    overrides = {"shared_path": {"storageClass": {"name": "local-path"}}}
    with pytest.raises(CatalogError, match=r"storage class name\(s\) used more than once: local-path \(by local_path, shared_path\)"):
        plan(CATALOG, STORAGE, overrides)


def test_storage_class_name_used_twice_inside_one_chart_list_is_refused():
    overrides = {"local_disk": {"classes": [{"name": "nvme", "hostDir": "/mnt/a"}, {"name": "nvme", "hostDir": "/mnt/b"}]}}
    with pytest.raises(CatalogError, match=r"used more than once: nvme \(by local_disk\)"):
        plan(CATALOG, STORAGE, overrides)


def test_two_default_storage_classes_are_refused():
    overrides = {"shared_path": {"storageClass": {"defaultClass": True}}}
    with pytest.raises(CatalogError, match="only one storage class can be the default; local-path, shared-path"):
        plan(CATALOG, STORAGE, overrides)


def test_malformed_storage_classes_spec_is_a_catalog_problem():
    bad = copy.deepcopy(CATALOG)
    bad["local_path"]["storage_classes"] = [{"nam": "storageClass.name"}]
    assert any("local_path: each storage_classes item" in p for p in validate_catalog(bad))
