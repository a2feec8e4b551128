"""Every catalog entry against its real chart, and the add-on preflight's refusals (no API server).

The charts are the catalog's pinned versions from ../shared/charts, served over HTTP on
loopback as a site's chart mirror. Each entry is planned (addon_catalog.plan) and then
read and rendered (helm.check_charts: ``helm show crds``/``show chart``, then ``helm
template`` with the final values) exactly as the addon_plan module does, with the image
registry mirror rewrite off and on. The preflight tests run the role's own
``tasks_from: preflight.yml`` with ansible-playbook.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from playbook import ROOT, VENV_BIN, run_role, sample_addon_vars

from ansible_collections.clusterdos.cluster.plugins.module_utils.addon_catalog import plan
from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import HelmRelease, check_charts

CATALOG = yaml.safe_load((ROOT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
MIRROR = "registry.site.test:5000"
# What the role derives for an entry from its own inputs when the test enables it alone.
DERIVED = {"shared_path": {"nfs": {"server": "10.10.0.30", "path": "/srv/shared"}}}
NODE_SELECTORS = {"gpu_nvidia": {"feature.node.kubernetes.io/pci-10de.present": "true"},
                  "gpu_amd": {"feature.node.kubernetes.io/pci-1002.present": "true"},
                  "rdma": {"feature.node.kubernetes.io/pci-15b3.present": "true"}}
# The mpi-operator chart is a wrapper around upstream's single manifest, which hard-codes its
# image and offers no values (../shared/charts/SOURCES.md): a mirrored site re-tags that image
# in the chart it packages. Every other entry must point every container at the mirror.
IMAGES_NOT_IN_VALUES = {"mpi_operator": {"mpioperator/mpi-operator:0.6.0"}}
# Rendered charts are megabytes of YAML (CRDs, dashboards): libyaml's loader when there is one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_all(text: str) -> list:
    return [d for d in yaml.load_all(text, Loader=_LOADER) if d]


def _with_dependencies(name: str) -> list[str]:
    todo, seen = [name], set()
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += CATALOG[n].get("depends_on") or []
    return sorted(seen)


def _images(obj):
    """Every container image in a rendered object (pods, pod templates, anything with containers)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("containers", "initContainers", "ephemeralContainers") and isinstance(value, list):
                yield from (c["image"] for c in value if isinstance(c, dict) and isinstance(c.get("image"), str))
            yield from _images(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _images(value)


def _run(argv):
    import subprocess
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def _run_once_each():
    """``_run``, but a command given again with the same values is answered from its first run.

    ``helm template`` reads no cluster: the same chart, version and values render the same text.
    The test renders what check_charts rendered already (the release's objects, and with
    ``--include-crds`` for entries whose CRDs the role applies); each distinct command still runs
    once, against the real chart. Values files have fresh names each time: keyed by their content.
    """
    answers: dict = {}

    def run(argv):
        key = tuple(Path(a).read_text() if i and argv[i - 1] == "--values" else a for i, a in enumerate(argv))
        if key not in answers:
            answers[key] = _run(argv)
        return answers[key]
    return run


def test_catalog_has_the_twenty_shared_charts():
    index = yaml.safe_load((ROOT.parent / "shared" / "charts" / "index.yaml").read_text())["entries"]
    pinned = {(e["chart"], e["version"]) for e in CATALOG.values()}
    published = {(chart, v["version"]) for chart, versions in index.items() for v in versions}
    assert len(CATALOG) == 20
    assert pinned <= published, sorted(pinned - published)


@pytest.mark.parametrize("registry_mirror", ["", MIRROR], ids=["upstream-images", "image-mirror"])
@pytest.mark.parametrize("name", sorted(CATALOG))
def test_catalog_entry_renders_with_its_real_chart(name, registry_mirror, chart_repo, tmp_path):
    releases = plan(CATALOG, _with_dependencies(name), derived=DERIVED, chart_mirror=chart_repo,
                    registry_mirror=registry_mirror, node_selectors=NODE_SELECTORS)
    release = next(r for r in releases if r["name"] == name)
    helm = HelmRelease(_run_once_each(), binary=str(VENV_BIN / "helm"), tmpdir=str(tmp_path))
    # What addon_plan runs: the chart read and rendered with these values (or this raises).
    check_charts(helm, [release], verify=True, render=True)
    rendered = helm.render(release["release"], release["namespace"], _source(release), release["release_values"],
                           include_crds=True)
    all_docs = _load_all(rendered)
    assert all(d.get("kind") and d.get("apiVersion") for d in all_docs)
    images = set(_images(all_docs))
    if registry_mirror:
        off_mirror = {i for i in images if not i.startswith(MIRROR + "/")} - IMAGES_NOT_IN_VALUES.get(name, set())
        assert not off_mirror, f"{name}: containers still pull from upstream with an image mirror: {sorted(off_mirror)}"
        return
    assert not any(MIRROR in i for i in images)
    docs = _load_all(helm.render(release["release"], release["namespace"], _source(release), release["release_values"]))
    assert docs, f"{name}: the chart rendered no objects"
    # CRDs in crds/ (of the chart or a sub-chart these values enable): helm installs those once and
    # never upgrades them, so the entry must let the role apply them (crds: true).
    templated = {d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"}
    crds = [d for d in all_docs if d["kind"] == "CustomResourceDefinition" and d["metadata"]["name"] not in templated]
    assert all(d["kind"] == "CustomResourceDefinition" for d in crds)
    assert release["crds"] == bool(crds), f"{name}: crds is {release['crds']} but the chart has {len(crds)} CRD(s) in crds/"
    if release["crds"]:
        assert [d["metadata"]["name"] for d in _load_all(release["crd_manifest"])] == \
            [d["metadata"]["name"] for d in crds]
    # One Node Feature Discovery: only its own entry brings NFD's CRDs (the operators' copies are off,
    # and the AMD operator's is an older NFD that must not replace them).
    nfd_crds = {d["metadata"]["name"] for d in crds if d["metadata"]["name"].endswith(".nfd.k8s-sigs.io")}
    assert bool(nfd_crds) == (name == "node_feature_discovery"), (name, nfd_crds)


def _source(release):
    from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import chart_source
    return chart_source(release["chart"], release["version"], repo_url=release["repo_url"], chart_path=release["chart_path"])


def _preflight_vars(chart_repo: str, **extra) -> dict:
    return {**sample_addon_vars(), "addons_chart_mirror": chart_repo, "addons_helm_binary": str(VENV_BIN / "helm"), **extra}


@pytest.mark.parametrize("registry_mirror", ["", MIRROR], ids=["upstream-images", "image-mirror"])
def test_sample_inventory_passes_the_preflight_with_real_charts(registry_mirror, chart_repo, tmp_path):
    """The sample inventory's add-ons, through the role's preflight: every chart read and rendered."""
    run = run_role(tmp_path, _preflight_vars(chart_repo, addons_image_registry_mirror=registry_mirror),
                   tasks_from="preflight.yml", dump="__addons_plan")
    assert run.ok, run.tail()
    enabled = sample_addon_vars()["addons_enabled"]
    assert sorted(run.results["order"]) == sorted(enabled)
    templates = [c for c in run.results["commands"] if c[1] == "template"]
    releases = {r["release"] for r in run.results["releases"]}
    assert {c[2] for c in templates} == releases and len(releases) == len(enabled)
    assert all("--repo" in c and chart_repo in c for c in templates)
    values = {r["name"]: r["release_values"] for r in run.results["releases"]}
    assert values["shared_path"]["nfs"]["server"] == "10.10.0.30"
    assert values["gpu_operator"]["driver"]["enabled"] is False
    # The catalog's image_values (under a mirror only) name the registry, rewritten to the mirror.
    assert values["gpu_operator"]["driver"].get("repository") == (f"{MIRROR}/nvidia" if registry_mirror else None)


# Bad input: each is refused by the preflight (no API server anywhere), with what to fix.
BAD_INPUT = {
    "chart-version-not-in-repository": (
        {"addons_enabled": ["metrics_server"], "addons_catalog_overrides": {"metrics_server": {"version": "3.13.99"}}},
        "metrics_server: chart metrics-server version 3.13.99 cannot be read from"),
    "chart-version-not-in-repository-crds": (
        {"addons_enabled": ["sealed_secrets"], "addons_catalog_overrides": {"sealed_secrets": {"version": "2.17.99"}}},
        "sealed_secrets: chart sealed-secrets version 2.17.99 from http://127.0.0.1:"),
    "values-the-schema-refuses": (
        {"addons_enabled": ["cert_manager"], "addons_values": {"cert_manager": {"replicaCount": "two"}}},
        "cert_manager: chart cert-manager version v1.19.1 from http://127.0.0.1:"),
    "values-a-template-refuses": (
        {"addons_enabled": ["kube_state_metrics", "monitoring"],
         "addons_values": {"monitoring": {"grafana": {"dashboards": {"gpu": {"x": {"gnetId": 1}}}}}}},
        "It is not possible to use both"),
    "dependency-missing": (
        {"addons_enabled": ["kueue"]},
        "kueue is enabled but depends on ['cert_manager'], which is not: enable cert_manager too"),
    "storage-class-name-used-twice": (
        {"addons_enabled": ["local_path", "shared_path"],
         "addons_values": {"local_path": {"storageClass": {"name": "shared-path"}}}},
        "storage class name(s) used more than once: shared-path (by local_path, shared_path)"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_preflight_refuses_bad_input_without_a_cluster(case, chart_repo, tmp_path):
    extra, message = BAD_INPUT[case]
    run = run_role(tmp_path, _preflight_vars(chart_repo, **extra), tasks_from="preflight.yml", dump="__addons_plan")
    assert not run.ok and run.results == {}, run.tail()
    assert message in run.proc.stdout, run.tail()
    if case == "values-the-schema-refuses":
        assert "replicaCount" in run.proc.stdout
