# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Kubernetes checks, through kubectl and helm with a kubeconfig (argv lists).

Read-only checks use `kubectl get -o json`; the checks that prove a workload runs
(CoreDNS lookup, RuntimeClasses, storage classes) create a pod (and a PVC) in their own
namespace, wait for it with `kubectl wait`, read its log and delete it.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    CheckFailed,
    CheckSkipped,
    CmdResult,
    Runner,
)

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


def _k8s_name(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40].strip("-") or "x"


# The module's own manifests, applied without kubectl's client-side schema check: that
# check downloads the API's OpenAPI document first, which fails whenever one aggregated
# API (metrics-server, say) is down ("failed to download openapi ... unable to handle the
# request"), and the server still validates every object it stores.
_APPLY = ("apply", "--validate=false", "-f", "-")


class KubeContext:
    """What the Kubernetes checks share: the kubectl/helm argv, the expected nodes and
    a cache of objects read from the API."""

    def __init__(
        self,
        run: Runner,
        nodes: List[Dict[str, Any]],
        kubeconfig: Optional[str] = None,
        kubectl: str = "kubectl",
        helm: str = "helm",
        namespace: str = "clusterdos-validate",
        test_image: str = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
        cluster_domain: str = "cluster.local",
        addons: Optional[List[Dict[str, Any]]] = None,
        timeout: int = 120,
    ) -> None:
        self.run = run
        self.nodes = [n for n in nodes if n.get("kubernetes", True)]
        self.kubeconfig = kubeconfig
        self.kubectl = kubectl
        self.helm = helm
        self.namespace = namespace
        self.test_image = test_image
        self.cluster_domain = cluster_domain
        # Each add-on is a release name or a {name, namespace} mapping.
        self.addons = [a if isinstance(a, dict) else {"name": str(a)} for a in addons or []]
        self.timeout = timeout
        self._cache: Dict[str, Any] = {}
        self._reachable: Optional[str] = None
        self._namespace_ready = False

    # --- argv ---
    def kubectl_argv(self, *args: str) -> List[str]:
        argv = [self.kubectl]
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        return argv + ["--request-timeout=30s"] + list(args)

    def helm_argv(self, *args: str) -> List[str]:
        argv = [self.helm]
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        return argv + list(args)

    # --- API access ---
    def require(self) -> None:
        """Fail every Kubernetes check with one clear reason when the API is out of reach."""
        if self._reachable is None:
            if self.kubeconfig and not os.path.isfile(self.kubeconfig):
                self._reachable = "kubeconfig %s does not exist on this host" % self.kubeconfig
            else:
                res = self.run(self.kubectl_argv("version", "-o", "json"))
                server = None
                if res.rc == 0:
                    try:
                        server = json.loads(res.out).get("serverVersion", {}).get("gitVersion")
                    except ValueError:
                        server = None
                if server:
                    self._reachable = ""
                else:
                    self._reachable = "cannot reach the Kubernetes API%s: %s" % (
                        " with kubeconfig %s" % self.kubeconfig if self.kubeconfig else "", res.reason())
        if self._reachable:
            raise CheckFailed(self._reachable)

    def kubectl_run(self, *args: str, data: Optional[str] = None, timeout: Optional[int] = None) -> CmdResult:
        self.require()
        return self.run(self.kubectl_argv(*args), data=data, timeout=timeout)

    def get(self, resource: str, namespace: Optional[str] = None, selector: Optional[str] = None) -> List[Dict[str, Any]]:
        """Items of a resource (all namespaces unless one is given), cached per call."""
        key = "%s|%s|%s" % (resource, namespace, selector)
        if key not in self._cache:
            args = ["get", resource]
            args += ["-n", namespace] if namespace else ["--all-namespaces"]
            if selector:
                args += ["-l", selector]
            res = self.kubectl_run(*(args + ["-o", "json"]))
            if res.rc != 0:
                raise CheckFailed("kubectl get %s failed: %s" % (resource, res.reason()))
            try:
                self._cache[key] = json.loads(res.out).get("items", [])
            except ValueError as exc:
                raise CheckFailed("kubectl get %s returned no JSON: %s" % (resource, exc))
        return self._cache[key]

    def get_cluster(self, resource: str) -> List[Dict[str, Any]]:
        """Items of a cluster-scoped resource."""
        key = "%s|cluster" % resource
        if key not in self._cache:
            res = self.kubectl_run("get", resource, "-o", "json")
            if res.rc != 0:
                raise CheckFailed("kubectl get %s failed: %s" % (resource, res.reason()))
            try:
                self._cache[key] = json.loads(res.out).get("items", [])
            except ValueError as exc:
                raise CheckFailed("kubectl get %s returned no JSON: %s" % (resource, exc))
        return self._cache[key]

    # --- temporary workloads ---
    def _ensure_namespace(self) -> None:
        if self._namespace_ready:
            return
        manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": self.namespace, "labels": {"app.kubernetes.io/managed-by": "clusterdos-validate"}}}
        res = self.kubectl_run(*_APPLY, data=json.dumps(manifest))
        if res.rc != 0:
            raise CheckFailed("cannot create namespace %s: %s" % (self.namespace, res.reason()))
        self._namespace_ready = True

    def _delete(self, kind: str, name: str, wait: bool) -> None:
        self.kubectl_run("delete", kind, name, "-n", self.namespace, "--ignore-not-found",
                         "--wait=%s" % ("true" if wait else "false"))

    def run_pod(self, name: str, command: List[str], extra_spec: Optional[Dict[str, Any]] = None,
                extra_objects: Optional[List[Dict[str, Any]]] = None) -> str:
        """Run a pod to completion and return its log; CheckFailed with the reason otherwise.

        The pod (and any extra object, such as a PVC) is deleted first, so an old run can
        never answer for this one, and afterwards, so nothing is left behind.
        """
        self._ensure_namespace()
        objects = list(extra_objects or [])
        for obj in objects:
            self._delete(obj["kind"].lower(), obj["metadata"]["name"], wait=True)
        self._delete("pod", name, wait=True)
        spec: Dict[str, Any] = {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "check", "image": self.test_image, "command": command}],
        }
        spec.update(extra_spec or {})
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": self.namespace,
            "labels": {"app.kubernetes.io/managed-by": "clusterdos-validate"}}, "spec": spec}
        try:
            for obj in objects + [pod]:
                obj["metadata"]["namespace"] = self.namespace
                res = self.kubectl_run(*_APPLY, data=json.dumps(obj))
                if res.rc != 0:
                    raise CheckFailed("cannot create %s %s: %s" % (obj["kind"], obj["metadata"]["name"], res.reason()))
            waited = self.kubectl_run(
                "wait", "pod/%s" % name, "-n", self.namespace, "--for=jsonpath={.status.phase}=Succeeded",
                "--timeout=%ds" % self.timeout, timeout=self.timeout + 30)
            logs = self.kubectl_run("logs", "pod/%s" % name, "-n", self.namespace)
            if waited.rc != 0:
                state, node = self._pod_state(name)
                raise CheckFailed("pod %s did not succeed within %d s (%s)%s%s%s" % (
                    name, self.timeout, state or waited.reason(), " on node %s" % node if node else "",
                    self._pod_warnings(name),
                    "; log: %s" % logs.out.strip()[-300:] if logs.rc == 0 and logs.out.strip() else ""))
            return logs.out if logs.rc == 0 else ""
        finally:
            self._delete("pod", name, wait=False)
            for obj in objects:
                self._delete(obj["kind"].lower(), obj["metadata"]["name"], wait=False)

    def _pod_state(self, name: str) -> Tuple[str, str]:
        """The pod's phase and waiting reasons, and the node it was bound to ("" where unknown)."""
        res = self.kubectl_run("get", "pod", name, "-n", self.namespace, "-o", "json")
        if res.rc != 0:
            return "", ""
        try:
            pod = json.loads(res.out)
        except ValueError:
            return "", ""
        status = pod.get("status", {})
        node = pod.get("spec", {}).get("nodeName", "")
        reasons = [status.get("phase", "")]
        for cs in status.get("containerStatuses", []):
            for state in cs.get("state", {}).values():
                if state.get("reason"):
                    reasons.append(state["reason"])
        for cond in status.get("conditions", []):
            if cond.get("status") == "False" and cond.get("message"):
                reasons.append(cond["message"])
        return "phase " + ", ".join(r for r in reasons if r), node

    def _pod_warnings(self, name: str) -> str:
        """The pod's last Warning events (why a sandbox, a volume or an image failed), as
        "; events: REASON: message; ..." or "" where there are none."""
        res = self.kubectl_run("get", "events", "-n", self.namespace, "--field-selector",
                               "involvedObject.kind=Pod,involvedObject.name=%s,type=Warning" % name, "-o", "json")
        if res.rc != 0:
            return ""
        try:
            items = json.loads(res.out).get("items", [])
        except ValueError:
            return ""
        items.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        seen = ["%s: %s" % (e.get("reason", ""), " ".join((e.get("message") or "").split())[:240]) for e in items[-3:]]
        return "; events: " + "; ".join(seen) if seen else ""


