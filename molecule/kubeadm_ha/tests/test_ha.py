"""Three control planes behind node-local haproxy (kubernetes_cluster_endpoint_mode:
local_haproxy), built by site.yml: every member is a Ready control plane with its own
etcd, every node reaches the API through 127.0.0.1:8443, and with one member's host
stopped the API still answers and accepts writes through the other two."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import testinfra
import yaml

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
INVENTORY = EPHEMERAL / "inventory"
LAB = yaml.safe_load((INVENTORY / "clusterdos_lab.yml").read_text())["all"]
MEMBERS = sorted(LAB["children"]["kube_control_plane"]["hosts"])
LAB_NAME = LAB["vars"]["clusterdos_lab"]["name"]


def host(name):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(INVENTORY))


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
        assert "server: https://127.0.0.1:8443" in h.file("/etc/kubernetes/kubelet.conf").content_string
        cfg = h.file("/etc/haproxy/haproxy.cfg").content_string
        for other in MEMBERS:
            assert f"server {other} " in cfg, (member, other)


@pytest.fixture
def first_member_stopped():
    """Stop the first member's lab host (its container), start it again afterwards."""
    container = f"cdl-{LAB_NAME}-{MEMBERS[0]}"
    subprocess.run(["podman", "stop", "-t", "5", container], check=True, capture_output=True)
    try:
        yield MEMBERS[0]
    finally:
        subprocess.run(["podman", "start", container], check=True, capture_output=True)


def test_the_api_answers_and_accepts_writes_with_one_member_down(first_member_stopped):
    survivor = MEMBERS[1]
    deadline = time.monotonic() + 120
    while True:
        res = kubectl(survivor, "create", "configmap", "ha-probe", "-n", "default",
                      "--from-literal=written-while=" + first_member_stopped + "-down", "--dry-run=none")
        if res.rc == 0 or "AlreadyExists" in res.stderr:
            break
        assert time.monotonic() < deadline, res.stderr
        time.sleep(5)
    for member in MEMBERS[1:]:
        got = kubectl(member, "get", "configmap", "ha-probe", "-n", "default", "-o", "jsonpath={.data.written-while}")
        assert got.rc == 0 and got.stdout == f"{first_member_stopped}-down", (member, got.stderr)
    nodes = json.loads(kubectl(survivor, "get", "nodes", "-o", "json").stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == MEMBERS
    kubectl(survivor, "delete", "configmap", "ha-probe", "-n", "default")
