"""Stand-ins for the outside world of the validation checks.

RecordedApiServer answers kubectl and helm argv lists from a JSON file of API objects
(the shape `kubectl get -o json` returns). No Kubernetes API server can run on the CI
machine, so every test that uses it says "recorded API" in its name. It answers only
the argv the checks are meant to send: any other call fails the test.

RecordedCommands answers other commands (sinfo, scontrol, srun, sacct, nvidia-smi,
rocm-smi, ibstat) from recorded outputs keyed by the exact argv.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import CmdResult

FIXTURES = Path(__file__).parent / "fixtures"


def _set(doc: Any, path: str, value: Any) -> None:
    """Set a path of keys joined by ">" (list items by index, name=<metadata.name> or type=<type>)."""
    parts = path.split(">")
    for part in parts[:-1]:
        doc = _step(doc, part)
    last = parts[-1]
    if isinstance(doc, list):
        doc[int(last)] = value
    elif value is None:
        doc.pop(last, None)
    else:
        doc[last] = value


def _step(doc: Any, part: str) -> Any:
    if isinstance(doc, list):
        if part.startswith("name="):
            return next(item for item in doc if item["metadata"]["name"] == part[5:])
        if part.startswith("type="):
            return next(item for item in doc if item["type"] == part[5:])
        return doc[int(part)]
    return doc.setdefault(part, {})


def load_cluster(name: str, patch: dict | None = None) -> dict:
    cluster = json.loads((FIXTURES / "kubernetes" / name).read_text())
    cluster = copy.deepcopy(cluster)
    for path, value in (patch or {}).items():
        _set(cluster, path, value)
    return cluster


def _matches(obj: dict, selector: str | None) -> bool:
    if not selector:
        return True
    labels = obj["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in (term.split("=", 1) for term in selector.split(",")))


class RecordedApiServer:
    """Answers kubectl/helm argv from recorded API objects; logs every call."""

    def __init__(self, cluster: dict, kubeconfig: str | None = None) -> None:
        self.cluster = cluster
        self.kubeconfig = kubeconfig
        self.calls: list[list[str]] = []
        self.applied: list[dict] = []
        self.deleted: list[tuple[str, str]] = []

    def __call__(self, argv: list[str], data: str | None = None, timeout: int | None = None) -> CmdResult:
        self.calls.append(list(argv))
        tool, rest = argv[0], list(argv[1:])
        if self.kubeconfig:
            assert rest[:2] == ["--kubeconfig", self.kubeconfig], argv
            rest = rest[2:]
        if self.cluster.get("unreachable"):
            return CmdResult(1, "", self.cluster["unreachable"])
        if tool == "helm":
            assert rest == ["list", "--all-namespaces", "--all", "-o", "json"], argv
            return CmdResult(0, json.dumps(self.cluster.get("helm_releases", [])), "")
        assert tool == "kubectl" and rest[0] == "--request-timeout=30s", argv
        return self._kubectl(rest[1:], data)

    def _kubectl(self, args: list[str], data: str | None) -> CmdResult:
        verb = args[0]
        if args == ["version", "-o", "json"]:
            return CmdResult(0, json.dumps(self.cluster["version"]), "")
        if args == ["get", "--raw", "/readyz?verbose"]:
            text = self.cluster["readyz"]
            return CmdResult(1 if "[-]" in text else 0, text, "")
        if args == ["top", "nodes", "--no-headers"]:
            if "top_error" in self.cluster:
                return CmdResult(1, "", self.cluster["top_error"])
            return CmdResult(0, self.cluster["top_nodes"], "")
        if verb == "get":
            return self._get(args[1:])
        if verb == "apply":
            assert args == ["apply", "--validate=false", "-f", "-"] and data, args
            self.applied.append(json.loads(data))
            return CmdResult(0, "created\n", "")
        if verb == "delete":
            assert "--ignore-not-found" in args and "-n" in args, args
            self.deleted.append((args[1], args[2]))
            return CmdResult(0, "", "")
        if verb == "wait":
            name = args[1].split("/", 1)[1]
            assert args[4] == "--for=jsonpath={.status.phase}=Succeeded", args
            assert any(o["metadata"]["name"] == name for o in self.applied), "wait before apply: %s" % name
            outcome = self.cluster.get("pod_outcomes", {}).get(name)
            if outcome and outcome["phase"] == "Succeeded":
                return CmdResult(0, "pod/%s condition met\n" % name, "")
            return CmdResult(1, "", "error: timed out waiting for the condition on pods/%s" % name)
        if verb == "logs":
            name = args[1].split("/", 1)[1]
            outcome = self.cluster.get("pod_outcomes", {}).get(name, {})
            return CmdResult(0, outcome.get("log", ""), "")
        raise AssertionError("unexpected kubectl call: %s" % args)

    def _get(self, args: list[str]) -> CmdResult:
        resource = args[0]
        if resource == "pod" and len(args) == 6:  # get pod NAME -n NS -o json
            outcome = self.cluster.get("pod_outcomes", {}).get(args[1], {})
            return CmdResult(0, json.dumps({"spec": {"nodeName": outcome.get("node", "")},
                                            "status": outcome.get("status", {"phase": outcome.get("phase", "Pending")})}), "")
        if resource == "events":  # get events -n NS --field-selector involvedObject...name=NAME,type=Warning -o json
            assert args[3] == "--field-selector" and args[5:] == ["-o", "json"], args
            name = args[4].split("involvedObject.name=", 1)[1].split(",", 1)[0]
            events = self.cluster.get("pod_outcomes", {}).get(name, {}).get("events", [])
            return CmdResult(0, json.dumps({"items": events}), "")
        objects = self.cluster["objects"].get(resource, [])
        rest = args[1:]
        namespace = None
        selector = None
        if rest[:1] == ["-n"]:
            namespace, rest = rest[1], rest[2:]
        elif rest[:1] == ["--all-namespaces"]:
            rest = rest[1:]
        if rest[:1] == ["-l"]:
            selector, rest = rest[1], rest[2:]
        assert rest == ["-o", "json"], args
        items = [o for o in objects if (namespace is None or o["metadata"].get("namespace") == namespace)
                 and _matches(o, selector)]
        return CmdResult(0, json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), "")


class RecordedCommands:
    """Answers argv lists from recorded outputs: {argv as a space-joined string: {rc, out, err}}."""

    def __init__(self, recorded: dict[str, dict]) -> None:
        self.recorded = recorded
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str], data: str | None = None, timeout: int | None = None) -> CmdResult:
        self.calls.append(list(argv))
        key = " ".join(argv)
        assert key in self.recorded, "no recorded output for: %s" % key
        entry = self.recorded[key]
        out = entry.get("out", "")
        if "out_file" in entry:
            out = (FIXTURES / entry["out_file"]).read_text()
        return CmdResult(entry.get("rc", 0), out, entry.get("err", ""))


def load_cases(name: str) -> list[Any]:
    cases = yaml.safe_load((FIXTURES / name).read_text())["cases"]
    return [pytest.param(case, id=case["id"]) for case in cases]
