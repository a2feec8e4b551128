# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Report writers: JUnit XML (AWX, CI), JSON, and one self-contained HTML page with
the cluster's topology drawn as inline SVG and every check green or red with detail.

Every writer is a pure function of (results, topology, meta) and returns text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple
from xml.etree import ElementTree as ET
from xml.sax.saxutils import escape

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import FAILED, PASSED, SKIPPED, summarize

KINDS = ("login", "service", "worker")
COLORS = {PASSED: "#1e8e3e", FAILED: "#d93025", SKIPPED: "#80868b"}
FILLS = {PASSED: "#e6f4ea", FAILED: "#fce8e6", SKIPPED: "#f1f3f4"}


def _sorted(results: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    order = {FAILED: 0, PASSED: 1, SKIPPED: 2}
    return sorted(results, key=lambda r: (order.get(r.get("status"), 3), r.get("group", ""), r.get("name", ""), r.get("host", "")))


def to_json(results: List[Dict[str, Any]], topology: Dict[str, Any], meta: Dict[str, Any]) -> str:
    doc = {"cluster": meta.get("cluster", ""), "generated": meta.get("generated", ""),
           "summary": summarize(results), "checks": _sorted(results), "topology": topology,
           "releases": meta.get("releases") or []}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def to_junit(results: List[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    """One testsuite per group; one testcase per check and host; failure/skipped with detail."""
    root = ET.Element("testsuites", name="clusterdos validation %s" % meta.get("cluster", ""))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for result in _sorted(results):
        groups.setdefault(result.get("group", "other"), []).append(result)
    totals = summarize(results)
    root.set("tests", str(totals["total"]))
    root.set("failures", str(totals[FAILED]))
    root.set("skipped", str(totals[SKIPPED]))
    root.set("time", "%.3f" % sum(float(r.get("duration", 0)) for r in results))
    for group, items in sorted(groups.items()):
        counts = summarize(items)
        suite = ET.SubElement(root, "testsuite", name=group, tests=str(counts["total"]),
                              failures=str(counts[FAILED]), skipped=str(counts[SKIPPED]), errors="0",
                              time="%.3f" % sum(float(r.get("duration", 0)) for r in items),
                              timestamp=meta.get("generated", ""))
        for result in items:
            name = result["name"] + (" [%s]" % result["host"] if result.get("host") else "")
            case = ET.SubElement(suite, "testcase", classname="clusterdos.%s" % group, name=name,
                                 time="%.3f" % float(result.get("duration", 0)))
            detail = result.get("detail", "")
            if result["status"] == FAILED:
                ET.SubElement(case, "failure", message=detail[:500], type="CheckFailed").text = detail
            elif result["status"] == SKIPPED:
                ET.SubElement(case, "skipped", message=detail[:500])
            else:
                ET.SubElement(case, "system-out").text = detail
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _host_status(results: List[Dict[str, Any]], host: str) -> str:
    """Red when a failed check blames the host (a host-local check on it, or a detail
    naming it); green when checks passed; grey when nothing ran."""
    named = re.compile(r"(^|[\s,;(])%s([:\s,;)/]|$)" % re.escape(host))
    for result in results:
        if result.get("status") != FAILED:
            continue
        local = result.get("group") == "hardware" and result.get("host") == host
        if local or named.search(result.get("detail", "")):
            return FAILED
    return PASSED if any(r.get("status") == PASSED for r in results) else SKIPPED


_BOX_W, _BOX_H, _GAP, _PER_ROW = 150, 96, 20, 6
# One line per note under the GPUs; a note longer than the box shows whole on hover.
_NOTE_H, _NOTE_CHARS = 13, 30


def node_notes(results: List[Dict[str, Any]]) -> Dict[str, List[str]]:
    """{node: [note, ...]} from the passed checks' data["node_notes"] ({node: text}): what a
    check found on each node, such as "ZooKeeper leader" or "ClusterD master (leading)"."""
    notes: Dict[str, List[str]] = {}
    for result in _sorted(results):
        if result.get("status") != PASSED:
            continue
        found = (result.get("data") or {}).get("node_notes") or {}
        if not isinstance(found, dict):
            continue
        for node, text in sorted(found.items()):
            if str(text) not in notes.setdefault(str(node), []):
                notes[str(node)].append(str(text))
    return notes


def _rows(nodes: List[Dict[str, Any]], top: int, box_h: int = _BOX_H) -> Tuple[List[Tuple[Dict[str, Any], int, int]], int]:
    """Place nodes left to right, 6 per row, from y=top; return the places and the bottom."""
    placed = []
    for index, node in enumerate(nodes):
        row, col = divmod(index, _PER_ROW)
        placed.append((node, 30 + col * (_BOX_W + _GAP), top + row * (box_h + 24)))
    rows = (len(nodes) - 1) // _PER_ROW + 1 if nodes else 0
    return placed, top + rows * (box_h + 24)


def _node_svg(node: Dict[str, Any], x: int, y: int, status: str, notes: Optional[List[str]] = None,
              box_h: int = _BOX_H) -> List[str]:
    out = ['<g class="node %s" data-node="%s">' % (status, escape(node["name"]))]
    out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="%s" stroke="%s" stroke-width="3"/>'
               % (x, y, _BOX_W, box_h, FILLS[status], COLORS[status]))
    out.append('<text x="%d" y="%d" font-size="14" font-weight="bold" fill="#202124">%s</text>'
               % (x + 10, y + 22, escape(node["name"])))
    out.append('<text x="%d" y="%d" font-size="11" fill="#3c4043">%s</text>'
               % (x + 10, y + 38, escape("%s %s" % (node.get("kind") or "worker", node.get("address") or ""))))
    roles = ", ".join(node.get("roles") or [])
    if roles:
        out.append('<text x="%d" y="%d" font-size="9" fill="#5f6368">%s</text>' % (x + 10, y + 52, escape(roles[:32])))
    gpus = sum(int(v) for v in (node.get("gpus") or {}).values())
    for g in range(min(gpus, 8)):
        out.append('<rect x="%d" y="%d" width="13" height="16" rx="2" fill="#76b900" stroke="#3c4043" '
                   'stroke-width="0.5"><title>GPU %d</title></rect>' % (x + 10 + g * 16, y + 60, g))
    if gpus:
        vendors = ", ".join(sorted(k.split(".")[0] for k in (node.get("gpus") or {})))
        out.append('<text x="%d" y="%d" font-size="10" fill="#202124">%d GPU%s (%s)</text>'
                   % (x + 10, y + 90, gpus, "" if gpus == 1 else "s", escape(vendors)))
    for i, note in enumerate(notes or []):
        short = note if len(note) <= _NOTE_CHARS else note[:_NOTE_CHARS - 1] + "\u2026"
        out.append('<text class="note" x="%d" y="%d" font-size="10" fill="#1a73e8">%s<title>%s</title></text>'
                   % (x + 10, y + _BOX_H + 4 + i * _NOTE_H, escape(short), escape(note)))
    out.append("</g>")
    return out


def topology_svg(topology: Dict[str, Any], results: List[Dict[str, Any]]) -> str:
    """Login and service nodes above the networks, workers below; each node wired to each network."""
    nodes = topology.get("nodes", [])
    networks = topology.get("networks", []) or [{"name": "cluster network", "cidr": ""}]
    notes = node_notes(results)
    # Every box is as tall as the node with the most notes needs.
    box_h = _BOX_H + _NOTE_H * max([len(notes.get(n["name"], [])) for n in nodes] + [0])
    upper = [n for n in nodes if n.get("kind") in ("login", "service")]
    upper.sort(key=lambda n: KINDS.index(n["kind"]))
    lower = [n for n in nodes if n not in upper]
    top_placed, bus_top = _rows(upper, 20, box_h)
    bus_top = bus_top + 10 if upper else 20
    bus_y = [bus_top + 20 + 34 * i for i in range(len(networks))]
    low_placed, bottom = _rows(lower, bus_y[-1] + 30, box_h)
    width = 30 + _PER_ROW * (_BOX_W + _GAP) + 10
    height = max(bottom, bus_y[-1] + 30) + 10
    out = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="cluster topology" '
           'width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif">' % (width, height, width, height)]
    out.append("<title>%s</title>" % escape("Topology of %s" % (topology.get("cluster") or "the cluster")))

    def wired(node: Dict[str, Any], net: Dict[str, Any]) -> bool:
        return not net.get("members") or node["name"] in net["members"]

    # Wires first, so boxes and buses draw over them.
    for node, x, y in top_placed:
        for i, by in enumerate(bus_y):
            if not wired(node, networks[i]):
                continue
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9aa0a6" stroke-width="1.5"/>'
                       % (x + 60 + 10 * i, y + box_h, x + 60 + 10 * i, by))
    for node, x, y in low_placed:
        for i, by in enumerate(bus_y):
            if not wired(node, networks[i]):
                continue
            out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#9aa0a6" stroke-width="1.5"/>'
                       % (x + 60 + 10 * i, by, x + 60 + 10 * i, y))
    for net, by in zip(networks, bus_y):
        out.append('<line x1="20" y1="%d" x2="%d" y2="%d" stroke="#1a73e8" stroke-width="4"/>' % (by, width - 20, by))
        out.append('<text x="%d" y="%d" font-size="12" fill="#1a73e8" text-anchor="end">%s</text>' % (
            width - 24, by - 6, escape(("%s %s" % (net.get("name", ""), net.get("cidr", ""))).strip())))
    for node, x, y in top_placed + low_placed:
        out.extend(_node_svg(node, x, y, _host_status(results, node["name"]), notes.get(node["name"]), box_h))
    out.append("</svg>")
    return "\n".join(out)