# --- helpers over API objects ---
def node_ready(node: Dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.get("status", {}).get("conditions", []))


def pod_ready(pod: Dict[str, Any]) -> bool:
    status = pod.get("status", {})
    if status.get("phase") == "Succeeded":
        return True
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _nodes_by_name(ctx: KubeContext) -> Dict[str, Dict[str, Any]]:
    return {n["metadata"]["name"]: n for n in ctx.get_cluster("nodes")}


def _expected(ctx: KubeContext) -> List[Dict[str, Any]]:
    ctx.require()
    if not ctx.nodes:
        raise CheckSkipped("no Kubernetes nodes expected in the inventory")
    return ctx.nodes


# --- the checks ---
def check_nodes_ready(ctx: KubeContext) -> str:
    expected = _expected(ctx)
    found = _nodes_by_name(ctx)
    missing = [n["name"] for n in expected if n["name"] not in found]
    not_ready = [n["name"] for n in expected if n["name"] in found and not node_ready(found[n["name"]])]
    problems = []
    if missing:
        problems.append("not registered: %s" % ", ".join(missing))
    if not_ready:
        problems.append("not Ready: %s" % ", ".join(not_ready))
    if problems:
        raise CheckFailed("; ".join(problems))
    extra = sorted(set(found) - {n["name"] for n in expected})
    return "%d nodes registered and Ready%s" % (
        len(expected), " (also in the cluster, not in the inventory: %s)" % ", ".join(extra) if extra else "")


