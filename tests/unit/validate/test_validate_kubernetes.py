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


def _workload(kind, generation=2, observed=2, replicas=1, **status):
    return {"kind": kind, "metadata": {"name": "w", "namespace": "ns", "generation": generation},
            "spec": {"replicas": replicas} if kind != "DaemonSet" else {},
            "status": dict(status, observedGeneration=observed) if observed is not None else {}}


@pytest.mark.parametrize("obj, reason", [
    (_workload("Deployment", availableReplicas=1), ""),
    (_workload("Deployment", replicas=2, availableReplicas=1), "Deployment ns/w 1 of 2 available"),
    # Stored, never seen by a controller (an API server without controller-manager, or a stuck one).
    (_workload("Deployment", observed=None), "Deployment ns/w not yet rolled out (its controller has not seen generation 2)"),
    (_workload("Deployment", observed=1, availableReplicas=1), "not yet rolled out"),
    (_workload("StatefulSet", replicas=3, readyReplicas=3), ""),
    (_workload("StatefulSet", replicas=3, readyReplicas=0), "StatefulSet ns/w 0 of 3 ready"),
    (_workload("DaemonSet", desiredNumberScheduled=0, numberAvailable=0), ""),
    (_workload("DaemonSet", desiredNumberScheduled=3, numberAvailable=2), "DaemonSet ns/w 2 of 3 available"),
])
def test_workload_readiness_as_rollout_status_judges_it(obj, reason):
    got = kubernetes.workload_not_ready(obj)
    assert (reason in got and bool(got)) if reason else got == "", got


def test_addon_workloads_found_by_helm_annotations_on_recorded_api(kubeconfig):
    """A release's Deployment that is not available fails the add-on check, whatever its pods' labels."""
    cluster = load_cluster("healthy.json")
    cluster["objects"].setdefault("deployments", []).append({
        "kind": "Deployment", "metadata": {"name": "metrics-server", "namespace": "kube-system", "generation": 1,
                                           "annotations": {"meta.helm.sh/release-name": "metrics-server",
                                                           "meta.helm.sh/release-namespace": "kube-system"}},
        "spec": {"replicas": 1}, "status": {"observedGeneration": 1, "availableReplicas": 0}})
    _api, results = _run({"checks": ["kubernetes.addons"]}, kubeconfig, cluster=cluster)
    assert results["kubernetes.addons"].status == "failed"
    assert "metrics-server: workloads not ready: Deployment kube-system/metrics-server 0 of 1 available" \
        in results["kubernetes.addons"].detail