_CSS = """
body{font-family:sans-serif;margin:24px;color:#202124;background:#fff}
h1{font-size:22px;margin:0 0 4px} .meta{color:#5f6368;margin-bottom:16px}
.badge{display:inline-block;padding:6px 14px;border-radius:16px;color:#fff;font-weight:bold;margin-right:8px}
.badge.passed{background:#1e8e3e} .badge.failed{background:#d93025} .badge.skipped{background:#80868b}
#summary{padding:8px;border-radius:8px;border:3px solid #1e8e3e} #summary.overall-failed{border-color:#d93025}
table{border-collapse:collapse;width:100%;margin-top:16px;font-size:13px}
th,td{border-bottom:1px solid #dadce0;padding:6px 8px;text-align:left;vertical-align:top}
tr.passed td{background:#e6f4ea} tr.failed td{background:#fce8e6} tr.skipped td{background:#f1f3f4}
td.status{font-weight:bold;color:#fff} tr.passed td.status{background:#1e8e3e}
tr.failed td.status{background:#d93025} tr.skipped td.status{background:#80868b}
td.detail{white-space:pre-wrap;font-family:monospace}
svg{border:1px solid #dadce0;border-radius:8px;margin-top:8px;max-width:100%;height:auto}
"""


# What the add-on stage did to each release (its __addons_progress list), drawn as a table.
_ACTION_CLASS = {"installed": "passed", "upgraded": "passed", "uninstalled": "skipped", "unchanged": "skipped",
                 "absent": "skipped"}


