#!/usr/bin/env python3
"""TEST FIXTURE, not part of any role: a stand-in Kubernetes API server.

This scenario checks the upgrade refusals without building a cluster (the kubeadm
scenarios run real API servers), so it needs only what kubectl and kubernetes.core's
k8s_info ask for to list nodes: the server version, discovery of the core group, and a
NodeList whose nodes report the kubelet versions given on the command line, over plain
HTTP. Nothing else is implemented; every other path is a 404.

    standin_apiserver.py ADDRESS PORT '{"node-name": "v1.33.4", ...}'
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NODES: dict[str, str] = json.loads(sys.argv[3])

ROUTES = {
    "/version": {"major": "1", "minor": "33", "gitVersion": "v1.33.4"},
    "/api": {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
         "verbs": ["get", "list"], "shortNames": ["no"]}]},
    "/api/v1/nodes": {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [
        {"metadata": {"name": name}, "status": {"nodeInfo": {"kubeletVersion": version}}}
        for name, version in NODES.items()]},
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = ROUTES.get(self.path.split("?")[0])
        if body is None:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), Handler).serve_forever()
