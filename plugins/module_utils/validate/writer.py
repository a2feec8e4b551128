# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The cluster_report module's argument spec and body: render and write the files."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Dict, List, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.text_file import write_text
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import STATUSES, summarize
from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.report import render


def argument_spec() -> Dict[str, Any]:
    return dict(
        results=dict(type="list", elements="dict", required=True),
        nodes=dict(type="list", elements="dict", default=[]),
        networks=dict(type="list", elements="dict", default=[]),
        cluster_name=dict(type="str", default="cluster"),
        generated=dict(type="str"),
        dest=dict(type="path", required=True),
        formats=dict(type="list", elements="str", choices=["json", "junit", "html"], default=["json", "junit", "html"]),
        mode=dict(type="raw", default="0644"),
        releases=dict(type="list", elements="dict", default=[]),
    )


def normalize(results: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Results with every field present, and the problems found in malformed entries."""
    clean, problems = [], []
    for index, result in enumerate(results):
        if not result.get("name") or result.get("status") not in STATUSES:
            problems.append("result %d has no name or an unknown status (%r)" % (index, result.get("status")))
            continue
        clean.append({
            "name": str(result["name"]), "group": str(result.get("group") or str(result["name"]).split(".", maxsplit=1)[0]),
            "status": result["status"], "detail": str(result.get("detail", "")),
            "duration": float(result.get("duration") or 0), "host": str(result.get("host") or ""),
            "data": result.get("data") or {},
        })
    return clean, problems


def write_report(module: Any) -> Tuple[bool, Dict[str, str], Dict[str, int]]:
    params = module.params
    results, problems = normalize(params["results"])
    if problems:
        module.fail_json(msg="results must come from cluster_validate: %s" % "; ".join(problems))
    meta = {"cluster": params["cluster_name"],
            "generated": params["generated"] or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "releases": params["releases"]}
    topology = {"cluster": params["cluster_name"], "nodes": params["nodes"], "networks": params["networks"]}
    dest = params["dest"]
    changed = False
    files: Dict[str, str] = {}
    for fmt, (name, text) in render(params["formats"], results, topology, meta).items():
        path = os.path.join(dest, name)
        files[fmt] = path
        changed = write_text(module, path, text)[0] or changed
    for path in files.values():
        if os.path.exists(path):
            file_args = module.load_file_common_arguments({"path": path, "mode": params["mode"]})
            changed = module.set_fs_attributes_if_different(file_args, changed)
    return changed, files, summarize(results)
