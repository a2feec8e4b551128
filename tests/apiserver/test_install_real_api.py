"""The addons role installs the whole catalog (Cilium aside: the Kubernetes stage's) on a real API server, from the real charts.

One kube-apiserver + etcd for the session (realapi.py), the charts served over HTTP as a
chart mirror. No kubelet runs: no pod ever starts and no image is pulled, so the role runs
with ``addons_wait: false`` (nothing would ever become ready) and the checks read objects
and releases, never pods. Chart hook Jobs cannot run either: cert-manager's post-install
check and the Network Operator's pre-install hooks are skipped (``addons_no_hooks``).

The tests run in order on the same server: check mode on the empty server, the install,
a second run (changed=0), one add-on's values changed, check mode and diff against the
installed releases, one add-on removed.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from playbook import NOWHERE, ROOT, VENV_BIN, run_playbook, run_role, site_inventory

CATALOG = yaml.safe_load((ROOT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
# Every entry but Cilium, which the Kubernetes stage installs (test_kubernetes_cilium_real_api.py).
ALL = sorted(n for n in CATALOG if n != "cilium")
RELEASES = {f"{e['namespace']}/{e.get('release', n.replace('_', '-'))}": n for n, e in CATALOG.items() if n in ALL}
STALE_CRD = "nodefeaturerules.nfd.k8s-sigs.io"

# The runs after the install enable only a few add-ons (the others stay installed, untouched:
# the role only removes what addons_absent lists), to keep the session short; every release's
# revision on the server is compared before and after.
FEW = ["cert_manager", "kueue", "local_disk", "local_path", "metrics_server", "sealed_secrets"]
# Filled as the ordered tests go (they share one API server).
STATE: dict = {}


@pytest.fixture(scope="module")
def site(apiserver, chart_repo):
    """The role's variables for this site: every add-on, charts from the mirror, no waiting."""
    return {
        "addons_enabled": ALL,
        "addons_chart_mirror": chart_repo,
        "addons_kubeconfig": str(apiserver.kubeconfig),
        "addons_helm_binary": str(VENV_BIN / "helm"),
        "addons_wait": False,
        "addons_atomic": False,
        "addons_no_hooks": ["cert_manager", "network_operator"],
        # This kube-apiserver build answers 503 for its OpenAPI v2 document as protobuf (the JSON form
        # works), which helm's client-side validation asks for; the server still validates every object.
        "addons_helm_openapi_validation": False,
        "addons_shared_path_nfs_server": "10.10.0.30",
        "addons_kueue_local_queue_namespaces": ["default", "team-a"],
    }


def _diffs(stdout: str, names) -> dict:
    """The --diff text ansible printed for each named add-on's release task."""
    found = {}
    for name in names:
        m = re.search(r"TASK \[[^\]]*Install or upgrade %s\][^\n]*\n(.*?)\n(?:changed|ok):" % re.escape(name), stdout, re.S)
        found[name] = m.group(1)[-4000:] if m else "(no diff found)"
    return found


def _revisions(api) -> dict:
    return {k: int(v["revision"]) for k, v in api.helm_list().items()}


def test_check_mode_on_the_empty_server_changes_nothing(apiserver, site, tmp_path):
    run = run_role(tmp_path, dict(site, addons_enabled=FEW), check=True, diff=True, dump="__addons_progress")
    assert run.ok, run.tail()
    assert {s["name"]: s["action"] for s in run.results} == {n: "installed" for n in FEW}
    assert apiserver.helm_list() == {}
    crds = {c["metadata"]["name"] for c in apiserver.get("crd")["items"]}
    assert not crds, crds
    # The diff shows what each release would install, rendered from the real chart.
    assert "name: sealed-secrets-controller" in run.proc.stdout


