# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The cluster_report module's argument spec and body: render and write the files."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

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
        stats=dict(type="str", default=""),
    )


def custom_stats(params: Dict[str, Any], files: Dict[str, str], summary: Dict[str, int]) -> Dict[str, Any]:
    """The task result's ansible_stats (what set_stats returns) handing the report to AWX as
    the job's artifact params["stats"]: the summary, the files, the failed checks, every
    check and the add-on releases."""
    results = params["results"]
    return {"data": {params["stats"]: {"summary": summary, "files": files,
                                       "failed": [r for r in results if r.get("status") == "failed"],
                                       "checks": results, "releases": params["releases"]}},
            "per_host": False, "aggregate": False}


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


def _outcome(results: List[Dict[str, Any]]) -> List[Tuple[str, str, str]]:
    """What a report says about the cluster: each check's status on each host."""
    return sorted((str(r.get("name")), str(r.get("host") or ""), str(r.get("status"))) for r in results)


def _previous_outcome(path: str) -> Optional[List[Tuple[str, str, str]]]:
    """The outcome recorded in an earlier JSON report at PATH, None when there is none to read."""
    try:
        with open(path, encoding="utf-8") as handle:
            checks = json.load(handle).get("checks")
    except (OSError, ValueError, AttributeError):
        return None
    return _outcome(checks) if isinstance(checks, list) else None


def write_report(module: Any) -> Tuple[bool, Dict[str, str], Dict[str, int]]:
    """Write the report files; changed is whether the report says something new.

    Every run rewrites the files (the time and the checks' durations are the run's own),
    but that alone is not a change: changed is true when a check's status on a host
    differs from the last JSON report, a check appears or goes, a file is created, or a
    file's mode is set. Without a JSON report to compare with, any file written counts.
    """
    params = module.params
    results, problems = normalize(params["results"])
    if problems:
        module.fail_json(msg="results must come from cluster_validate: %s" % "; ".join(problems))
    meta = {"cluster": params["cluster_name"],
            "generated": params["generated"] or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "releases": params["releases"]}
    topology = {"cluster": params["cluster_name"], "nodes": params["nodes"], "networks": params["networks"]}
    dest = params["dest"]
    rendered = render(params["formats"], results, topology, meta)
    previous = _previous_outcome(os.path.join(dest, rendered["json"][0])) if "json" in rendered else None
    written = created = False
    files: Dict[str, str] = {}
    for fmt, (name, text) in rendered.items():
        path = os.path.join(dest, name)
        files[fmt] = path
        wrote, before = write_text(module, path, text)
        written = written or wrote
        created = created or before is None
    changed = (created or previous != _outcome(results)) if previous is not None else written
    for path in files.values():
        if os.path.exists(path):
            file_args = module.load_file_common_arguments({"path": path, "mode": params["mode"]})
            changed = module.set_fs_attributes_if_different(file_args, changed)
    return changed, files, summarize(results)
