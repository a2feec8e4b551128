"""The helm side of the add-on modules, run on the real helm binary.

The tests build a small chart themselves, package it at two versions, and use it as a
directory mirror and as an HTTP chart repository served on 127.0.0.1. Nothing here
needs a Kubernetes API server: `helm template`, `helm show` and `helm package` work
offline. `scripts/install-helm.sh` puts helm into .venv/bin.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.addon_catalog import plan
from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import (
    HelmError,
    HelmRelease,
    ReleaseRequest,
    _chart_id,
    chart_source,
    normalize_manifest,
    rewrite_registries,
)

ROOT = Path(__file__).parents[4]
# HELM_BINARY picks another helm (e.g. the Helm 3 line from HELM_LAYER=v32 scripts/install-helm.sh).
HELM = os.environ.get("HELM_BINARY") or shutil.which("helm", path=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
_HOME: dict = {}
if HELM is None and os.environ.get("CI"):
    pytest.fail("helm is not installed: run scripts/install-helm.sh", pytrace=False)
pytestmark = pytest.mark.skipif(HELM is None, reason="helm is not installed: run scripts/install-helm.sh")

CHART = {
    "Chart.yaml": "apiVersion: v2\nname: widget\ndescription: test chart\ntype: application\nversion: 1.0.0\nappVersion: '1.0'\n",
    "values.yaml": "replicas: 1\nimage:\n  repository: quay.io/example/widget\n  tag: '1.0'\nconfig:\n  greeting: hello\nnodeSelector: {}\n",
    "templates/deployment.yaml": """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-widget
  labels:
    helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .Release.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .Release.Name }}
    spec:
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: widget
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
""",
    "templates/configmap.yaml": """apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-widget
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.config.greeting | quote }}
""",
    "crds/widgets.example.com.yaml": """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
""",
}


def _run(argv):
    # helm keeps its caches and repository config under the test's own directory.
    env = {**os.environ, "HELM_CACHE_HOME": _HOME["dir"], "HELM_CONFIG_HOME": _HOME["dir"], "HELM_DATA_HOME": _HOME["dir"]}
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """A directory of chart archives: widget 1.0.0 and 1.1.0."""
    base = tmp_path_factory.mktemp("helm")
    _HOME["dir"] = str(base / "home")
    src = base / "widget"
    for name, text in CHART.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    out = base / "charts"
    out.mkdir()
    for version in ("1.0.0", "1.1.0"):
        rc, _out, err = _run([HELM, "package", str(src), "--version", version, "--destination", str(out)])
        assert rc == 0, err
    return out


@pytest.fixture(scope="module")
def http_repo(mirror):
    """The same archives as an HTTP chart repository on 127.0.0.1 (helm repo index + http.server)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(mirror)))
    url = f"http://127.0.0.1:{server.server_address[1]}"
    rc, _out, err = _run([HELM, "repo", "index", str(mirror), "--url", url])
    assert rc == 0, err
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _template(mirror, values, version="1.1.0", name="demo"):
    helm = HelmRelease(_run, binary=HELM)
    source = chart_source("widget", version, chart_path=str(mirror))
    values_file = helm._values_file(values)
    try:
        rc, out, err = _run(helm.connect().template(name, "apps", source, values_file))
    finally:
        os.unlink(values_file)
    assert rc == 0, err
    return out


# --- rendering and the compare ----------------------------------------------------------
def test_same_chart_and_values_render_the_same_manifest(mirror):
    assert normalize_manifest(_template(mirror, {"replicas": 2})) == normalize_manifest(_template(mirror, {"replicas": 2}))


def test_changed_values_change_the_manifest(mirror):
    assert normalize_manifest(_template(mirror, {"replicas": 2})) != normalize_manifest(_template(mirror, {"replicas": 3}))


def test_new_chart_version_changes_the_manifest(mirror):
    assert normalize_manifest(_template(mirror, {}, "1.0.0")) != normalize_manifest(_template(mirror, {}, "1.1.0"))


def test_order_and_source_comments_are_not_a_change(mirror):
    rendered = _template(mirror, {})
    docs = [d for d in rendered.split("\n---\n") if d.strip()]
    reordered = "\n---\n".join(reversed(docs)).replace("# Source: widget/templates/", "# Source: widget/templates/moved/")
    assert normalize_manifest(reordered) == normalize_manifest(rendered)
    assert len(normalize_manifest(rendered)) == 2


def test_values_file_reaches_helm_as_a_mapping(mirror):
    rendered = _template(mirror, {"config": {"greeting": "ciao"}, "nodeSelector": {"feature.node.kubernetes.io/pci-10de.present": "true"}})
    assert 'greeting: "ciao"' in rendered
    assert "feature.node.kubernetes.io/pci-10de.present: \"true\"" in rendered


