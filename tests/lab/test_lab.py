"""The lab on this machine, for real: two podman hosts, then `down`.

Needs root, podman and the cached host image (the first run builds it). Checks what the
lab promises: hosts reach each other and the package proxy, nothing else; this machine's
global sysctls stay out of reach; `down` leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI = str(ROOT / "bin" / "clusterdos-lab")
NAME = "pytest-lab"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root")


def lab(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([CLI, *args], capture_output=True, text=True, check=False)
    if check:
        assert result.returncode == 0, f"clusterdos-lab {' '.join(args)}: {result.stderr[-2000:]}"
    return result


def on(host: str, command: str) -> subprocess.CompletedProcess[str]:
    return lab("ssh", "--name", NAME, host, command, check=False)


@pytest.fixture(scope="module")
def inventory():
    lab("down", "--name", NAME)
    up = lab("up", "--name", NAME, "--host", "n1=alpha", "--host", "n2=alpha,beta")
    path = Path(up.stdout.strip().splitlines()[-1])
    import yaml

    yield yaml.safe_load(path.read_text())
    lab("down", "--name", NAME)


def test_inventory_has_groups_and_lab_settings(inventory):
    children = inventory["all"]["children"]
    assert set(children["alpha"]["hosts"]) == {"n1", "n2"}
    assert set(children["beta"]["hosts"]) == {"n2"}
    assert inventory["all"]["vars"]["clusterdos_package_proxy"].endswith(":3142")


def test_hosts_reach_each_other_and_the_proxy(inventory):
    n2 = inventory["all"]["hosts"]["n2"]["ansible_host"]
    proxy = inventory["all"]["vars"]["clusterdos_package_proxy"].removeprefix("http://")
    addr, port = proxy.split(":")
    assert on("n1", f"ping -c1 -W2 {n2}").returncode == 0
    assert on("n1", f"timeout 3 bash -c 'echo > /dev/tcp/{addr}/{port}'").returncode == 0


def test_nothing_else_is_reachable(inventory):
    gateway = inventory["all"]["vars"]["clusterdos_lab"]["gateway"]
    # No route out of the bridge, no DNS, and this machine answers only the proxy port.
    assert on("n1", "ip route get 1.1.1.1").returncode != 0
    assert on("n1", "getent hosts deb.debian.org").returncode != 0
    assert on("n1", f"timeout 3 bash -c 'echo > /dev/tcp/{gateway}/22'").returncode != 0


def test_serve_gives_hosts_one_directory_and_nothing_more(inventory, tmp_path):
    """`serve` (a site's file or chart mirror): hosts read the directory's files over HTTP
    on the bridge address; ports other than the proxy's and this one stay closed; a missing
    directory is refused with a clear error."""
    (tmp_path / "index.yaml").write_text("apiVersion: v1\nentries: {}\n")
    served = lab("serve", "--name", NAME, "--dir", str(tmp_path)).stdout.strip().splitlines()[-1]
    gateway = inventory["all"]["vars"]["clusterdos_lab"]["gateway"]
    assert served == f"http://{gateway}:8090"
    got = on("n1", f"python3 -c 'import urllib.request as u; print(u.urlopen(\"{served}/index.yaml\", timeout=5).read().decode())'")
    assert got.returncode == 0 and "entries: {}" in got.stdout, got.stderr
    assert lab("serve", "--name", NAME, "--dir", str(tmp_path)).stdout.strip().endswith(served)  # again: no-op
    assert on("n1", f"timeout 3 bash -c 'echo > /dev/tcp/{gateway}/22'").returncode != 0
    bad = lab("serve", "--name", NAME, "--dir", str(tmp_path / "missing"), check=False)
    assert bad.returncode == 2 and "no such directory" in bad.stderr


def test_global_sysctls_are_read_only_inside(inventory):
    before = Path("/proc/sys/kernel/dmesg_restrict").read_text()
    result = on("n1", "echo 1 > /proc/sys/kernel/dmesg_restrict")
    assert result.returncode != 0 and "Read-only" in result.stderr
    assert Path("/proc/sys/kernel/dmesg_restrict").read_text() == before
    # kubelet writes these three at start: inside they are private files, so the
    # write succeeds there and this machine keeps its own value.
    for key in ("kernel/panic_on_oops", "kernel/panic", "vm/overcommit_memory"):
        before = Path(f"/proc/sys/{key}").read_text()
        other = "1" if before.strip() != "1" else "0"
        assert on("n1", f"echo {other} > /proc/sys/{key}").returncode == 0
        assert on("n1", f"cat /proc/sys/{key}").stdout.strip() == other
        assert Path(f"/proc/sys/{key}").read_text() == before
    # net.* is the host's own network namespace and stays writable.
    assert on("n1", "sysctl -w net.ipv4.ip_forward=1").returncode == 0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"base_package_proxy": "ftp://proxy"}, "base_package_proxy must look like http://HOST:PORT"),
        ({"base_kernel_modules": ["bad module"]}, "not kernel module names: ['bad module']"),
        ({"base_sysctl_config": {"Not A Key": 1}}, "base_sysctl_config keys must be dotted sysctl names"),
        ({"base_time_servers": [], "base_time_pools": []}, "name at least one NTP source"),
        ({"base_swap_disabled": "perhaps"}, "base_swap_disabled"),
    ],
    ids=["proxy", "module", "sysctl", "time", "type"],
)
def test_base_refuses_bad_input_before_changing_a_host(inventory, tmp_path, extra, message):
    """The base role on real hosts: a bad value fails the play before any change."""
    import yaml

    inv = Path("/var/lib/clusterdos-lab") / NAME / "inventory.yml"
    extra_file = tmp_path / "extra.yml"
    extra_file.write_text(yaml.safe_dump(extra))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    result = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(inv),
                             str(ROOT / "playbooks" / "base.yml"), "-e", f"@{extra_file}"],
                            capture_output=True, text=True, env=env, check=False)
    assert result.returncode != 0
    assert message in result.stdout
    for path in ("/etc/apt/apt.conf.d/01clusterdos-proxy", "/etc/sysctl.d/90-clusterdos.conf",
                 "/etc/modules-load.d/90-clusterdos.conf"):
        assert on("n1", f"test -e {path}").returncode != 0, path


def test_up_again_adds_a_host_and_keeps_the_others(inventory, tmp_path):
    """`up` on a running lab adds the new host, keeps the others' addresses, and keeps a
    running file server reachable (it rebuilds the lab's firewall)."""
    import yaml

    before = {h: v["ansible_host"] for h, v in inventory["all"]["hosts"].items()}
    (tmp_path / "kept.txt").write_text("kept\n")
    served = lab("serve", "--name", NAME, "--dir", str(tmp_path)).stdout.strip().splitlines()[-1]
    up = lab("up", "--name", NAME, "--host", "n3=beta")
    after = yaml.safe_load(Path(up.stdout.strip().splitlines()[-1]).read_text())
    hosts = {h: v["ansible_host"] for h, v in after["all"]["hosts"].items()}
    assert {h: hosts[h] for h in before} == before
    assert set(hosts) == {"n1", "n2", "n3"} and len(set(hosts.values())) == 3
    assert set(after["all"]["children"]["beta"]["hosts"]) == {"n2", "n3"}
    assert on("n3", f"ping -c1 -W2 {before['n1']}").returncode == 0
    for host in ("n1", "n3"):
        got = on(host, f"python3 -c 'import urllib.request as u; print(u.urlopen(\"{served}/kept.txt\", timeout=5).read().decode())'")
        assert got.returncode == 0 and "kept" in got.stdout, (host, got.stderr)


def test_down_leaves_nothing_behind(inventory):
    state = Path("/var/lib/clusterdos-lab") / NAME
    pid = int((state / "apt-cacher-ng" / "pid").read_text())
    served = lab("serve", "--name", NAME, "--dir", str(ROOT / "docs"))
    assert served.returncode == 0
    file_pid = int((state / "fileserver" / "pid").read_text().split()[0])
    lab("down", "--name", NAME)
    ps = subprocess.run(["podman", "ps", "-a", "--filter", f"label=clusterdos-lab={NAME}", "--format", "json"],
                        capture_output=True, text=True, check=True)
    assert json.loads(ps.stdout or "[]") == []
    assert subprocess.run(["podman", "network", "exists", f"clusterdos-{NAME}"], check=False).returncode != 0
    assert f"clusterdos-lab:{NAME}" not in subprocess.run(["iptables-save"], capture_output=True, text=True, check=True).stdout
    assert not state.exists()
    assert not Path(f"/proc/{pid}").exists()
    assert not Path(f"/proc/{file_pid}").exists()


def test_bad_input_is_refused_before_anything_changes():
    result = lab("up", "--name", "pytest-bad", "--subnet", "8.8.8.0/24", "--hosts", "1", check=False)
    assert result.returncode == 2 and "private IPv4" in result.stderr
    assert not (Path("/var/lib/clusterdos-lab") / "pytest-bad").exists()
    result = lab("up", "--name", "pytest-bad", "--hosts", "200", "--memory", "4096", check=False)
    assert result.returncode == 2 and "MiB" in result.stderr


def test_a_lab_whose_subnet_is_taken_takes_the_next_free_one():
    """Lab subnets come from a hash of the name, so two names can share one (a benchmark lab
    and a scenario's did). With the name's own /24 already routed on this machine (an empty
    bridge stands in for the other lab), `up` takes the next free /24 and says so."""
    import sys

    sys.path.insert(0, str(ROOT / "lab"))
    from clusterdos_lab.spec import candidate_subnets

    name, dummy = "pytest-clash", "cdl-pytest-dum"
    own, following = candidate_subnets(name)[:2]
    lab("down", "--name", name)
    subprocess.run(["ip", "link", "del", dummy], capture_output=True, check=False)
    subprocess.run(["ip", "link", "add", dummy, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", own.replace(".0/24", ".1/24"), "dev", dummy], check=True)
        subprocess.run(["ip", "link", "set", dummy, "up"], check=True)
        up = lab("up", "--name", name, "--hosts", "1")
        assert f"subnet {own} is already in use" in up.stderr and f"this lab takes {following}" in up.stderr, up.stderr
        import yaml

        hosts = yaml.safe_load(Path(up.stdout.strip().splitlines()[-1]).read_text())["all"]["hosts"]
        assert all(h["ansible_host"].rsplit(".", 1)[0] == following.rsplit(".", 1)[0] for h in hosts.values()), hosts
        # Given on the command line, a subnet in use is refused as before.
        lab("down", "--name", name)
        refused = lab("up", "--name", name, "--subnet", own, "--hosts", "1", check=False)
        assert refused.returncode != 0 and f"subnet {own} is already in use" in refused.stderr, refused.stderr
    finally:
        lab("down", "--name", name, check=False)
        subprocess.run(["ip", "link", "del", dummy], capture_output=True, check=False)