def parse_taint(taint: Any) -> Dict[str, Any]:
    """A taint as a mapping, from a mapping or a KEY[=VALUE]:EFFECT string."""
    if isinstance(taint, dict):
        return taint
    text = str(taint)
    key_value, _sep, effect = text.rpartition(":")
    if not key_value:
        raise CheckFailed("taint %r is not KEY[=VALUE]:EFFECT" % text)
    key, _sep, value = key_value.partition("=")
    return {"key": key, "value": value, "effect": effect}


def _taint_key(taint: Any) -> str:
    taint = parse_taint(taint)
    return "%s=%s:%s" % (taint.get("key"), taint.get("value") or "", taint.get("effect"))


def check_labels_taints(ctx: KubeContext) -> str:
    expected = _expected(ctx)
    found = _nodes_by_name(ctx)
    problems = []
    checked = 0
    for node in expected:
        obj = found.get(node["name"])
        if obj is None:
            problems.append("%s: not registered" % node["name"])
            continue
        labels = obj["metadata"].get("labels", {}) or {}
        for key, value in sorted((node.get("labels") or {}).items()):
            checked += 1
            if key not in labels:
                problems.append("%s: label %s missing" % (node["name"], key))
            elif value is not None and str(labels[key]) != str(value):
                problems.append("%s: label %s=%s, expected %s" % (node["name"], key, labels[key], value))
        taints = {_taint_key(t) for t in obj.get("spec", {}).get("taints", []) or []}
        for taint in node.get("taints") or []:
            checked += 1
            if _taint_key(taint) not in taints:
                problems.append("%s: taint %s missing" % (node["name"], _taint_key(taint)))
    if problems:
        raise CheckFailed("; ".join(problems))
    return "%d expected labels and taints present on %d nodes" % (checked, len(expected))


def check_control_plane(ctx: KubeContext) -> str:
    res = ctx.kubectl_run("get", "--raw", "/readyz?verbose")
    failing = [line.strip()[3:].split(" ")[0] for line in res.out.splitlines() if line.strip().startswith("[-]")]
    if res.rc != 0 or failing:
        raise CheckFailed("API server not ready: %s" % (", ".join(failing) or res.reason()))
    if not any(line.strip().startswith("[+]etcd") for line in res.out.splitlines()):
        # Kubernetes 1.36 lists etcd only under /livez (readyz has etcd-readiness, or nothing).
        live = ctx.kubectl_run("get", "--raw", "/livez?verbose")
        if live.rc != 0 or not any(line.strip().startswith("[+]etcd") for line in live.out.splitlines()):
            raise CheckFailed("the API server reports no healthy etcd in readyz or livez")
    pods = ctx.get("pods", namespace="kube-system", selector="tier=control-plane")
    bad = [p["metadata"]["name"] for p in pods if not pod_ready(p)]
    if bad:
        raise CheckFailed("control-plane pods not ready: %s" % ", ".join(bad))
    components = sorted({p["metadata"].get("labels", {}).get("component", "?") for p in pods})
    return "readyz ok (etcd included); %d control-plane pods ready (%s)" % (len(pods), ", ".join(components))