def test_an_older_crd_is_there_before_the_install(apiserver, chart_repo, tmp_path):
    """A CRD left by an older release (stand-in: the chart's own CRD with a changed description)."""
    from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import chart_source

    import subprocess
    nfd = CATALOG["node_feature_discovery"]
    crds = subprocess.run([str(VENV_BIN / "helm"), "show", "crds"] + chart_source(
        nfd["chart"], nfd["version"], repo_url=chart_repo).args(), capture_output=True, text=True, check=True).stdout
    crd = next(d for d in yaml.safe_load_all(crds) if d and d["metadata"]["name"] == STALE_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "stale: from an older chart"
    crd["metadata"].setdefault("labels", {})["clusterdos.test/stale"] = "true"
    (tmp_path / "crd.json").write_text(json.dumps(crd))
    # --validate=false: kubectl 1.35's client-side schema download is refused by this bare server; the server still
    # validates the object.
    created = apiserver.kubectl("create", "--validate=false", "-f", str(tmp_path / "crd.json"), check=False)
    assert created.returncode == 0, created.stderr


def test_install_the_whole_catalog(apiserver, site, tmp_path):
    run = run_role(tmp_path, site, dump="__addons_progress")
    assert run.ok, run.tail()
    assert {s["name"]: s["action"] for s in run.results} == {n: "installed" for n in ALL}
    assert all(float(s["seconds"]) > 0 for s in run.results)
    assert "/19 kueue (kueue 0.14.4): installed in " in run.proc.stdout
    releases = apiserver.helm_list()
    assert set(releases) == set(RELEASES)
    assert {k: v["status"] for k, v in releases.items()} == {k: "deployed" for k in RELEASES}
    assert {v["chart"] for v in releases.values()} == {f"{e['chart']}-{e['version']}" for n, e in CATALOG.items() if n in ALL}
    STATE["revisions"] = _revisions(apiserver)
    STATE["install_seconds"] = sum(float(s["seconds"]) for s in run.results)


def test_crds_are_applied_by_the_role_and_upgraded(apiserver):
    crds = {c["metadata"]["name"]: c for c in apiserver.get("crd", "--show-managed-fields")["items"]}
    for name in ("certificates.cert-manager.io", "clusterissuers.cert-manager.io", "clusterqueues.kueue.x-k8s.io",
                 "localqueues.kueue.x-k8s.io", STALE_CRD, "clusterpolicies.nvidia.com", "nicclusterpolicies.mellanox.com",
                 "deviceconfigs.amd.com", "clusters.postgresql.cnpg.io", "trainjobs.trainer.kubeflow.org",
                 "mpijobs.kubeflow.org", "vmsingles.operator.victoriametrics.com"):
        assert name in crds, f"CRD {name} is missing"
    # Applied by the role (server-side apply, field manager clusterdos), not left to helm's install.
    for name in (STALE_CRD, "clusterpolicies.nvidia.com", "sealedsecrets.bitnami.com", "kongplugins.configuration.konghq.com"):
        managers = {(m["manager"], m["operation"]) for m in crds[name]["metadata"]["managedFields"]}
        assert ("clusterdos", "Apply") in managers, (name, managers)
    stale = crds[STALE_CRD]["spec"]["versions"][0]["schema"]["openAPIV3Schema"].get("description", "")
    assert "stale" not in stale, "the older CRD was not upgraded from the chart before the release"
    # The operators' own NFD sub-charts are off: no SR-IOV operator CRDs from the Network Operator.
    assert not [n for n in crds if n.endswith(".sriovnetwork.openshift.io")]


def test_one_node_feature_discovery(apiserver):
    workloads = apiserver.get("deployments,daemonsets", "--all-namespaces")["items"]
    nfd = sorted(f"{w['metadata']['namespace']}/{w['kind']}/{w['metadata']['name']}" for w in workloads
                 if "node-feature-discovery" in w["metadata"]["name"] or "nfd" in w["metadata"]["name"].split("-"))
    assert nfd and all(n.startswith("node-feature-discovery/") for n in nfd), nfd
    masters = [n for n in nfd if "master" in n]
    assert len(masters) == 1, masters


def test_storage_classes_with_exactly_one_default(apiserver):
    classes = {c["metadata"]["name"]: c for c in apiserver.get("storageclass")["items"]}
    assert {"local-path", "shared-path", "local-disk"} <= set(classes)
    defaults = sorted(n for n, c in classes.items()
                      if (c["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true")
    assert defaults == ["local-path"]
    assert classes["shared-path"]["parameters"].get("archiveOnDelete") == "true"


def test_kueue_default_queues(apiserver):
    cq = apiserver.get("clusterqueue", "cluster-queue")
    resources = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert {r["name"] for r in resources} == {"cpu", "memory", "nvidia.com/gpu"}
    for ns in ("default", "team-a"):
        lq = apiserver.get("localqueue", "default", "-n", ns)
        assert lq["spec"]["clusterQueue"] == "cluster-queue"
    assert apiserver.get("resourceflavor", "default-flavor")["metadata"]["name"] == "default-flavor"


def test_sealed_secrets_controller_and_cluster_issuer(apiserver):
    deploy = apiserver.get("deployment", "sealed-secrets-controller", "-n", "kube-system")
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"].startswith("docker.io/bitnami/sealed-secrets-controller")
    apiserver.get("service", "sealed-secrets-controller", "-n", "kube-system")
    apiserver.get("crd", "sealedsecrets.bitnami.com")
    issuers = {i["metadata"]["name"] for i in apiserver.get("clusterissuer")["items"]}
    assert "clusterdos-ca" in issuers


def test_second_run_of_the_whole_catalog_changes_nothing(apiserver, site, tmp_path):
    """A second run of every add-on reports changed=0 and moves no revision.

    Four charts used to upgrade again here: victoria-logs-single (Vector's pods carry a
    checksum of a ConfigMap read with helm's lookup, empty at install) and the AMD GPU
    Operator (its default DeviceConfig is rendered at install only), both turned off in the
    catalog (vars/catalog.yml says why); kubernetes-dashboard and the monitoring stack's
    Grafana (a secret quoted at install and bare when read back with lookup, hashed into a
    pod annotation), which helm_addon settles with one upgrade in the install run.
    """
    run = run_role(tmp_path, site, diff=True, dump="__addons_progress")
    assert run.ok, run.tail()
    actions = {s["name"]: s["action"] for s in run.results}
    moved = {n: a for n, a in actions.items() if a != "unchanged"}
    # On failure, what helm would change: the diff of each such release (--diff shows only changes).
    assert not moved, (moved, _diffs(run.proc.stdout, moved))
    assert run.changed == 0, run.tail()
    assert _revisions(apiserver) == STATE["revisions"]
    STATE["second_run_seconds"] = sum(float(s["seconds"]) for s in run.results)


def test_check_mode_and_diff_show_one_changed_release(apiserver, site, tmp_path):
    changed = dict(site, addons_enabled=FEW, addons_values={"metrics_server": {"args": ["--kubelet-insecure-tls"]}})
    run = run_role(tmp_path, changed, check=True, diff=True, dump="__addons_progress")
    assert run.ok, run.tail()
    actions = {s["name"]: s["action"] for s in run.results}
    assert actions == {n: ("upgraded" if n == "metrics_server" else "unchanged") for n in FEW}
    assert run.changed == 1, run.tail()
    assert "--kubelet-insecure-tls" in run.proc.stdout
    assert _revisions(apiserver) == STATE["revisions"], "check mode changed a release"


def test_changing_one_addons_values_upgrades_exactly_that_release(apiserver, site, tmp_path):
    changed = dict(site, addons_enabled=FEW, addons_values={"metrics_server": {"args": ["--kubelet-insecure-tls"]}})
    run = run_role(tmp_path, changed, dump="__addons_progress")
    assert run.ok, run.tail()
    after = _revisions(apiserver)
    bumped = sorted(k for k in after if after[k] != STATE["revisions"][k])
    assert bumped == ["kube-system/metrics-server"]
    args = apiserver.get("deployment", "metrics-server", "-n", "kube-system")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--kubelet-insecure-tls" in args
    STATE["revisions"] = after


def test_removing_an_addon_removes_its_release(apiserver, site, tmp_path):
    removed = dict(site, addons_enabled=[n for n in FEW if n != "local_disk"], addons_absent=["local_disk"],
                   addons_values={"metrics_server": {"args": ["--kubelet-insecure-tls"]}})
    run = run_role(tmp_path, removed, dump="__addons_progress")
    assert run.ok, run.tail()
    actions = {s["name"]: s["action"] for s in run.results}
    assert actions["local_disk"] == "uninstalled"
    # Its progress line, as it happened (the yaml result format may fold a long message).
    assert "1/1 local_disk (local-disk-storage/local-disk): uninstalled in " in " ".join(run.proc.stdout.split()), run.tail()
    after = _revisions(apiserver)
    assert "local-disk-storage/local-disk" not in after
    assert after == {k: v for k, v in STATE["revisions"].items() if k != "local-disk-storage/local-disk"}
    assert "local-disk" not in {c["metadata"]["name"] for c in apiserver.get("storageclass")["items"]}


# playbooks/addons.yml itself, as a site runs it from the controller (-e addons_hosts=localhost, as docs/addons.md
# says), for the add-ons whose CRDs the role applies (sealed_secrets: crds in the chart's crds/) and those that come
# with objects of their own (cert_manager's issuers and root certificate, kueue's flavor and queues).
PLAYBOOK_ADDONS = ["cert_manager", "kueue", "sealed_secrets"]
SEALED_CRD = "sealedsecrets.bitnami.com"


def _playbook_inventory(site: dict) -> dict:
    """A site's inventory: its control plane and a worker (never contacted: the stage runs on the controller)."""
    all_vars = dict(site, addons_enabled=PLAYBOOK_ADDONS, clusterdos_time_servers=["10.0.0.254"],
                    kubernetes_cluster_node_cidr="10.0.0.0/24")
    return site_inventory({"cp1": dict(NOWHERE, clusterdos_node_ip="10.0.0.1"), "c1": dict(NOWHERE, clusterdos_node_ip="10.0.0.11")},
                          {"kube_control_plane": ["cp1"], "kube_node": ["c1"]}, all_vars)


def _run_addons_playbook(tmp_path, site, **kw):
    run = run_playbook(tmp_path, "addons.yml", _playbook_inventory(site), dump={"progress": ["localhost", "__addons_progress"]},
                       extra_args=["-e", "addons_hosts=localhost"], **kw)
    assert run.ok, run.tail()
    assert "UNREACHABLE" not in run.proc.stdout, run.tail()
    return run


def _objects_that_come_with(api) -> dict:
    issuers = {i["metadata"]["name"] for i in api.get("clusterissuer")["items"]}
    certificates = {c["metadata"]["name"] for c in api.get("certificate", "-n", "cert-manager")["items"]}
    local_queues = {f"{q['metadata']['namespace']}/{q['metadata']['name']}" for q in api.get("localqueue", "--all-namespaces")["items"]}
    cluster_queues = {q["metadata"]["name"] for q in api.get("clusterqueue")["items"]}
    return {"issuers": issuers, "certificates": certificates, "local_queues": local_queues, "cluster_queues": cluster_queues}


def test_the_addons_playbook_puts_back_crds_and_the_objects_that_come_with_addons(apiserver, site, tmp_path):
    """Drift made by hand (objects deleted, a CRD edited) is put back by the next run of the stage."""
    before = _revisions(apiserver)
    STATE["objects"] = _objects_that_come_with(apiserver)
    assert STATE["objects"]["issuers"] >= {"clusterdos-selfsigned", "clusterdos-ca"}, STATE["objects"]
    assert STATE["objects"]["local_queues"] == {"default/default", "team-a/default"}, STATE["objects"]
    for args in (("clusterissuer", "clusterdos-ca"), ("certificate", "clusterdos-root-ca", "-n", "cert-manager"),
                 ("localqueue", "default", "-n", "team-a"), ("clusterqueue", "cluster-queue")):
        res = apiserver.kubectl("delete", *args, check=False)
        assert res.returncode == 0, res.stderr
    edited = apiserver.kubectl("patch", "crd", SEALED_CRD, "--type=json", "-p", json.dumps([
        {"op": "replace", "path": "/spec/versions/0/schema/openAPIV3Schema/description", "value": "stale: edited by hand"}]),
        check=False)
    assert edited.returncode == 0, edited.stderr
    run = _run_addons_playbook(tmp_path, site)
    # The releases are as they were (no upgrade); what the role applies itself changed.
    assert {s["name"]: s["action"] for s in run.results["progress"]} == {n: "unchanged" for n in PLAYBOOK_ADDONS}
    assert _revisions(apiserver) == before
    assert run.recap()["localhost"]["changed"] >= 2, run.tail()
    assert _objects_that_come_with(apiserver) == STATE["objects"]
    assert apiserver.get("clusterqueue", "cluster-queue")["spec"]["resourceGroups"][0]["coveredResources"] == \
        ["cpu", "memory", "nvidia.com/gpu"]
    crd = apiserver.get("crd", SEALED_CRD, "--show-managed-fields")
    assert "stale" not in crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].get("description", "")
    assert ("clusterdos", "Apply") in {(m["manager"], m["operation"]) for m in crd["metadata"]["managedFields"]}


def test_a_second_run_of_the_addons_playbook_changes_nothing(apiserver, site, tmp_path):
    before = _revisions(apiserver)
    run = _run_addons_playbook(tmp_path, site, diff=True)
    assert {s["name"]: s["action"] for s in run.results["progress"]} == {n: "unchanged" for n in PLAYBOOK_ADDONS}
    changed = {h: r["changed"] for h, r in run.recap().items()}
    assert "localhost" in changed and set(changed.values()) == {0}, run.tail()
    assert _revisions(apiserver) == before
    assert _objects_that_come_with(apiserver) == STATE["objects"]
