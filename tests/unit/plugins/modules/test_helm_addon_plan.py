"""addon_plan through its main(): bad input fails before helm is called; charts are read with the real helm."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.clusterdos.cluster.plugins.modules import addon_plan

ROOT = Path(__file__).parents[4]
HELM = os.environ.get("HELM_BINARY") or shutil.which("helm", path=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
CATALOG = yaml.safe_load((ROOT / "roles" / "addons" / "vars" / "catalog.yml").read_text())["__addons_catalog"]
needs_helm = pytest.mark.skipif(HELM is None and not os.environ.get("CI"), reason="helm is not installed: run scripts/install-helm.sh")


def _main(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        addon_plan.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ({"enabled": ["gpu_operator"]}, "gpu_operator is enabled but depends on ['node_feature_discovery'], which is not"),
        ({"enabled": ["grafana"]}, "unknown add-on(s) ['grafana']"),
        ({"enabled": ["cert_manager"], "values": {"cert_manager": ["crds"]}}, "values for cert_manager must be a mapping, got list"),
        ({"enabled": ["cert_manager"], "absent": ["cert_manager"]}, "both enabled and to be removed"),
        ({"enabled": ["mpi_operator"]}, "mpi_operator: chart mpi-operator has no upstream Helm repository"),
        ({"enabled": [], "image_registry_mirror": "oci://registry.site"}, "image_registry_mirror must be a registry host"),
    ],
)
def test_bad_input_fails_before_any_helm_call(args, msg, capsys):
    # binary_path does not exist: reaching helm would fail differently.
    out = _main({"catalog": CATALOG, "verify_charts": True, "binary_path": "/nonexistent/helm", **args}, capsys)
    assert out["failed"] is True
    assert msg in out["msg"]


def test_plan_of_the_shipped_catalog(capsys):
    out = _main({"catalog": CATALOG, "enabled": ["vllm", "gpu_operator", "node_feature_discovery"], "absent": ["dashboard"]}, capsys)
    assert out["changed"] is False
    assert out["order"] == ["node_feature_discovery", "gpu_operator", "vllm"]
    assert out["removals"] == [{"name": "dashboard", "release": "dashboard", "namespace": "kubernetes-dashboard"}]


@pytest.fixture(scope="module")
def chart_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("plan")
    src = base / "widget"
    (src / "crds").mkdir(parents=True)
    (src / "templates").mkdir()
    (src / "Chart.yaml").write_text("apiVersion: v2\nname: widget\nversion: 1.0.0\n")
    (src / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n")
    (src / "crds" / "w.yaml").write_text("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n")
    out = base / "charts"
    subprocess.run([HELM, "package", str(src), "--version", "1.2.0", "--destination", str(out)], check=True, capture_output=True)
    return out


CHART_CATALOG = {
    "nfd": {"chart": "node-feature-discovery", "version": "0.18.2", "repo_url": "https://example.org/nfd", "namespace": "nfd"},
    "widget": {"chart": "widget", "version": "1.2.0", "repo_url": "https://example.org/upstream", "namespace": "apps"},
}


@needs_helm
def test_verify_charts_reads_crds_from_the_directory_mirror(chart_dir, capsys):
    out = _main({"catalog": CHART_CATALOG, "enabled": ["widget"], "chart_mirror": str(chart_dir), "verify_charts": True,
                 "binary_path": HELM}, capsys)
    assert "failed" not in out, out
    assert "name: widgets.example.com" in out["releases"][0]["crd_manifest"]
    # The CRDs helm would install for these values (crds/ of the chart and its enabled sub-charts).
    with_crds = [c for c in out["commands"] if c[-1] == "--include-crds"]
    assert len(with_crds) == 1 and with_crds[0][:4] == [HELM, "template", "widget", str(chart_dir / "widget-1.2.0.tgz")]
    assert "ConfigMap" not in out["releases"][0]["crd_manifest"]


@needs_helm
def test_version_missing_from_the_mirror_is_a_clear_error(chart_dir, capsys):
    catalog = {**CHART_CATALOG, "widget": {**CHART_CATALOG["widget"], "version": "1.3.0"}}
    out = _main({"catalog": catalog, "enabled": ["widget"], "chart_mirror": f"file://{chart_dir}", "verify_charts": True,
                 "binary_path": HELM}, capsys)
    assert out["failed"] is True
    assert f"chart widget version 1.3.0 is not in the chart directory {chart_dir}" in out["msg"]