def test_registry_mirror_rewrite_reaches_the_rendered_images(mirror):
    values = rewrite_registries({"image": {"repository": "quay.io/example/widget"}}, "registry.site:5000")
    assert 'image: "registry.site:5000/example/widget:1.0"' in _template(mirror, values)


def test_catalog_plan_values_render_with_helm(mirror):
    catalog = {
        "nfd": {"chart": "node-feature-discovery", "version": "0.18.2", "repo_url": "https://example.org/nfd", "namespace": "nfd"},
        "widget": {"chart": "widget", "version": "1.1.0", "repo_url": "https://example.org/upstream", "namespace": "apps",
                   "values": {"replicas": 2}, "image_values": {"image": {"repository": "quay.io/example/widget"}},
                   "node_group": "gpu_nvidia", "node_selector_paths": ["nodeSelector"]},
    }
    rel = plan(catalog, ["widget"], {"widget": {"config": {"greeting": "hi"}}}, chart_mirror=str(mirror),
               registry_mirror="registry.site", node_selectors={"gpu_nvidia": {"gpu": "yes"}})[0]
    assert rel["chart_path"] == str(mirror)
    rendered = _template(mirror, rel["release_values"])
    for text in ("replicas: 2", 'greeting: "hi"', 'image: "registry.site/example/widget:1.0"', 'gpu: "yes"'):
        assert text in rendered


# --- charts from a directory mirror and an HTTP repository ------------------------------
def test_directory_mirror_serves_the_pinned_version_and_its_crds(mirror):
    helm = HelmRelease(_run, binary=HELM)
    source = chart_source("widget", "1.0.0", chart_path=str(mirror))
    assert source.ref == str(mirror / "widget-1.0.0.tgz")
    assert helm.verify_chart(source)["version"] == "1.0.0"
    assert "name: widgets.example.com" in helm.chart_crds(source)


def test_version_missing_from_the_directory_mirror_is_named(mirror):
    with pytest.raises(HelmError, match=r"chart widget version 2\.0\.0 is not in the chart directory .*no widget-2\.0\.0\.tgz"):
        chart_source("widget", "2.0.0", chart_path=str(mirror))


def test_http_repository_serves_the_pinned_version(http_repo):
    helm = HelmRelease(_run, binary=HELM)
    source = chart_source("widget", "1.1.0", repo_url=http_repo)
    assert helm.verify_chart(source)["version"] == "1.1.0"
    assert helm.commands[-1] == [HELM, "show", "chart", "widget", "--repo", http_repo, "--version", "1.1.0"]


def test_version_missing_from_the_http_repository_fails_before_any_release(http_repo):
    helm = HelmRelease(_run, binary=HELM)
    with pytest.raises(HelmError) as err:
        helm.chart_crds(chart_source("widget", "9.9.9", repo_url=http_repo))
    assert f"chart widget version 9.9.9 cannot be read from {http_repo}" in err.value.msg
    assert [c[1] for c in helm.commands] == ["version", "show"]


def test_install_diff_renders_the_chart_offline(mirror):
    """helm stands in for itself; only `helm list` (which needs an API server) is a recorded answer."""
    def run(argv):
        if argv[1] == "list":
            return 0, "[]", ""
        return _run(argv)

    helm = HelmRelease(run, binary=HELM)
    req = ReleaseRequest(name="demo", namespace="apps", source=chart_source("widget", "1.1.0", chart_path=str(mirror)),
                         values={"replicas": 4})
    result = helm.ensure(req, check_mode=True, want_diff=True)
    assert (result.changed, result.status) == (True, "installed")
    assert "replicas: 4" in result.diff["after"]
    assert [c[1] for c in result.commands] == ["version", "list", "template"]


def test_release_json_printed_by_helm_names_the_chart_as_helm_list_does(mirror):
    """The dry run's JSON (here Helm 4's offline client dry run) carries chart metadata the compare reads."""
    helm = HelmRelease(_run, binary=HELM)
    if helm.connect().major < 4:
        pytest.skip("Helm 3's client dry run still needs a cluster")
    rc, out, err = _run([HELM, "install", "demo", str(mirror / "widget-1.1.0.tgz"), "--namespace", "apps", "--dry-run=client",
                         "--output", "json"])
    assert rc == 0, err
    release = json.loads(out)
    assert _chart_id(release) == "widget-1.1.0"
    assert normalize_manifest(release["manifest"]) == normalize_manifest(_template(mirror, {}, name="demo"))
