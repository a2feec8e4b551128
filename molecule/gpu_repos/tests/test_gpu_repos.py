"""Verify repository and package selection for each GPU mode, and the inbox RDMA stack.

NVIDIA/AMD packages are empty stand-ins from the mirror the prepare step built (see
build_stand_in_mirror.py): what is real here is apt's view - which repositories are
defined and trusted, which versions the pins select, what got installed. Drivers are
not exercised on hardware. Debian's own packages (rocm-smi, rocminfo, rdma-core,
perftest, infiniband-diags) are real, fetched through the lab's proxy.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
HOSTS = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]["hosts"]
MIRROR = "file:///srv/clusterdos-stand-in-mirror"

testinfra_hosts = [f"ansible://{name}" for name in HOSTS]



@pytest.fixture
def name(host):
    return host.backend.get_hostname()


def skip_unless(name, names):
    if name not in names:
        pytest.skip(f"not a {'/'.join(names)} host")


def installed(host, package):
    out = host.run(f"dpkg-query -W -f='${{Status}} ${{Version}}' {package}")
    return out.stdout.split()[-1] if out.rc == 0 and "install ok installed" in out.stdout else None


def _plain(value):
    """Drop the data tags ansible-core 2.19+ keeps with cached values ({"value": ..., "__ansible_type": ...})."""
    if isinstance(value, dict):
        if "__ansible_type" in value and "value" in value:
            return _plain(value["value"])
        return {k: _plain(v) for k, v in value.items() if k != "__ansible_type"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def clusterdos_hw(name):
    """The fact the roles published (set_fact cacheable), read from Ansible's fact cache.

    The jsonfile cache names files HOST (older ansible-core) or sN_HOST, and ansible-core
    2.19+ wraps the facts in a JSON string under __payload__ with data tags.
    """
    cache = EPHEMERAL / "facts"
    files = [cache / name] if (cache / name).exists() else sorted(cache.glob(f"*_{name}"))
    assert files, f"no cached facts for {name} in {cache}: {sorted(p.name for p in cache.glob('*'))}"
    data = json.loads(files[-1].read_text())
    if "__payload__" in data:
        data = json.loads(data["__payload__"])
    return _plain(data)["clusterdos_hw"]


# --- NVIDIA, host-managed driver -------------------------------------------------------

def test_cuda_and_toolkit_repositories_signed_and_from_the_mirror(host, name):
    skip_unless(name, ["nv-host"])
    cuda = host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").content_string
    assert f"URIs: {MIRROR}/developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/" in cuda
    assert "Signed-By: /etc/apt/keyrings/nvidia-cuda.asc" in cuda
    nct = host.file("/etc/apt/sources.list.d/nvidia-container-toolkit.sources").content_string
    assert f"URIs: {MIRROR}/nvidia.github.io/libnvidia-container/stable/deb/amd64/" in nct
    # apt trusts them: the update succeeds without "NO_PUBKEY"/"not signed".
    update = host.run("apt-get update 2>&1")
    assert update.rc == 0 and "NO_PUBKEY" not in update.stdout and "not signed" not in update.stdout, update.stdout


def test_driver_branch_pinned_and_held(host, name):
    skip_unless(name, ["nv-host"])
    assert installed(host, "nvidia-open") == "570.172.08-1"
    assert installed(host, "nvidia-kernel-open-dkms") == "570.172.08-1"
    policy = host.check_output("apt-cache policy nvidia-open")
    assert "Candidate: 570.172.08-1" in policy
    # The newer branch is in the mirror but never installable (-1), also not by an upgrade.
    assert "575.64.05-1 -1" in policy.replace("\n", " ").replace("     ", " ")
    assert "Inst nvidia" not in host.check_output("apt-get -s dist-upgrade")
    assert installed(host, f"linux-headers-{host.check_output('uname -r')}") == "1.0-standin"


def test_fabric_manager_matches_the_driver_not_the_newest(host, name):
    skip_unless(name, ["nv-host"])
    assert installed(host, "nvidia-fabricmanager-570") == installed(host, "nvidia-kernel-open-dkms") == "570.172.08-1"
    assert "Inst nvidia-fabricmanager" not in host.check_output("apt-get -s dist-upgrade")


def test_toolkit_pinned_version_and_dcgm(host, name):
    skip_unless(name, ["nv-host"])
    for pkg in ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"):
        assert installed(host, pkg) == "1.17.8-1", pkg  # 1.18.0-1 is in the mirror too
    # Held: an upgrade does not move the toolkit to the newer version in the mirror.
    assert "Inst nvidia-container-toolkit" not in host.check_output("apt-get -s dist-upgrade")
    assert "1.18.0-1 -1" in " ".join(host.check_output("apt-cache policy nvidia-container-toolkit").split())
    assert installed(host, "datacenter-gpu-manager-4-cuda12") == "1:4.2.3-1"


def test_containerd_dropin_registers_nvidia_as_default_runtime(host, name):
    skip_unless(name, ["nv-host"])
    conf = tomllib.loads(host.file("/etc/containerd/conf.d/50-nvidia.toml").content_string)
    assert conf["version"] == 3
    cri = conf["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert cri["default_runtime_name"] == "nvidia"
    assert cri["runtimes"]["nvidia"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["runtimes"]["nvidia"]["options"] == {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}


def test_nouveau_blacklisted_on_every_nvidia_host(host, name):
    skip_unless(name, ["nv-host", "nv-operator", "nv-pcie"])
    conf = host.file("/etc/modprobe.d/blacklist-nouveau-clusterdos.conf").content_string
    assert "blacklist nouveau" in conf and "options nouveau modeset=0" in conf


def test_nouveau_blacklist_in_the_rebuilt_initramfs(host, name):
    """nv-operator has initramfs-tools and a kernel (prepare's fixture), whose initramfs was
    built before the blacklist existed: the role's handler rebuilt it with the blacklist."""
    skip_unless(name, ["nv-operator"])
    initrds = host.check_output("ls /boot/initrd.img-*").split()
    assert len(initrds) == 1, initrds
    listing = [f.removeprefix("./") for f in host.check_output(f"lsinitramfs {initrds[0]}").split()]
    assert "etc/modprobe.d/blacklist-nouveau-clusterdos.conf" in listing, [f for f in listing if "modprobe.d" in f]


def test_published_facts_host_mode(name):
    skip_unless(name, ["nv-host"])
    hw = clusterdos_hw(name)
    assert hw["gpu_driver_managed_by"] == "host"
    assert hw["gpu_runtime"] == {"containerd_runtime": "nvidia", "default": True}
    gpus = hw["gpus"]
    # No GPU in a lab host: discovery says so instead of inventing one.
    assert (gpus["vendor"], gpus["count"], gpus["driver_loaded"]) == ("none", 0, False)
    assert gpus["installed_package_version"] == "570.172.08-1"
    assert gpus["fabricmanager"] is True and gpus["reboot_required"] is False


# --- NVIDIA, a PCIe host: an exact driver release, no fabric manager ----------------------

def test_exact_driver_release_pinned_not_the_branch_newest(host, name):
    skip_unless(name, ["nv-pcie"])
    assert installed(host, "nvidia-open") == installed(host, "nvidia-kernel-open-dkms") == "570.124.06-1"
    flat = " ".join(host.check_output("apt-cache policy nvidia-open").split())
    assert "Candidate: 570.124.06-1" in flat
    # The branch's newer release and the newer branch: in the mirror, never installable.
    assert "570.172.08-1 -1" in flat and "575.64.05-1 -1" in flat, flat
    assert "Inst nvidia" not in host.check_output("apt-get -s dist-upgrade")


def test_no_fabric_manager_without_nvswitch(host, name):
    skip_unless(name, ["nv-pcie"])
    assert installed(host, "nvidia-fabricmanager-570") is None
    assert not host.file("/etc/apt/preferences.d/clusterdos-10-nvidia-fabricmanager").exists
    gpus = clusterdos_hw(name)["gpus"]
    assert gpus["fabricmanager"] is False and gpus["installed_package_version"] == "570.124.06-1"


# --- NVIDIA, GPU Operator owns driver and toolkit ---------------------------------------

def test_operator_mode_installs_no_driver_and_says_so(host, name):
    skip_unless(name, ["nv-operator"])
    assert not host.file("/etc/apt/sources.list.d/nvidia-cuda.sources").exists
    assert not host.file("/etc/containerd/conf.d/50-nvidia.toml").exists
    for pkg in ("nvidia-open", "nvidia-container-toolkit", "nvidia-fabricmanager-570"):
        assert installed(host, pkg) is None, pkg
    hw = clusterdos_hw(name)
    assert hw["gpu_driver_managed_by"] == "operator" and hw["gpu_runtime"] == {}


# --- AMD ------------------------------------------------------------------------------

def test_amd_repositories_pinned_and_dkms_rocm_installed(host, name):
    skip_unless(name, ["amd-dkms"])
    for repo, uri in (("amdgpu", "amdgpu/6.4.1/ubuntu"), ("rocm", "rocm/apt/6.4.1")):
        src = host.file(f"/etc/apt/sources.list.d/{repo}.sources").content_string
        assert f"URIs: {MIRROR}/repo.radeon.com/{uri}" in src and "Suites: jammy" in src
    assert installed(host, "amdgpu-dkms") == "1:6.12.12.60401-2164967.22.04"
    assert installed(host, "rocm") == "6.4.1.60401-83~22.04"
    # AMD's pin (origin repo.radeon.com) applies to the mirror's packages.
    assert " 600 " in host.check_output("apt-cache policy rocm")
    groups = host.user("labuser").groups
    assert "video" in groups and "render" in groups
    # Headers for the running kernel, which DKMS builds amdgpu against (amd_gpu_kernel_headers).
    assert installed(host, f"linux-headers-{host.check_output('uname -r')}") == "1.0-standin"
    hw = clusterdos_hw(name)
    assert (hw["gpu_driver_managed_by"], hw["gpus"]["kernel_driver"], hw["gpus"]["rocm_version"]) == ("host", "dkms", "6.4.1")


def test_amd_inbox_driver_with_debian_rocm_tools(host, name):
    skip_unless(name, ["amd-deb-rdma"])
    assert not host.file("/etc/apt/sources.list.d/amdgpu.sources").exists
    assert installed(host, "amdgpu-dkms") is None
    for pkg in ("rocm-smi", "rocminfo"):
        assert installed(host, pkg), pkg
        assert "deb.debian.org" in host.check_output(f"apt-cache policy {pkg}") or "/debian" in host.check_output(f"apt-cache policy {pkg}")
    assert host.exists("rocm-smi") and host.exists("rocminfo")
    hw = clusterdos_hw(name)
    assert hw["gpus"]["kernel_driver"] == "inbox" and hw["gpus"]["rocm_version"] == "os"


# --- RDMA inbox stack (a container: packages and files; modules are tested in rdma_softroce) ---

def test_rdma_inbox_stack_from_debian(host, name):
    skip_unless(name, ["amd-deb-rdma"])
    for pkg in ("rdma-core", "ibverbs-providers", "ibverbs-utils", "rdmacm-utils", "infiniband-diags", "perftest"):
        assert installed(host, pkg), pkg
    for tool in ("ibv_devinfo", "ib_write_bw", "ibstat"):
        assert host.exists(tool), tool
    # A container has no RDMA device and shares this machine's kernel: modules are listed
    # for boot but not loaded, and discovery reports no HCA.
    assert "ib_uverbs" in host.file("/etc/modules-load.d/60-clusterdos-rdma.conf").content_string.split()
    hw = clusterdos_hw(name)
    assert hw["hcas"] == [] and hw["rdma"]["stack"] == "inbox"


def test_rdma_doca_stack_from_the_signed_doca_repository(host, name):
    """rdma_stack: doca on nv-host: NVIDIA's DOCA-OFED repository (the stand-in mirror's
    flat repository at upstream's layout), trusted through its own key, and doca-ofed from it."""
    skip_unless(name, ["nv-host"])
    doca_url = f"{MIRROR}/linux.mellanox.com/public/repo/doca/2.9.1/debian12.5/x86_64/"
    sources = host.file("/etc/apt/sources.list.d/doca.sources").content_string
    assert f"URIs: {doca_url}" in sources and "Suites: ./" in sources
    assert "Signed-By: /etc/apt/keyrings/doca.asc" in sources
    key = host.file("/etc/apt/keyrings/doca.asc")
    assert (key.user, key.mode) == ("root", 0o644) and "BEGIN PGP PUBLIC KEY BLOCK" in key.content_string
    assert installed(host, "doca-ofed") == "2.9.1-1"
    # Its only source is the DOCA repository (apt prints a file: URI with one slash).
    policy = " ".join(host.check_output("apt-cache policy doca-ofed").split())
    assert "*** 2.9.1-1 500 500 file:/srv/clusterdos-stand-in-mirror/linux.mellanox.com/public/repo/doca/" in policy, policy
    # The inbox stack's packages are not installed beside it.
    assert installed(host, "rdma-core") is None
    assert clusterdos_hw(name)["rdma"]["stack"] == "doca"


def test_ipoib_interface_written_for_ifupdown_and_read_by_it(host, name):
    """rdma_ipoib_interfaces on Debian (backend auto: ifupdown): the role installs ifupdown,
    which reads the file it wrote. No InfiniBand port here: ib0 never comes up."""
    skip_unless(name, ["amd-deb-rdma"])
    assert installed(host, "ifupdown"), "the IPoIB backend's package"
    conf = host.file("/etc/network/interfaces.d/60-clusterdos-ipoib")
    assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o600)
    assert "allow-hotplug ib0" in conf.content_string
    # ifupdown's own parser, through /etc/network/interfaces (which sources interfaces.d).
    query = host.check_output("ifquery ib0")
    # ifupdown reads the CIDR as address and netmask.
    assert "address: 10.20.0.4\n" in query and "netmask: 255.255.0.0" in query and "mtu: 65520" in query, query
    assert "echo connected > /sys/class/net/ib0/mode" in query, query
    assert "ib_ipoib" in host.file("/etc/modules-load.d/60-clusterdos-rdma.conf").content_string.split()


