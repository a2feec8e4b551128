"""Shared by this scenario's test files: the lab's inventory and members, a testinfra host
per member, and the collection's playbooks run against the lab as a site runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
INVENTORY = EPHEMERAL / "inventory"
LAB = yaml.safe_load((INVENTORY / "clusterdos_lab.yml").read_text())["all"]
MEMBERS = sorted(LAB["children"]["kube_control_plane"]["hosts"])


def host(name):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(INVENTORY))


def run_playbook(name: str, extra: dict | None = None) -> subprocess.CompletedProcess:
    """playbooks/NAME on molecule's inventory (the scenario's variables), as the converge runs
    it (molecule/_shared/lab_playbook.py), one line per result (molecule's yaml result format
    folds long messages)."""
    args = ["-e", json.dumps(extra)] if extra else []
    return lab_playbook.run(name, *args, inventories=[INVENTORY], env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"},
                            timeout=900)


def tail(run: subprocess.CompletedProcess) -> str:
    return run.stdout[-5000:] + run.stderr[-2000:]


def kubectl_json(*args):
    out = host(MEMBERS[0]).run("kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s "
                               + " ".join(args) + " -o json")
    assert out.rc == 0, out.stderr
    return json.loads(out.stdout)


def wait_until(what: str, predicate, timeout: float = 300, interval: float = 5):
    deadline = time.monotonic() + timeout
    while True:
        seen = predicate()
        if seen is True:
            return
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s; last seen: {seen}"
        time.sleep(interval)


def node_ready(name: str):
    """True when the node is Ready, else its Ready condition as the API has it."""
    node = kubectl_json("get", "node", name)
    ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
    return True if ready["status"] == "True" else f"{ready['status']} ({ready.get('reason')})"


def system_pods_ready():
    """True when every kube-system pod (each member's four control-plane pods among them) is Ready."""
    pods = kubectl_json("get", "pods", "-n", "kube-system")["items"]
    control_plane = [p for p in pods if p["metadata"].get("labels", {}).get("tier") == "control-plane"]
    waiting = sorted(p["metadata"]["name"] for p in pods
                     if not any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))
    return True if len(control_plane) == 4 * len(MEMBERS) and not waiting else f"{len(pods)} pods, not ready: {waiting}"


# What the running haproxy balances over (not what its configuration file says): its current
# worker asked through the master socket Debian's unit opens (haproxy -S), so a reload that
# did not load the written configuration shows.
HAPROXY_SERVERS = r"""
import socket
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect("/run/haproxy-master.sock")
s.sendall(b"@1 show servers state kube-apiservers\n")
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
print(out.decode())
"""


def haproxy_servers(name: str) -> list[str]:
    """The API servers the running haproxy of member ``name`` balances over (sorted names)."""
    out = host(name).run(f"timeout 20 python3 -c '{HAPROXY_SERVERS}'")
    assert out.rc == 0, (name, out.stdout, out.stderr)
    rows = [line.split() for line in out.stdout.splitlines() if " kube-apiservers " in line and line[:1].isdigit()]
    assert rows, (name, out.stdout)
    return sorted(row[3] for row in rows)


# etcd's members as the first member's etcd has them (its JSON gateway, the API server's
# etcd client certificate): the etcd image here has no etcdctl.
ETCD_MEMBERS = r"""
import json, ssl, urllib.request
ctx = ssl.create_default_context(cafile="/etc/kubernetes/pki/etcd/ca.crt")
ctx.load_cert_chain("/etc/kubernetes/pki/apiserver-etcd-client.crt", "/etc/kubernetes/pki/apiserver-etcd-client.key")
req = urllib.request.Request("https://127.0.0.1:2379/v3/cluster/member/list", data=b"{}", method="POST")
print(json.dumps(json.load(urllib.request.urlopen(req, context=ctx, timeout=20))["members"]))
"""


def etcd_members() -> list[str]:
    """The names of etcd's members (sorted); a member not started yet shows with its peer URL."""
    out = host(MEMBERS[0]).run(f"timeout 30 python3 -c '{ETCD_MEMBERS}'")
    assert out.rc == 0, (out.stdout, out.stderr)
    return sorted(m.get("name") or ",".join(m.get("peerURLs", [])) for m in json.loads(out.stdout))
