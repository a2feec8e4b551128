"""Report writers: JUnit XML, JSON, and the HTML page rendered by headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from xml.etree import ElementTree as ET

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import report

from conftest import FIXTURES
from pngdecode import png_pixels

DATA = json.loads((FIXTURES / "report_results.json").read_text())
RESULTS, TOPOLOGY = DATA["results"], DATA["topology"]
META = {"cluster": "lab", "generated": "2026-11-29T16:00:00Z"}


def test_empty_selection_runs_nothing():
    assert report.to_json([], {}, META).count('"total": 0') == 1


def test_junit_counts_and_failure_detail():
    root = ET.fromstring(report.to_junit(RESULTS, META))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("6", "1", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert sorted(suites) == ["hardware", "kubernetes", "slurm"]
    assert suites["hardware"].get("tests") == "2"
    failure = root.find(".//testcase[@name='kubernetes.gpus [svc1]']/failure")
    assert failure.text == "gpu2: nvidia.com/gpu allocatable 7, inventory says 8"
    assert root.find(".//testcase[@name='kubernetes.rdma [svc1]']/skipped") is not None
    assert root.find(".//testcase[@name='slurm.srun [login1]']").get("time") == "1.731"


def test_json_has_summary_checks_and_topology():
    doc = json.loads(report.to_json(RESULTS, TOPOLOGY, META))
    assert doc["summary"] == {"passed": 4, "failed": 1, "skipped": 1, "total": 6}
    assert doc["topology"]["nodes"][2]["gpus"] == {"nvidia.com/gpu": 8}
    # Failed checks first, then passed, then skipped.
    assert [c["status"] for c in doc["checks"]] == ["failed"] + ["passed"] * 4 + ["skipped"]


def test_html_escapes_detail_and_draws_every_node():
    html = report.to_html(RESULTS, TOPOLOGY, META)
    assert "&lt;&amp;&gt;" in html and "<&>" not in html
    svg = ET.fromstring(re.search(r"<svg.*?</svg>", html, re.S).group(0))
    ns = "{http://www.w3.org/2000/svg}"
    nodes = {g.get("data-node"): g.get("class") for g in svg.iter(ns + "g")}
    # gpu2 is blamed by the failed GPU check; the others are green.
    assert nodes == {"login1": "node passed", "svc1": "node passed", "gpu1": "node passed", "gpu2": "node failed"}
    gpu_chips = [r for r in svg.iter(ns + "rect") if r.find(ns + "title") is not None]
    assert len(gpu_chips) == 16
    labels = [t.text for t in svg.iter(ns + "text")]
    assert "nodes 10.0.0.0/24" in labels and "infiniband 10.10.0.0/24" in labels
    # Every node is wired to the node network; only the GPU workers to InfiniBand.
    wires = [line for line in svg.iter(ns + "line") if line.get("stroke") == "#9aa0a6"]
    assert len(wires) == 4 + 2
    assert '<tr class="failed"><td class="status">failed</td><td>kubernetes.gpus</td>' in html


def test_html_report_renders_in_headless_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    page = tmp_path / "validation.html"
    page.write_text(report.to_html(RESULTS, TOPOLOGY, META), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--user-data-dir=%s" % (tmp_path / "profile"), "--screenshot=%s" % shot, "--window-size=1100,900",
         page.as_uri()],
        check=True, capture_output=True, timeout=120)
    width, height, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1100, 900)
    colors = set(pixels)
    assert len(colors) > 50, "the screenshot is (nearly) blank"
    # The badges and node outlines: green for passed, red for failed, and the GPU chips.
    for rgb in ((0x1E, 0x8E, 0x3E), (0xD9, 0x30, 0x25), (0x76, 0xB9, 0x00)):
        assert bytes(rgb) in colors, "colour #%02x%02x%02x not drawn" % rgb
    white = sum(1 for p in pixels if p == b"\xff\xff\xff")
    assert white < 0.95 * len(pixels)


RELEASES = [
    {"name": "cert_manager", "release": "cert-manager/cert-manager", "chart": "cert-manager-v1.19.1",
     "action": "unchanged", "seconds": "2.4", "revision": "1"},
    {"name": "metrics_server", "release": "kube-system/metrics-server", "chart": "metrics-server-3.13.0",
     "action": "upgraded", "seconds": 3.5, "revision": "2"},
    {"name": "local_disk", "release": "local-disk-storage/local-disk", "chart": "", "action": "uninstalled",
     "seconds": 0.9, "revision": ""},
]


def test_html_and_json_list_each_releases_action_and_time():
    meta = dict(META, releases=RELEASES)
    html = report.to_html(RESULTS, TOPOLOGY, meta)
    table = ET.fromstring(re.search(r'<table id="releases">.*?</table>', html, re.S).group(0))
    rows = {r.get("data-release"): [td.text for td in r.findall("td")] for r in table.iter("tr") if r.get("data-release")}
    assert rows["kube-system/metrics-server"] == ["metrics_server", "kube-system/metrics-server", "metrics-server-3.13.0",
                                                  "upgraded", "3.5 s", "2"]
    assert rows["cert-manager/cert-manager"][3:5] == ["unchanged", "2.4 s"]
    assert rows["local-disk-storage/local-disk"][3] == "uninstalled"
    assert "3 releases in 6.8 s: 1 unchanged, 1 uninstalled, 1 upgraded" in html
    assert json.loads(report.to_json(RESULTS, TOPOLOGY, meta))["releases"] == RELEASES
    # Without releases (no add-on stage in this run) the page has no such table.
    assert 'id="releases"' not in report.to_html(RESULTS, TOPOLOGY, META)