def test_ipoib_keyfile_written_for_networkmanager_and_loaded_by_it(host, name):
    """rdma_ipoib_backend: networkmanager (EL's default; chosen on this Debian host): the role
    installs NetworkManager and writes a keyfile that NetworkManager itself loads and reads
    as an InfiniBand connection. No InfiniBand port here: it is never activated."""
    skip_unless(name, ["nv-pcie"])
    assert installed(host, "network-manager"), "the IPoIB backend's package"
    assert not installed(host, "ifupdown")
    conf = host.file("/etc/NetworkManager/system-connections/clusterdos-ipoib-ib0.nmconnection")
    # NetworkManager ignores keyfiles that are not root's and private.
    assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o600)
    # NetworkManager reads every keyfile when it starts, as at boot.
    host.check_output("systemctl restart NetworkManager")
    got = host.check_output("nmcli -t -g connection.type,connection.interface-name,infiniband.transport-mode,"
                            "infiniband.mtu,ipv4.method,ipv4.addresses connection show clusterdos-ipoib-ib0")
    assert got.split("\n") == ["infiniband", "ib0", "datagram", "2044", "manual", "10.20.0.5/16"], got
    assert "ib_ipoib" in host.file("/etc/modules-load.d/60-clusterdos-rdma.conf").content_string.split()
    # The lab host's own interfaces stay unmanaged (prepare's fixture; without udevd,
    # NetworkManager may not list them at all), and udevd and ModemManager never ran.
    status = host.check_output("nmcli -t -f DEVICE,STATE device status")
    devices = dict(line.split(":", 1) for line in status.splitlines() if line)
    others = {dev: state for dev, state in devices.items() if dev != "lo" and not dev.startswith("ib")}
    assert set(others.values()) <= {"unmanaged"}, devices
    for unit in ("systemd-udevd", "ModemManager"):
        assert host.run(f"systemctl is-active {unit}").stdout.strip() != "active", unit