def parse_nslookup(text: str) -> List[str]:
    """The answer addresses of busybox/bind nslookup output (not the server's own)."""
    answers, in_answer = [], False
    for line in text.splitlines():
        key, _sep, value = line.partition(":")
        if key.strip() == "Name":
            in_answer = True
        elif in_answer and key.strip() == "Address":
            answers.append(value.strip())
    return answers


def check_coredns(ctx: KubeContext) -> str:
    pods = ctx.get("pods", namespace="kube-system", selector="k8s-app=kube-dns")
    ready = [p for p in pods if pod_ready(p)]
    if not ready:
        raise CheckFailed("no CoreDNS pod ready in kube-system (%d found)" % len(pods))
    fqdn = "kubernetes.default.svc.%s" % ctx.cluster_domain
    log = ctx.run_pod("clusterdos-validate-dns", ["nslookup", fqdn])
    services = ctx.get("services", namespace="default")
    ip = next((s["spec"].get("clusterIP") for s in services if s["metadata"]["name"] == "kubernetes"), None)
    answers = parse_nslookup(log)
    if not answers or (ip and ip not in answers):
        raise CheckFailed("%s did not resolve to the service IP %s: %s" % (fqdn, ip, log.strip()[-200:]))
    return "%d CoreDNS pods ready; %s resolves to %s" % (len(ready), fqdn, ", ".join(answers))


def check_cilium(ctx: KubeContext) -> str:
    daemonsets = [d for d in ctx.get("daemonsets", namespace="kube-system") if d["metadata"]["name"] == "cilium"]
    if not daemonsets:
        raise CheckFailed("daemonset kube-system/cilium not found")
    status = daemonsets[0].get("status", {})
    desired, ready = status.get("desiredNumberScheduled", 0), status.get("numberReady", 0)
    nodes = len(ctx.get_cluster("nodes"))
    if desired == 0 or ready < desired:
        raise CheckFailed("cilium agents ready %d of %d" % (ready, desired))
    if desired < nodes:
        raise CheckFailed("cilium agents scheduled on %d of %d nodes" % (desired, nodes))
    operators = [d for d in ctx.get("deployments", namespace="kube-system") if d["metadata"]["name"] == "cilium-operator"]
    if not operators or operators[0].get("status", {}).get("availableReplicas", 0) < 1:
        raise CheckFailed("deployment kube-system/cilium-operator is not available")
    return "cilium agents ready on %d of %d nodes; operator available" % (ready, nodes)


def check_gpus(ctx: KubeContext) -> str:
    expected = [n for n in _expected(ctx) if any(r in (n.get("gpus") or {}) for r in GPU_RESOURCES)]
    found = _nodes_by_name(ctx)
    problems, total = [], 0
    for node in expected:
        obj = found.get(node["name"])
        allocatable = (obj or {}).get("status", {}).get("allocatable", {})
        for resource in GPU_RESOURCES:
            want = (node.get("gpus") or {}).get(resource)
            if want is None:
                continue
            have = _quantity(allocatable.get(resource, 0))
            total += have
            if obj is None:
                problems.append("%s: not registered" % node["name"])
            elif have != int(want):
                problems.append("%s: %s allocatable %d, inventory says %d" % (node["name"], resource, have, int(want)))
    unexpected = [name for name, obj in sorted(found.items())
                  if name not in {n["name"] for n in expected}
                  and any(_quantity(obj.get("status", {}).get("allocatable", {}).get(r, 0)) for r in GPU_RESOURCES)]
    if problems:
        raise CheckFailed("; ".join(problems))
    if not expected:
        raise CheckSkipped("no GPUs expected in the inventory")
    return "%d GPUs allocatable on %d nodes, as in the inventory%s" % (
        total, len(expected), "; GPUs also on %s" % ", ".join(unexpected) if unexpected else "")


