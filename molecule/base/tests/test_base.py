"""Verify the base role on real lab hosts (podman containers with systemd).

Expectations come from the lab's own inventory (addresses, proxy) and from the
scenario's group_vars, never from the files the role wrote.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

INVENTORY = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "inventory" / "clusterdos_lab.yml"
LAB = yaml.safe_load(INVENTORY.read_text())["all"]
HOSTS = LAB["hosts"]
# What each module provides when loaded or built in (br_netfilter has no /sys/module entry
# when built in without parameters).
MODULES = {"overlay": "/sys/module/overlay", "br_netfilter": "/proc/sys/net/bridge"}
NET_SYSCTLS = {"net.ipv4.ip_forward": "1", "net.core.somaxconn": "4096", "net.ipv4.tcp_keepalive_time": "600"}
GLOBAL_SYSCTLS = {"fs.inotify.max_user_watches": "524288", "vm.max_map_count": "262144"}

testinfra_hosts = [f"ansible://{name}" for name in HOSTS]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_kernel_module_loaded_and_persisted(host, module):
    assert host.file(MODULES[module]).is_directory
    assert module in host.file("/etc/modules-load.d/90-clusterdos.conf").content_string.split()


def test_net_sysctls_set_at_runtime_and_in_file(host):
    conf = host.file("/etc/sysctl.d/90-clusterdos.conf").content_string
    for key, value in NET_SYSCTLS.items():
        assert host.sysctl(key) == int(value), key
        assert f"{key}={value}" in conf.replace(" ", ""), key


def test_global_sysctls_written_but_host_kernel_untouched(host):
    """In a container only net.* is the host's own; the rest must be in the file and
    /proc/sys/{kernel,vm,fs} must stay read-only (the lab's guard)."""
    conf = host.file("/etc/sysctl.d/90-clusterdos.conf").content_string.replace(" ", "")
    for key, value in GLOBAL_SYSCTLS.items():
        assert f"{key}={value}" in conf, key
    # kernel.pid_max written with its own value: harmless even without the guard. (The lab
    # gives kubelet private copies of kernel.panic, kernel.panic_on_oops and
    # vm.overcommit_memory, which are therefore writable: not a probe of the guard.)
    probe = host.run("sh -c 'cat /proc/sys/kernel/pid_max > /proc/sys/kernel/pid_max'")
    assert probe.rc != 0 and "Read-only" in probe.stderr


def test_swap_off_and_kept_off(host):
    swaps = host.file("/proc/swaps").content_string.strip().splitlines()
    assert len(swaps) == 1, swaps  # header only
    assert host.run("systemctl is-enabled swap.target").stdout.strip() == "masked"


def test_chrony_running_with_lab_server(host):
    chrony = host.service("chrony")
    assert chrony.is_running and chrony.is_enabled
    sources = host.check_output("chronyc -n sources")
    for server in LAB["vars"]["clusterdos_time_servers"]:
        assert server in sources
    # A container shares this machine's clock: chronyd must not try to set it.
    assert "-x" in host.file("/etc/default/chrony").content_string
    assert host.service("systemd-timesyncd").is_running is False


# base-3 has no proxy and a site apt mirror (molecule.yml's host_vars); the others use the proxy.
MIRROR_HOST = "base-3"


def test_package_proxy_or_site_mirror_configured_and_used(host):
    proxy = LAB["vars"]["clusterdos_package_proxy"]
    name = host.backend.get_hostname()
    dump = host.run("apt-config dump Acquire::http::Proxy").stdout
    if name == MIRROR_HOST:
        assert proxy not in dump and not host.file("/etc/apt/apt.conf.d/01clusterdos-proxy").exists
        sources = host.file("/etc/apt/sources.list").content_string
        assert f"deb {proxy}/debian bookworm main" in sources
        assert f"deb {proxy}/debian-security bookworm-security main" in sources
        # The stock deb822 list (prepare.yml) is set aside, not deleted.
        assert not host.file("/etc/apt/sources.list.d/debian.sources").exists
        assert host.file("/etc/apt/sources.list.d/debian.sources.disabled-by-clusterdos").exists
        # apt reads only the mirror: an index refresh succeeds without any proxy.
        update = host.run("apt-get update -o Acquire::Retries=0")
        assert update.rc == 0 and "deb.debian.org" not in update.stdout + update.stderr, update.stdout + update.stderr
    else:
        assert proxy in dump
    # chrony can only have arrived through the proxy or the mirror: hosts have no other route out.
    assert host.package("chrony").is_installed
    assert host.run("ip route get 1.1.1.1").rc != 0


def test_hosts_file_lists_every_cluster_host(host):
    for name, hv in HOSTS.items():
        assert host.check_output(f"getent hosts {name}").split()[0] == hv["clusterdos_node_ip"]