FACTS_TASK = ("TASK [clusterdos.cluster.hardware_facts : Read the host's facts, GPUs, RDMA devices and "
              "converge records, check the declared GPUs]")


def _stage_with_tag(stage: str, tag: str) -> tuple[subprocess.CompletedProcess, str]:
    """playbooks/STAGE run alone against the lab with --tags TAG (it must pass), and the
    output of its facts task (FACTS_TASK)."""
    res = lab_playbook.run(stage, "--tags", tag, inventories=[EPHEMERAL / "inventory"], timeout=900)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return res, res.stdout.split(FACTS_TASK, 1)[1].split("TASK [", 1)[0]


@pytest.mark.parametrize("stage", ["gpu.yml", "rdma.yml"])
def test_stage_run_alone_gathers_its_own_facts_and_changes_nothing(stage):
    """A stage playbook run on its own (here its read-only preflight part, --tags preflight)
    has no earlier play of the run to take facts from: its own gather task runs (it is
    skipped within site.yml, after the host preflight gathered them) and no host changes."""
    res, gathered = _stage_with_tag(stage, "preflight")
    assert re.search(r"^ok: \[", gathered, re.M) and "skipping:" not in gathered, gathered
    assert not re.search(r"changed=[1-9]", res.stdout), res.stdout[-3000:]


