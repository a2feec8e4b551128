"""Three control planes behind node-local haproxy (kubernetes_cluster_endpoint_mode:
local_haproxy), built by site.yml: every member is a Ready control plane with its own
etcd, admin clients on every node reach the API through 127.0.0.1:8443, with one member's
host stopped the API still answers and accepts writes through the other two, and the
stopped member comes back on its own."""

from __future__ import annotations

import datetime
import json
import subprocess
import time

import pytest
from conftest import LAB, MEMBERS, haproxy_servers, host

LAB_NAME = LAB["vars"]["clusterdos_lab"]["name"]


def kubectl(name, *args):
    return host(name).run("kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s " + " ".join(args))


def test_three_ready_control_planes_each_with_etcd_and_an_api_server():
    out = kubectl(MEMBERS[0], "get", "nodes", "-o", "json")
    assert out.rc == 0, out.stderr
    nodes = {n["metadata"]["name"]: n for n in json.loads(out.stdout)["items"]}
    assert sorted(nodes) == MEMBERS
    for name, node in nodes.items():
        assert "node-role.kubernetes.io/control-plane" in node["metadata"]["labels"], name
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        assert ready["status"] == "True", (name, ready)
    pods = json.loads(kubectl(MEMBERS[0], "get", "pods", "-n", "kube-system", "-l", "tier=control-plane", "-o", "json").stdout)
    running = {(p["metadata"]["labels"]["component"], p["spec"]["nodeName"]) for p in pods["items"]
               if p["status"].get("phase") == "Running"}
    for member in MEMBERS:
        assert ("etcd", member) in running and ("kube-apiserver", member) in running, member


def test_every_node_talks_to_the_api_through_its_local_haproxy():
    for member in MEMBERS:
        h = host(member)
        assert h.service("haproxy").is_running
        assert h.socket("tcp://127.0.0.1:8443").is_listening
        # Admin clients go through the local haproxy; a control plane's kubelet talks to its
        # own API server (kubeadm's control-plane kubelet local mode), so it never
        # depends on the load balancer.
        assert "server: https://127.0.0.1:8443" in h.file("/etc/kubernetes/admin.conf").content_string
        address = LAB["hosts"][member]["clusterdos_node_ip"]
        assert f"server: https://{address}:6443" in h.file("/etc/kubernetes/kubelet.conf").content_string
        cfg = h.file("/etc/haproxy/haproxy.cfg").content_string
        for other in MEMBERS:
            assert f"server {other} " in cfg, (member, other)
        assert haproxy_servers(member) == MEMBERS, member
        # In the inventory's order, the same file on every run (a set in between made the order,
        # and so the file, change from run to run: a re-converge then reloaded haproxy).
        listed = [line.split()[1] for line in cfg.splitlines() if line.strip().startswith("server ")]
        assert listed == list(LAB["children"]["kube_control_plane"]["hosts"]), (member, listed)


def booted(name) -> bool:
    """The host answers over SSH and systemd has finished starting it."""
    try:
        state = host(name).run("systemctl is-system-running --wait").stdout.strip()
    except RuntimeError:  # testinfra raises when ssh itself fails (sshd not up yet)
        return False
    return state in ("running", "degraded")


@pytest.fixture
def first_member_stopped():
    """Stop the first member's lab host (its container); start it again afterwards and
    wait (a bound, not a timed assertion) until it answers over SSH and has booted, so the
    tests after this one reach it."""
    container = f"cdl-{LAB_NAME}-{MEMBERS[0]}"
    subprocess.run(["podman", "stop", "-t", "5", container], check=True, capture_output=True)
    try:
        yield MEMBERS[0]
    finally:
        subprocess.run(["podman", "start", container], check=True, capture_output=True)
        deadline = time.monotonic() + 300
        while not booted(MEMBERS[0]):
            assert time.monotonic() < deadline, f"{MEMBERS[0]} did not boot within 300 s of podman start"
            time.sleep(5)


def test_the_api_answers_and_accepts_writes_with_one_member_down(first_member_stopped):
    survivor = MEMBERS[1]
    probe = f"ha-probe-{int(time.time())}"
    deadline = time.monotonic() + 180
    while True:
        res = kubectl(survivor, "create", "configmap", probe, "-n", "default",
                      "--from-literal=written-while=" + first_member_stopped + "-down", "--dry-run=none")
        # A retried create may have landed the first time (its answer lost).
        if res.rc == 0 or "already exists" in res.stderr:
            break
        assert time.monotonic() < deadline, res.stderr
        time.sleep(5)
    for member in MEMBERS[1:]:
        while True:
            got = kubectl(member, "get", "configmap", probe, "-n", "default", "-o", "jsonpath={.data.written-while}")
            if got.rc == 0:
                break
            assert time.monotonic() < deadline, (member, got.stderr)
            time.sleep(5)
        assert got.stdout == f"{first_member_stopped}-down", member
    # A request the local haproxy sent to the stopped member before its health check
    # marked it down fails (kubectl -o json then prints an empty List): retry, as the
    # write above does, and require a clean answer.
    while True:
        listed = kubectl(survivor, "get", "nodes", "-o", "json")
        if listed.rc == 0:
            break
        assert time.monotonic() < deadline, listed.stderr
        time.sleep(5)
    nodes = json.loads(listed.stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == MEMBERS
    kubectl(survivor, "delete", "configmap", probe, "-n", "default")


def test_the_stopped_member_comes_back():
    """Started again, the first member's kubelet brings its static pods back: its own API
    server (asked directly, not through haproxy) is ready, which includes its own etcd
    member having caught up, and its kubelet renews its node lease again."""
    member = MEMBERS[0]
    address = LAB["hosts"][member]["clusterdos_node_ip"]
    since = datetime.datetime.now(datetime.timezone.utc)
    deadline = time.monotonic() + 600
    while True:
        own = kubectl(member, f"--server=https://{address}:6443", "get", "--raw", "/readyz")
        lease = kubectl(MEMBERS[1], "get", "lease", "-n", "kube-node-lease", member, "-o", "jsonpath={.spec.renewTime}")
        renewed = lease.rc == 0 and lease.stdout and datetime.datetime.fromisoformat(lease.stdout.replace("Z", "+00:00")) > since
        if own.rc == 0 and own.stdout.strip() == "ok" and renewed:
            break
        assert time.monotonic() < deadline, (own.stdout, own.stderr, lease.stdout, lease.stderr)
        time.sleep(10)
    etcd = kubectl(member, f"--server=https://{address}:6443", "get", "--raw", "/livez/etcd")
    assert etcd.rc == 0 and etcd.stdout.strip() == "ok", etcd.stderr