def check_rdma(ctx: KubeContext) -> str:
    expected = [n for n in _expected(ctx) if n.get("rdma")]
    if not expected:
        raise CheckSkipped("no RDMA resources expected in the inventory")
    found = _nodes_by_name(ctx)
    problems = []
    for node in expected:
        allocatable = (found.get(node["name"]) or {}).get("status", {}).get("allocatable", {})
        for resource in node["rdma"]:
            if _quantity(allocatable.get(resource, 0)) < 1:
                problems.append("%s: %s not allocatable" % (node["name"], resource))
    if problems:
        raise CheckFailed("; ".join(problems))
    return "RDMA resources allocatable on %s" % ", ".join(n["name"] for n in expected)


def _pod_per_object(ctx: KubeContext, resource: str, kind: str, probe: Callable[[Dict[str, Any]], str],
                    done: str) -> str:
    """Run ``probe`` for every object of a cluster resource; one failure fails the check, naming each."""
    objects = ctx.get_cluster(resource)
    if not objects:
        raise CheckSkipped("no %s in the cluster" % kind)
    passed, problems = [], []
    for obj in objects:
        name = obj["metadata"]["name"]
        try:
            passed.append(probe(obj))
        except CheckFailed as exc:
            problems.append("%s: %s" % (name, exc))
    if problems:
        raise CheckFailed("; ".join(problems))
    return "%s: %s" % (done, ", ".join(passed))


def check_runtime_classes(ctx: KubeContext) -> str:
    def probe(rc: Dict[str, Any]) -> str:
        name = rc["metadata"]["name"]
        ctx.run_pod("clusterdos-validate-rc-%s" % _k8s_name(name), ["uname", "-r"],
                    extra_spec={"runtimeClassName": name})
        return "%s (handler %s)" % (name, rc.get("handler"))

    return _pod_per_object(ctx, "runtimeclasses", "RuntimeClass", probe, "a pod ran under each RuntimeClass")


