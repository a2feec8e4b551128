"""Kubernetes checks on recorded API objects.

No Kubernetes API server can run on the CI machine: RecordedApiServer (conftest.py)
stands in for it, answering kubectl and helm from fixtures/kubernetes/*.json. An
end-to-end run against a real cluster happens outside CI (docs/validation.md).
"""

from __future__ import annotations

import itertools
import json

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import kubernetes
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import run_checks

from conftest import FIXTURES, RecordedApiServer, load_cases, load_cluster

CASES_FILE = "kubernetes_cases.yml"
DEFAULTS = yaml.safe_load((FIXTURES / CASES_FILE).read_text())


def _flat(items):
    return list(itertools.chain.from_iterable(i if isinstance(i, list) else [i] for i in items))


def _run(case, kubeconfig, cluster=None):
    api = RecordedApiServer(cluster or load_cluster(case.get("cluster", "healthy.json"), case.get("patch")),
                            kubeconfig=kubeconfig)
    ctx = kubernetes.KubeContext(api, _flat(case.get("inventory", DEFAULTS["inventory"])), kubeconfig=kubeconfig,
                                 addons=_flat(case.get("addons", DEFAULTS["addons"])))
    results = run_checks(kubernetes.CHECKS, {"kubernetes": ctx}, case.get("checks", ["kubernetes"]),
                         case.get("skip", []), check_mode=case.get("check_mode", False), host="svc1")
    return api, {r.name: r for r in results}


@pytest.fixture
def kubeconfig(tmp_path):
    path = tmp_path / "admin.conf"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return str(path)


@pytest.mark.parametrize("case", load_cases(CASES_FILE))
def test_kubernetes_checks_on_recorded_api_objects(case, kubeconfig):
    api, results = _run(case, kubeconfig)
    for name, (status, text) in case["expect"].items():
        assert name in results, sorted(results)
        assert results[name].status == status, (name, results[name].detail)
        assert text in results[name].detail, (name, results[name].detail)
    if case.get("only"):
        assert set(results) == set(case["expect"])
        return
    others = case.get("others", "passed")
    status, text = others if isinstance(others, list) else (others, "")
    rest = {n: r for n, r in results.items() if n not in case["expect"]}
    assert set(results) == {c.name for c in kubernetes.CHECKS}
    for name, result in rest.items():
        assert result.status == status and text in result.detail, (name, result.status, result.detail)
    # Whatever the workload checks created, they deleted again.
    created = {(o["kind"].lower(), o["metadata"]["name"]) for o in api.applied if o["kind"] != "Namespace"}
    assert created <= set(api.deleted)


def test_workload_pod_argv_sequence_on_recorded_api(kubeconfig):
    """The exact kubectl calls of one workload check: clean up, create, wait, log, clean up."""
    api, results = _run({"checks": ["kubernetes.runtime_classes"]}, kubeconfig)
    assert results["kubernetes.runtime_classes"].status == "passed"
    base = ["kubectl", "--kubeconfig", kubeconfig, "--request-timeout=30s"]
    pod = "clusterdos-validate-rc-gvisor"
    assert api.calls == [
        base + ["version", "-o", "json"],
        base + ["get", "runtimeclasses", "-o", "json"],
        base + ["apply", "--validate=false", "-f", "-"],
        base + ["delete", "pod", pod, "-n", "clusterdos-validate", "--ignore-not-found", "--wait=true"],
        base + ["apply", "--validate=false", "-f", "-"],
        base + ["wait", "pod/" + pod, "-n", "clusterdos-validate", "--for=jsonpath={.status.phase}=Succeeded",
                "--timeout=120s"],
        base + ["logs", "pod/" + pod, "-n", "clusterdos-validate"],
        base + ["delete", "pod", pod, "-n", "clusterdos-validate", "--ignore-not-found", "--wait=false"],
    ]
    namespace, created = api.applied
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "clusterdos-validate", "labels": {"app.kubernetes.io/managed-by": "clusterdos-validate"}}}
    assert created["spec"]["runtimeClassName"] == "gvisor"
    assert created["spec"]["restartPolicy"] == "Never"
    assert created["spec"]["containers"][0]["command"] == ["uname", "-r"]


def test_storage_class_pvc_manifest_on_recorded_api(kubeconfig):
    api, results = _run({"checks": ["kubernetes.storage_classes"]}, kubeconfig)
    assert results["kubernetes.storage_classes"].status == "passed"
    pvc, pod = [o for o in api.applied if o["kind"] in ("PersistentVolumeClaim", "Pod")]
    assert pvc["spec"]["storageClassName"] == "local-path"
    assert pvc["metadata"]["namespace"] == "clusterdos-validate"
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]


def test_missing_kubeconfig_fails_every_check_with_the_reason(tmp_path):
    missing = str(tmp_path / "nope.conf")
    api = RecordedApiServer(load_cluster("healthy.json"), kubeconfig=missing)
    ctx = kubernetes.KubeContext(api, DEFAULTS["inventory"], kubeconfig=missing)
    results = run_checks(kubernetes.CHECKS, {"kubernetes": ctx}, ["kubernetes"], [])
    assert len(results) == len(kubernetes.CHECKS)
    for result in results:
        assert result.status == "failed"
        assert result.detail == "kubeconfig %s does not exist on this host" % missing
    assert api.calls == []  # nothing was run against a cluster


def test_api_without_server_version_counts_as_unreachable(kubeconfig):
    cluster = load_cluster("healthy.json")
    cluster["version"] = {"clientVersion": {"gitVersion": "v1.34.2"}}
    _api, results = _run({"checks": ["kubernetes.nodes_ready"]}, kubeconfig, cluster=cluster)
    assert results["kubernetes.nodes_ready"].status == "failed"
    assert "cannot reach the Kubernetes API" in results["kubernetes.nodes_ready"].detail


def test_recorded_cluster_fixture_is_kubectl_shaped():
    """The fixture stays in the shape kubectl returns (a guard against drifting by hand)."""
    cluster = json.loads((FIXTURES / "kubernetes" / "healthy.json").read_text())
    for resource, items in cluster["objects"].items():
        for item in items:
            assert {"apiVersion", "kind", "metadata"} <= set(item), resource
            assert item["metadata"]["name"]
