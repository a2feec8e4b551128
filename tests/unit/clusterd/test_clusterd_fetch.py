"""The script the ClusterD checks run on a master (python3 -c) to read /master/state,
run for real here against local HTTP servers: it follows a non-leader's redirect to the
leader (Mesos sends a scheme-relative Location), prints the body, and exits non-zero with
a one-line reason (no traceback) on an HTTP error or a refused connection."""

import http.server
import socket
import subprocess
import sys
import threading

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.clusterd import _FETCH


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def servers():
    leader_port = _free_port()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.server.role == "follower" and self.path == "/master/state":
                self.send_response(307)
                self.send_header("Location", "//127.0.0.1:%d/master/state" % leader_port)
                self.end_headers()
            elif self.server.role == "leader" and self.path == "/master/state":
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b'{"leader": "master@127.0.0.1"}')
            else:
                self.send_response(404)
                self.end_headers()

        def log_message(self, *args):
            pass

    started = []
    for role, port in (("leader", leader_port), ("follower", 0)):
        srv = http.server.HTTPServer(("127.0.0.1", port), Handler)
        srv.role = role
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        started.append(srv)
    yield {s.role: s.server_address[1] for s in started}
    for srv in started:
        srv.shutdown()


def _fetch(url):
    return subprocess.run([sys.executable, "-c", _FETCH, url], capture_output=True, text=True, timeout=60)


def test_follows_redirect_to_leader(servers):
    res = _fetch("http://127.0.0.1:%d/master/state" % servers["follower"])
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == '{"leader": "master@127.0.0.1"}'


def test_http_error_is_one_line(servers):
    res = _fetch("http://127.0.0.1:%d/nothing" % servers["leader"])
    assert res.returncode == 1
    assert res.stderr.strip() == "HTTP 404 from http://127.0.0.1:%d/nothing" % servers["leader"]


def test_refused_connection_is_one_line():
    port = _free_port()
    res = _fetch("http://127.0.0.1:%d/master/state" % port)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "Connection refused" in res.stderr
