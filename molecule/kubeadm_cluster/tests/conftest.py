"""Shared helpers for the kubeadm_cluster verify tests: the lab hosts by name (from the
lab's own inventory, never from what a role wrote), kubectl on the control plane, and
ansible-playbook runs against molecule's inventory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

PROJECT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
INVENTORY = EPHEMERAL / "inventory"
LAB = yaml.safe_load((INVENTORY / "clusterdos_lab.yml").read_text())["all"]
CONTROL_PLANES = sorted(LAB["children"]["kube_control_plane"]["hosts"])
WORKERS = sorted(LAB["children"]["kube_node"]["hosts"])
GROUP_VARS = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["inventory"]["group_vars"]
TEST_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"


def lab_host(name: str):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(INVENTORY))


@pytest.fixture(scope="session")
def cp():
    return lab_host(CONTROL_PLANES[0])


class Kubectl:
    """kubectl with the admin kubeconfig, run on the first control plane."""

    def __init__(self, host):
        self.host = host

    def run(self, *args: str, stdin: str | None = None):
        cmd = "kubectl --kubeconfig /etc/kubernetes/admin.conf " + " ".join(_quote(a) for a in args)
        if stdin is not None:
            cmd = f"printf '%s' {_quote(stdin)} | {cmd}"
        return self.host.run(cmd)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        res = self.run(*args, stdin=stdin)
        assert res.rc == 0, f"kubectl {' '.join(args)}: {res.stderr or res.stdout}"
        return res.stdout

    def json(self, *args: str):
        return json.loads(self.ok(*args, "-o", "json"))

    def wait(self, what: str, *args: str, timeout: int = 180):
        return self.ok("wait", f"--for={what}", f"--timeout={timeout}s", *args)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


@pytest.fixture(scope="session")
def kubectl(cp):
    return Kubectl(cp)


def run_playbook(playbook: Path | str, *args: str, env_extra: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
    """ansible-playbook on the lab hosts, as the converge runs it (molecule/_shared/lab_playbook.py)."""
    return lab_playbook.run(playbook, *args, inventories=[INVENTORY], env=env_extra, timeout=900)


def eventually(fn, timeout: float = 120, interval: float = 3):
    """fn() until it returns a truthy value or raises no AssertionError; the last error otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = fn()
            if value:
                return value
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"{fn.__name__} never held within {timeout}s")
        time.sleep(interval)


def http_get(kubectl: Kubectl, pod: str, address: str, port: int = 8080) -> str:
    """The body of GET / on address:port, fetched from inside `pod` with busybox's nc
    (Debian's static busybox crashes in wget's name lookup, even for an IP literal)."""
    res = kubectl.run("exec", "-n", "default", pod, "--", "sh", "-c",
                      f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {address} {port}")
    assert res.rc == 0, res.stderr or res.stdout
    assert res.stdout.startswith("HTTP/1."), res.stdout
    return res.stdout.split("\r\n\r\n", 1)[-1].strip()
