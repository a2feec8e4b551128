"""A stand-in for the AWX / Automation Controller REST API v2 - NOT a real AWX server.

No AWX server can run in CI, so the tests of awx/configure.yml talk to this: http.server
on 127.0.0.1 (an ephemeral port), objects in memory, the subset of the API the playbook
uses, with AWX's behaviour where the playbook depends on it:
  - Bearer-token authentication (401 without the token);
  - list endpoints filtered by exact field values ({count, next, previous, results});
  - POST creates (201), PATCH updates (200); unknown fields are refused (400) so a typo in
    the data fails the test instead of being ignored;
  - secret credential inputs are stored but read back as "$encrypted$";
  - related lists (job template credentials, workflow node success_nodes) associated and
    disassociated with POST {"id": N[, "disassociate": true]} (204);
  - survey_spec GET ({} when none), POST (200), DELETE (200);
  - projects report status "successful" at once (a real AWX syncs from git first).
Every request is recorded in `requests` (method, path) so tests can count writes.
"""

from __future__ import annotations

import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

API = "/api/v2/"

# Fields each endpoint accepts on POST/PATCH (besides name/description).
FIELDS: dict[str, set[str]] = {
    "organizations": set(),
    "credential_types": {"kind", "inputs", "injectors"},
    "credentials": {"organization", "credential_type", "inputs"},
    "projects": {"organization", "scm_type", "scm_url", "scm_branch", "scm_clean", "scm_update_on_launch",
                 "allow_override"},
    "inventories": {"organization"},
    "inventory_sources": {"inventory", "source", "source_project", "source_path", "overwrite", "overwrite_vars",
                          "update_on_launch"},
    "job_templates": {"organization", "job_type", "project", "inventory", "playbook", "survey_enabled",
                      "ask_variables_on_launch", "ask_limit_on_launch", "ask_inventory_on_launch",
                      "ask_credential_on_launch", "use_fact_cache"},
    "workflow_job_templates": {"organization", "inventory", "survey_enabled", "ask_variables_on_launch",
                               "ask_limit_on_launch", "ask_inventory_on_launch"},
    "workflow_job_template_nodes": {"identifier", "workflow_job_template", "unified_job_template"},
}
RELATED = {("job_templates", "credentials"): "credentials",
           ("workflow_job_template_nodes", "success_nodes"): "workflow_job_template_nodes"}
MACHINE_SECRETS = ["password", "ssh_key_data", "ssh_key_unlock", "become_password"]