def check_storage_classes(ctx: KubeContext) -> str:
    def probe(sc: Dict[str, Any]) -> str:
        name = sc["metadata"]["name"]
        pvc_name = "clusterdos-validate-pvc-%s" % _k8s_name(name)
        pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": pvc_name, "labels": {"app.kubernetes.io/managed-by": "clusterdos-validate"}},
               "spec": {"storageClassName": name, "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "16Mi"}}}}
        spec = {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": pvc_name}}]}
        # The container writes and reads back a file on the volume.
        command = ["sh", "-c", "echo ok > /data/probe && cat /data/probe"]
        ctx.run_pod("clusterdos-validate-sc-%s" % _k8s_name(name), command,
                    extra_spec=dict(spec, containers=[{
                        "name": "check", "image": ctx.test_image, "command": command,
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]),
                    extra_objects=[pvc])
        return name

    return _pod_per_object(ctx, "storageclasses", "StorageClass", probe,
                           "a PVC bound and was written through each storage class")


_WORKLOADS = ("deployments", "statefulsets", "daemonsets")


def release_workloads(ctx: KubeContext, release: str, namespace: str) -> List[Dict[str, Any]]:
    """The Deployments, StatefulSets and DaemonSets of a Helm release, found by the annotations helm
    puts on every object it creates (whatever labels the chart uses)."""
    found = []
    for resource in _WORKLOADS:
        for obj in ctx.get(resource):
            annotations = obj.get("metadata", {}).get("annotations") or {}
            if annotations.get("meta.helm.sh/release-name") == release \
                    and annotations.get("meta.helm.sh/release-namespace") == namespace:
                found.append(obj)
    return found


def workload_not_ready(obj: Dict[str, Any]) -> str:
    """Why a Deployment, StatefulSet or DaemonSet is not ready ('' when it is), as kubectl rollout status judges:
    its controller has seen the current generation, and the wanted replicas are available."""
    meta, spec, status = obj.get("metadata", {}), obj.get("spec", {}), obj.get("status") or {}
    what = "%s %s/%s" % (obj.get("kind", "?"), meta.get("namespace", ""), meta.get("name", "?"))
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 1):
        return "%s not yet rolled out (its controller has not seen generation %s)" % (what, meta.get("generation") or 1)
    if obj.get("kind") == "DaemonSet":
        want, have = int(status.get("desiredNumberScheduled") or 0), int(status.get("numberAvailable") or 0)
        return "" if have >= want else "%s %d of %d available" % (what, have, want)
    want = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
    field = "availableReplicas" if obj.get("kind") == "Deployment" else "readyReplicas"
    have = int(status.get(field) or 0)
    return "" if have >= want else "%s %d of %d %s" % (what, have, want, "available" if field == "availableReplicas" else "ready")


def check_addons(ctx: KubeContext) -> str:
    ctx.require()
    res = ctx.run(ctx.helm_argv("list", "--all-namespaces", "--all", "-o", "json"))
    if res.rc != 0 and "unknown flag: --all" in (res.err or "") + (res.out or ""):
        # Helm 4 lists releases in every state by default and has no --all (seen on the real API server tests).
        res = ctx.run(ctx.helm_argv("list", "--all-namespaces", "-o", "json"))
    if res.rc != 0 and not ctx.addons:
        raise CheckSkipped("no add-on expected, and no release list here (%s)" % res.reason())
    if res.rc != 0:
        raise CheckFailed("helm list failed: %s" % res.reason())
    try:
        releases = {(r["name"], r["namespace"]): r for r in json.loads(res.out or "[]")}
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckFailed("helm list returned no release list: %s" % exc)
    wanted = [(a["name"], a.get("namespace") or "") for a in ctx.addons] or sorted(releases)
    if not wanted:
        raise CheckSkipped("no add-on expected and no Helm release found")
    problems, fine = [], []
    for name, namespace in wanted:
        matches = [r for (n, ns), r in releases.items() if n == name and (not namespace or ns == namespace)]
        if not matches:
            problems.append("%s: no Helm release%s" % (name, " in %s" % namespace if namespace else ""))
            continue
        release = matches[0]
        if release.get("status") != "deployed":
            problems.append("%s: release status %s" % (name, release.get("status")))
            continue
        workloads = release_workloads(ctx, name, release["namespace"])
        not_ready = [why for why in (workload_not_ready(w) for w in workloads) if why]
        if not_ready:
            problems.append("%s: workloads not ready: %s" % (name, "; ".join(not_ready)))
            continue
        pods = ctx.get("pods", namespace=release["namespace"], selector="app.kubernetes.io/instance=%s" % name)
        bad = [p["metadata"]["name"] for p in pods if not pod_ready(p)]
        if bad:
            problems.append("%s: pods not ready: %s" % (name, ", ".join(bad)))
            continue
        ready_workloads = ", %d workloads ready" % len(workloads) if workloads else ""
        fine.append("%s %s (%d pods%s)" % (name, release.get("chart", ""), len(pods), ready_workloads))
    if problems:
        raise CheckFailed("; ".join(problems))
    return "deployed and ready: %s" % ", ".join(fine)


def check_metrics(ctx: KubeContext) -> str:
    if ctx.addons and "metrics-server" not in {a["name"] for a in ctx.addons}:
        raise CheckSkipped("metrics-server is not among the expected add-ons")
    if not ctx.addons and ctx.kubectl_run("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "name").rc != 0:
        raise CheckSkipped("no add-on expected and no metrics API in the cluster")
    res = ctx.kubectl_run("top", "nodes", "--no-headers")
    if res.rc != 0:
        raise CheckFailed("kubectl top nodes failed (is metrics-server running?): %s" % res.reason())
    reported = {line.split()[0] for line in res.out.splitlines() if line.strip()}
    missing = [n["name"] for n in ctx.nodes if n["name"] not in reported]
    if missing:
        raise CheckFailed("no metrics for %s" % ", ".join(missing))
    return "metrics for %d nodes" % len(reported)


CHECKS = [
    Check("kubernetes.nodes_ready", "Every inventory node is registered and Ready", check_nodes_ready),
    Check("kubernetes.labels_taints", "Nodes carry the inventory's labels and taints", check_labels_taints),
    Check("kubernetes.control_plane", "API server readyz (with etcd) and control-plane pods ready", check_control_plane),
    Check("kubernetes.coredns", "CoreDNS ready and resolving the kubernetes service from a pod", check_coredns, mutates=True),
    Check("kubernetes.cilium", "Cilium agents on every node and the operator available", check_cilium),
    Check("kubernetes.gpus", "Allocatable GPUs per node match the inventory", check_gpus),
    Check("kubernetes.rdma", "RDMA resources allocatable where the inventory expects them", check_rdma),
    Check("kubernetes.runtime_classes", "A pod runs under each RuntimeClass", check_runtime_classes, mutates=True),
    Check("kubernetes.storage_classes", "Each storage class binds a PVC that a pod writes", check_storage_classes, mutates=True),
    Check("kubernetes.addons", "Add-on releases deployed and their pods ready", check_addons),
    Check("kubernetes.metrics", "kubectl top nodes works (metrics-server)", check_metrics),
]
