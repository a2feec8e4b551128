"""Validation and the add-on removal path on the real three-member cluster (runs after
test_ha.py, file order; every member is back by then).

- converge's validation stage (site.yml) ran the Kubernetes checks for real: its report
  says every member is Ready, the API server and etcd are healthy, CoreDNS answers from a
  pod (the busybox image comes from the site mirror's archives), and lists the add-on
  stage's release with its action and time.
- playbooks/addons.yml with a kubeconfig the add-on host lacks stops at the role's API check,
  saying what the host lacks; no release changes.
- playbooks/addons.yml with ``addons_absent: [local_path]`` uninstalls the release it
  installed (the removal path, for real: release and storage class gone).
- With that add-on missing and one member's kubelet stopped, playbooks/validate.yml (strict)
  fails, and its report names the NotReady node and the missing release.
- The kubelet started and local_path installed again (addons.yml as converge ran it), the
  same validation passes again.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import EPHEMERAL, MEMBERS, host, kubectl_json, node_ready, run_playbook, system_pods_ready, tail, wait_until

# The validation and the add-ons run on the first member; the kubelet is stopped on the last.
STOPPED = MEMBERS[-1]
CONVERGE_REPORT = EPHEMERAL / "validation-report"
# What converge checks (molecule.yml: validate_checks [kubernetes], storage classes and add-ons
# skipped) and passes on this cluster: Cilium, GPUs, RDMA, RuntimeClasses, metrics are skipped.
PASSING = ("kubernetes.nodes_ready", "kubernetes.labels_taints", "kubernetes.control_plane", "kubernetes.coredns")


def releases() -> dict:
    out = host(MEMBERS[0]).run("helm list -A -o json --kubeconfig /etc/kubernetes/admin.conf")
    assert out.rc == 0, out.stderr
    return {f"{r['namespace']}/{r['name']}": r for r in json.loads(out.stdout)}


def checks_of(report_dir: Path) -> dict:
    return {c["name"]: c for c in json.loads((report_dir / "validation.json").read_text())["checks"]}


def test_converge_validated_the_real_cluster_and_listed_the_release():
    """The report site.yml's validation stage wrote: the checks ran against the real API server
    and passed, CoreDNS resolved the kubernetes Service from a pod, every member is drawn."""
    doc = json.loads((CONVERGE_REPORT / "validation.json").read_text())
    checks = {c["name"]: c for c in doc["checks"]}
    for name in PASSING:
        assert checks[name]["status"] == "passed", checks[name]
        assert checks[name]["host"] == MEMBERS[0], checks[name]
    assert checks["kubernetes.nodes_ready"]["detail"] == f"{len(MEMBERS)} nodes registered and Ready"
    cluster_ip = kubectl_json("get", "service", "kubernetes", "-n", "default")["spec"]["clusterIP"]
    assert f"kubernetes.default.svc.cluster.local resolves to {cluster_ip}" in checks["kubernetes.coredns"]["detail"]
    assert checks["kubernetes.storage_classes"]["status"] == "skipped"
    assert doc["summary"]["failed"] == 0, [c for c in doc["checks"] if c["status"] == "failed"]
    release = [r for r in doc["releases"] if r["name"] == "local_path"]
    assert len(release) == 1, doc["releases"]
    assert release[0]["action"] == "installed" and float(release[0]["seconds"]) > 0, release
    assert release[0]["release"] == "local-path-storage/local-path"
    html = (CONVERGE_REPORT / "validation.html").read_text()
    for member in MEMBERS:
        assert f'<g class="node passed" data-node="{member}">' in html, member
    assert 'data-release="local-path-storage/local-path"' in html


def test_an_addon_host_that_cannot_read_the_api_is_refused_before_any_release():
    """addons.yml with a kubeconfig the add-on host does not have: the role's API check stops
    the play and says what the host lacks and the ways out; no release changes."""
    def revisions():
        out = host(MEMBERS[0]).run("helm list -A -o json --kubeconfig /etc/kubernetes/admin.conf")
        assert out.rc == 0, out.stderr
        return {r["name"]: r["revision"] for r in json.loads(out.stdout)}

    before = revisions()
    missing = "/etc/kubernetes/no-such-admin.conf"
    run = run_playbook("addons.yml", {"addons_kubeconfig": missing})
    assert run.returncode != 0, tail(run)
    out = run.stdout + run.stderr
    assert f"{MEMBERS[0]} cannot read the Kubernetes API with addons_kubeconfig={missing}" in out, tail(run)
    assert "or run the add-ons from the controller" in out, tail(run)
    assert "Say what the add-on host lacks" in out, tail(run)
    assert revisions() == before


def test_addons_absent_uninstalls_the_release():
    assert "local-path-storage/local-path" in releases()
    run = run_playbook("addons.yml", {"addons_enabled": [], "addons_absent": ["local_path"]})
    assert run.returncode == 0, tail(run)
    assert "1/1 local_path (local-path-storage/local-path): uninstalled in " in run.stdout, tail(run)
    assert "local-path-storage/local-path" not in releases()
    classes = [c["metadata"]["name"] for c in kubectl_json("get", "storageclass")["items"]]
    assert "local-path" not in classes, classes


def test_validation_names_a_stopped_node_and_the_missing_addon(tmp_path):
    """kubelet stopped on one member (its node goes NotReady once the controller manager's grace
    period passes) and local_path uninstalled: validate.yml in strict mode fails, naming both."""
    stopped = host(STOPPED)
    stopped.run_expect([0], "systemctl stop kubelet")
    try:
        wait_until(f"{STOPPED} NotReady", lambda: node_ready(STOPPED) is not True or "still Ready", timeout=240)
        report = tmp_path / "report"
        # labels_taints passes (every node registered, its taint in place): the other members are drawn green.
        run = run_playbook("validate.yml", {"validate_checks": ["kubernetes.nodes_ready", "kubernetes.labels_taints",
                                                                "kubernetes.addons"],
                                            "validate_skip": [], "validate_report_dir": str(report)})
        assert run.returncode != 0, tail(run)
        # The strict-mode failure (ansible prints a task's error on stderr).
        assert "2 validation checks failed: kubernetes.nodes_ready, kubernetes.addons." in run.stdout + run.stderr, tail(run)
        checks = checks_of(report)
        assert checks["kubernetes.nodes_ready"]["status"] == "failed"
        assert checks["kubernetes.nodes_ready"]["detail"] == f"not Ready: {STOPPED}"
        assert checks["kubernetes.addons"]["status"] == "failed"
        assert checks["kubernetes.addons"]["detail"] == "local-path: no Helm release"
        assert checks["kubernetes.labels_taints"]["status"] == "passed", checks["kubernetes.labels_taints"]
        html = (report / "validation.html").read_text()
        assert f'<g class="node failed" data-node="{STOPPED}">' in html
        for member in MEMBERS[:-1]:
            assert f'<g class="node passed" data-node="{member}">' in html, member
    finally:
        stopped.run("systemctl start kubelet")


def test_reinstalled_and_restarted_the_validation_passes_again(tmp_path):
    run = run_playbook("addons.yml")
    assert run.returncode == 0, tail(run)
    assert "1/1 local_path (local-path-provisioner 0.0.33): installed in " in run.stdout, tail(run)
    assert releases()["local-path-storage/local-path"]["status"] == "deployed"
    wait_until(f"{STOPPED} Ready again", lambda: node_ready(STOPPED), timeout=300)
    wait_until("every kube-system pod Ready", system_pods_ready, timeout=300)
    report = tmp_path / "report"
    run = run_playbook("validate.yml", {"validate_report_dir": str(report)})
    assert run.returncode == 0, tail(run)
    checks = checks_of(report)
    for name in PASSING:
        assert checks[name]["status"] == "passed", checks[name]
    assert checks["kubernetes.nodes_ready"]["detail"] == f"{len(MEMBERS)} nodes registered and Ready"