class StandInAWX:
    """In-memory objects and the HTTP server that serves them."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.objects: dict[str, dict[int, dict[str, Any]]] = {name: {} for name in FIELDS}
        self.links: dict[tuple[str, int, str], list[int]] = {}
        self.surveys: dict[tuple[str, int], dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self._next_id = 1
        self._lock = threading.Lock()
        self._add("organizations", {"name": "Default", "description": ""})
        self._add("credential_types", {
            "name": "Machine", "description": "", "kind": "ssh", "managed": True,
            "inputs": {"fields": [{"id": "username", "type": "string"},
                                  *({"id": f, "type": "string", "secret": True} for f in MACHINE_SECRETS),
                                  {"id": "become_method", "type": "string"}]},
            "injectors": {}})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StandInAWX:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    # --- state ---
    def _add(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        obj = {"id": self._next_id, "type": kind.rstrip("s"), "url": f"{API}{kind}/{self._next_id}/", **data}
        if kind == "projects":
            obj["status"] = "successful"
        self.objects[kind][self._next_id] = obj
        self._next_id += 1
        return obj

    def find(self, endpoint: str, /, **filters: Any) -> list[dict[str, Any]]:
        """Objects of an endpoint whose fields equal the filters."""
        return [o for o in self.objects[endpoint].values() if all(o.get(k) == v for k, v in filters.items())]

    def secret_fields(self, credential_type_id: int) -> set[str]:
        ctype = self.objects["credential_types"].get(credential_type_id, {})
        return {f["id"] for f in ctype.get("inputs", {}).get("fields", []) if f.get("secret")}

    def render(self, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        if kind == "credentials":
            secrets = self.secret_fields(obj["credential_type"])
            out["inputs"] = {k: ("$encrypted$" if k in secrets else v) for k, v in obj["inputs"].items()}
        return out

    def writes(self) -> list[tuple[str, str]]:
        return [r for r in self.requests if r[0] != "GET"]

    # --- HTTP ---
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        awx = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet
                return

            def _send(self, status: int, body: Any = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"{}")

            def _dispatch(self, method: str) -> None:
                parts = urlsplit(self.path)
                with awx._lock:
                    awx.requests.append((method, parts.path))
                    if self.headers.get("Authorization") != f"Bearer {awx.token}":
                        return self._send(401, {"detail": "Authentication credentials were not provided."})
                    if not parts.path.startswith(API):
                        return self._send(404, {"detail": "Not found."})
                    segs = [s for s in parts.path[len(API):].split("/") if s]
                    query = dict(parse_qsl(parts.query))
                    try:
                        status, body = awx.route(method, segs, query, self._body() if method != "GET" else None)
                    except (KeyError, ValueError, TypeError) as err:
                        status, body = 400, {"detail": f"bad request: {err}"}
                    return self._send(status, body)

            def do_GET(self) -> None:  # noqa: N802
                self._dispatch("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._dispatch("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._dispatch("PATCH")

            def do_DELETE(self) -> None:  # noqa: N802
                self._dispatch("DELETE")

        return Handler

    def route(self, method: str, segs: list[str], query: dict[str, str], body: Any) -> tuple[int, Any]:
        kind = segs[0]
        if kind not in FIELDS:
            return 404, {"detail": "Not found."}
        if len(segs) == 1:
            if method == "GET":
                def match(o: dict[str, Any]) -> bool:
                    return all(str(o.get(k)) == v for k, v in query.items())
                results = [self.render(kind, o) for o in self.objects[kind].values() if match(o)]
                return 200, {"count": len(results), "next": None, "previous": None, "results": results}
            if method == "POST":
                self._check(kind, body)
                if kind != "workflow_job_template_nodes" and self.find(kind, name=body["name"],
                                                                        **self._scope(kind, body)):
                    return 400, {"name": ["already exists"]}
                return 201, self.render(kind, self._add(kind, {"description": "", **body}))
            return 405, {"detail": f"{method} not allowed"}
        obj = self.objects[kind].get(int(segs[1]))
        if obj is None:
            return 404, {"detail": "Not found."}
        if len(segs) == 2:
            if method == "GET":
                return 200, self.render(kind, obj)
            if method == "PATCH":
                self._check(kind, body)
                obj.update(body)
                return 200, self.render(kind, obj)
            return 405, {"detail": f"{method} not allowed"}
        sub = segs[2]
        if sub == "survey_spec" and kind in ("job_templates", "workflow_job_templates"):
            key = (kind, obj["id"])
            if method == "GET":
                return 200, self.surveys.get(key, {})
            if method == "POST":
                if not isinstance(body.get("spec"), list) or not all("variable" in q and "type" in q for q in body["spec"]):
                    return 400, {"error": "survey spec must have a list of questions with variable and type"}
                self.surveys[key] = body
                return 200, None
            if method == "DELETE":
                self.surveys.pop(key, None)
                return 200, None
        target = RELATED.get((kind, sub))
        if target:
            ids = self.links.setdefault((kind, obj["id"], sub), [])
            if method == "GET":
                results = [self.render(target, self.objects[target][i]) for i in ids]
                return 200, {"count": len(results), "next": None, "previous": None, "results": results}
            if method == "POST":
                other = int(body["id"])
                if other not in self.objects[target]:
                    return 400, {"msg": f"no {target} {other}"}
                if body.get("disassociate"):
                    ids.remove(other)
                elif other not in ids:
                    ids.append(other)
                return 204, None
        return 404, {"detail": "Not found."}

    @staticmethod
    def _scope(kind: str, body: dict[str, Any]) -> dict[str, Any]:
        if kind == "inventory_sources":
            return {"inventory": body.get("inventory")}
        if kind == "credential_types":
            return {"kind": body.get("kind")}
        return {"organization": body.get("organization")} if "organization" in body else {}

    @staticmethod
    def _check(kind: str, body: dict[str, Any]) -> None:
        unknown = set(body) - FIELDS[kind] - {"name", "description"}
        if unknown:
            raise ValueError(f"unknown fields for {kind}: {sorted(unknown)}")
        for key in ("organization", "project", "inventory", "source_project", "credential_type",
                    "workflow_job_template", "unified_job_template"):
            if key in body and not isinstance(body[key], int):
                raise ValueError(f"{key} must be an object id (got {body[key]!r})")
