"""The add-on stage from its default host, the first control plane, on a fresh cluster:
the addons role put helm there (the login role's directory source, version checked) and
made sure of Debian's kubernetes Python client, read the real local-path-provisioner chart from
the site's chart mirror (../shared/charts over HTTP on the lab bridge) and installed it.
Its image cannot be pulled here, so only the release and its objects are checked, not pods.
Runs before test_ha.py stops a member (file order)."""

from __future__ import annotations

import json

from conftest import MEMBERS, host

ADMIN = "--kubeconfig /etc/kubernetes/admin.conf"


def test_only_the_addon_host_got_helm_and_every_control_plane_the_kubernetes_client():
    first = host(MEMBERS[0])
    version = first.run("/usr/local/bin/helm version --short")
    assert version.rc == 0 and version.stdout.startswith("v4.1.4"), version.stdout + version.stderr
    assert first.package("python3-kubernetes").is_installed
    assert first.run("python3 -c 'import kubernetes'").rc == 0
    # helm only where the add-ons run; the kubernetes client is on every control plane
    # (kubernetes_cluster_api_client_packages: the node operations use kubernetes.core).
    for other in MEMBERS[1:]:
        assert not host(other).file("/usr/local/bin/helm").exists, other
        assert host(other).package("python3-kubernetes").is_installed, other


def test_the_release_from_the_chart_mirror_is_deployed():
    out = host(MEMBERS[0]).run(f"helm list -A -o json {ADMIN}")
    assert out.rc == 0, out.stderr
    releases = {r["name"]: r for r in json.loads(out.stdout)}
    assert "local-path" in releases, sorted(releases)
    release = releases["local-path"]
    assert release["namespace"] == "local-path-storage"
    assert release["chart"] == "local-path-provisioner-0.0.33"
    assert release["status"] == "deployed"


def test_local_path_is_the_one_default_storage_class():
    out = host(MEMBERS[0]).run(f"kubectl {ADMIN} get storageclass -o json")
    assert out.rc == 0, out.stderr
    defaults = [c["metadata"]["name"] for c in json.loads(out.stdout)["items"]
                if (c["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true"]
    assert defaults == ["local-path"]