def test_a_role_tag_alone_still_reads_facts_and_checks_every_gpu_host_first():
    """docs/gpu.md's `gpu.yml --tags nvidia_gpu`: the role play's tag alone also selects the
    host checks of every GPU host, before the first change. Before, that play was tagged gpu
    and preflight only: it read the facts (those tasks are tagged always) and skipped the
    checks, so each host's own checks ran only in the NVIDIA play, just before its changes.
    On the converged hosts nothing changes."""
    res, gathered = _stage_with_tag("gpu.yml", "nvidia_gpu")
    out = res.stdout
    assert all(f"ok: [{name}]" in gathered for name in HOSTS), gathered
    checks = out.split("PLAY [GPU - host checks", 1)[1].split("PLAY [GPU - NVIDIA driver", 1)[0]
    first_check = "TASK [clusterdos.cluster.nvidia_gpu : Check the OS is one the CUDA repository serves]"
    assert first_check in checks, checks
    checked = checks.split(first_check, 1)[1]
    # The hosts whose driver the role installs (nv-operator leaves it to the GPU Operator).
    assert all(f"ok: [{name}]" in checked.split("TASK [", 1)[0] for name in ("nv-host", "nv-pcie")), checks
    assert "TASK [Apply the amd_gpu role]" not in out
    assert not re.search(r"changed=[1-9]", out), out[-3000:]