def releases_html(releases: List[Dict[str, Any]]) -> List[str]:
    """The add-on releases table: each release's action (installed, upgraded, unchanged, uninstalled) and time."""
    if not releases:
        return []
    total = sum(float(r.get("seconds") or 0) for r in releases)
    counts: Dict[str, int] = {}
    for r in releases:
        counts[str(r.get("action", ""))] = counts.get(str(r.get("action", "")), 0) + 1
    rows = []
    for r in releases:
        action = str(r.get("action", ""))
        rows.append('<tr class="%s" data-release="%s"><td>%s</td><td>%s</td><td>%s</td><td class="action">%s</td>'
                    '<td>%.1f s</td><td>%s</td></tr>' % (
                        _ACTION_CLASS.get(action, "failed"), escape(str(r.get("release", ""))), escape(str(r.get("name", ""))),
                        escape(str(r.get("release", ""))), escape(str(r.get("chart", ""))), escape(action),
                        float(r.get("seconds") or 0), escape(str(r.get("revision", "")))))
    return [
        "<h2>Add-on releases</h2>",
        '<div class="meta">%d releases in %.1f s: %s</div>' % (
            len(releases), total, ", ".join("%d %s" % (n, a) for a, n in sorted(counts.items()))),
        '<table id="releases"><thead><tr><th>Add-on</th><th>Release</th><th>Chart</th><th>Action</th><th>Time</th>'
        "<th>Revision</th></tr></thead><tbody>",
        "\n".join(rows),
        "</tbody></table>",
    ]


def to_html(results: List[Dict[str, Any]], topology: Dict[str, Any], meta: Dict[str, Any]) -> str:
    totals = summarize(results)
    title = "clusterdOS validation: %s" % (meta.get("cluster") or "cluster")
    overall = FAILED if totals[FAILED] else PASSED
    rows = []
    for r in _sorted(results):
        status = r.get("status", SKIPPED) if r.get("status") in COLORS else SKIPPED
        rows.append('<tr class="%s"><td class="status">%s</td><td>%s</td><td>%s</td><td>%.2f s</td>'
                    '<td class="detail">%s</td></tr>' % (
                        status, escape(status), escape(r.get("name", "")), escape(r.get("host", "")),
                        float(r.get("duration", 0)), escape(r.get("detail", ""))))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>%s</title>" % escape(title),
        "<style>%s</style></head><body>" % _CSS,
        '<h1>%s</h1>' % escape(title),
        '<div class="meta">Generated %s</div>' % escape(meta.get("generated", "")),
        '<div id="summary" class="overall-%s">' % overall,
        '<span class="badge passed">%d passed</span>' % totals[PASSED],
        '<span class="badge failed">%d failed</span>' % totals[FAILED],
        '<span class="badge skipped">%d skipped</span>' % totals[SKIPPED],
        "</div>",
        "<h2>Topology</h2>",
        topology_svg(topology, results),
        "<h2>Checks</h2>",
        '<table id="checks"><thead><tr><th>Status</th><th>Check</th><th>Host</th><th>Duration</th>'
        "<th>Detail</th></tr></thead><tbody>",
        "\n".join(rows),
        "</tbody></table>",
    ] + releases_html(meta.get("releases") or []) + [
        "</body></html>",
        "",
    ])


def _junit(results: List[Dict[str, Any]], _topology: Dict[str, Any], meta: Dict[str, Any]) -> str:
    return to_junit(results, meta)


WRITERS = {
    "json": ("validation.json", to_json),
    "junit": ("validation-junit.xml", _junit),
    "html": ("validation.html", to_html),
}


def render(formats: List[str], results: List[Dict[str, Any]], topology: Dict[str, Any],
           meta: Dict[str, Any]) -> Dict[str, Tuple[str, str]]:
    """{format: (file name, text)} for each requested format."""
    return {fmt: (WRITERS[fmt][0], WRITERS[fmt][1](results, topology, meta)) for fmt in formats}
