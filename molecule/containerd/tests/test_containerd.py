"""Verify the containerd role on a real lab host: Debian's containerd 1.6 configured
through drop-ins, running a container from an image built on the host (no registry);
and kubernetes_packages' download source (kubeadm and kubelet from a file:// mirror).

Expectations come from the scenario's group_vars, never from files the role wrote.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
INVENTORY = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "inventory" / "clusterdos_lab.yml"
HOSTS = yaml.safe_load(INVENTORY.read_text())["all"]["hosts"]
GROUP_VARS = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["provisioner"]["inventory"]["group_vars"]["all"]
IMAGE = "clusterdos.test/busybox:1"

testinfra_hosts = [f"ansible://{name}" for name in HOSTS]


@pytest.fixture(scope="module")
def dump(host):
    """containerd's effective configuration, after every import."""
    return host.check_output("containerd config dump")


def test_service_running_from_distro_package(host):
    assert host.package("containerd").is_installed
    assert host.package("containerd").version.startswith("1.6")
    svc = host.service("containerd")
    assert svc.is_running and svc.is_enabled
    assert host.socket("unix:///run/containerd/containerd.sock").is_listening


def test_config_toml_only_imports_the_dropin_dir(host):
    text = host.file("/etc/containerd/config.toml").content_string
    settings = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    assert settings == ["version = 2", 'imports = ["/etc/containerd/conf.d/*.toml"]']


def test_dropins_loaded_through_imports(dump):
    imports = re.search(r"^imports = \[(.*)\]$", dump, re.M).group(1)
    assert "/etc/containerd/conf.d/10-clusterdos.toml" in imports
    assert "/etc/containerd/conf.d/50-molecule-runtime.toml" in imports


def test_cri_settings_from_the_role_dropin(dump):
    assert "restrict_oom_score_adj = true" in dump
    assert re.search(r"SystemdCgroup = false", dump)  # cgroupfs, as the scenario asks
    assert 'bin_dir = "/opt/cni/bin"' in dump
    assert 'config_path = "/etc/containerd/certs.d"' in dump
    assert 'sandbox_image = "registry.k8s.io/pause:3.10.2"' in dump


def test_other_roles_dropin_merged_beside_ours(dump):
    """A second drop-in with its own plugin table is loaded and does not erase ours."""
    assert "deletion_threshold = 7" in dump
    assert "restrict_oom_score_adj = true" in dump


def test_cri_plugin_loaded(host):
    plugins = host.check_output("ctr plugins ls")
    cri = [ln for ln in plugins.splitlines() if re.search(r"io\.containerd\.grpc\.v1\s+cri\s", ln)]
    assert cri and cri[0].split()[-1] == "ok", plugins


def test_containerd_1x_replaces_a_whole_plugin_table_on_import(host):
    """The documented 1.x limit: a later import naming the CRI table replaces ours whole,
    so on 1.x runtime roles must not write a CRI table (2.x merges; see docs)."""
    d = host.check_output("mktemp -d")
    try:
        host.check_output(f"mkdir {d}/conf.d && cp /etc/containerd/conf.d/10-clusterdos.toml {d}/conf.d/")
        host.check_output("printf '%%s' %s > " + f"{d}/config.toml", f'version = 2\nimports = ["{d}/conf.d/*.toml"]\n')
        host.check_output("printf '%%s' %s > " + f"{d}/conf.d/60-extra.toml",
                          'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.extra]\n'
                          'runtime_type = "io.containerd.runc.v2"\n')
        merged = host.check_output(f"containerd --config {d}/config.toml config dump")
    finally:
        host.run(f"rm -rf {d}")
    assert "runtimes.extra" in merged
    assert "restrict_oom_score_adj = false" in merged


def test_registry_mirror_hosts_toml(host):
    mirror = GROUP_VARS["containerd_registry_mirror"]
    for registry in ("docker.io", "registry.k8s.io", "quay.io"):
        text = host.file(f"/etc/containerd/certs.d/{registry}/hosts.toml").content_string
        assert f'[host."{mirror}"]' in text
        assert 'capabilities = ["pull", "resolve"]' in text
    assert 'server = "https://registry-1.docker.io"' in host.file("/etc/containerd/certs.d/docker.io/hosts.toml").content_string


def test_cni_plugins_installed_and_linked(host):
    for plugin in ("bridge", "host-local", "loopback", "portmap"):
        f = host.file(f"/opt/cni/bin/{plugin}")
        assert f.exists and f.is_symlink and host.file(f.linked_to).is_file
    # A real plugin run: the bridge plugin answers the CNI VERSION command.
    out = host.check_output("CNI_COMMAND=VERSION /opt/cni/bin/bridge < /dev/null")
    assert "0.4.0" in out and "1.0.0" in out


def test_cni_bridge_plugin_wires_a_network_namespace(host):
    conf = ('{"cniVersion":"0.4.0","name":"moltest","type":"bridge","bridge":"cnimol0","isGateway":true,'
            '"ipam":{"type":"host-local","subnet":"10.244.77.0/24","dataDir":"/run/cni-moltest"}}')
    env = "CNI_CONTAINERID=moltest CNI_NETNS=/run/netns/moltest CNI_IFNAME=eth0 CNI_PATH=/opt/cni/bin"
    host.run("ip netns del moltest")
    host.check_output("ip netns add moltest")
    try:
        out = host.check_output(f"echo '{conf}' | CNI_COMMAND=ADD {env} /opt/cni/bin/bridge")
        assert "10.244.77." in out
        addr = host.check_output("ip netns exec moltest ip -4 -o addr show eth0")
        assert "10.244.77." in addr
        assert host.run("ping -c1 -W2 " + re.search(r"10\.244\.77\.\d+", addr).group(0)).rc == 0
    finally:
        host.run(f"echo '{conf}' | CNI_COMMAND=DEL {env} /opt/cni/bin/bridge")
        host.run("ip netns del moltest; ip link del cnimol0")


def test_crictl_pointed_at_containerd(host):
    conf = yaml.safe_load(host.file("/etc/crictl.yaml").content_string)
    assert conf["runtime-endpoint"] == "unix:///run/containerd/containerd.sock"


def test_image_archive_fetched_from_the_file_mirror_and_imported(host):
    """containerd_image_archives with containerd_image_archives_url (file:// mirror on the
    host): the role fetched the archive (sha256 checked), imported it into containerd's
    Kubernetes namespace and removed its copy; the mirror keeps the original."""
    assert IMAGE in host.check_output("ctr -n k8s.io images ls -q").split()
    assert not host.file("/var/cache/clusterdos/images/busybox-image.tar").exists
    assert host.file("/var/cache/clusterdos/images").mode == 0o700
    assert host.file("/srv/image-mirror/busybox-image.tar").exists


def test_runs_a_container_from_a_local_image(host):
    assert IMAGE in host.check_output("ctr -n k8s.io images ls -q").split()
    host.run("ctr -n k8s.io containers rm moltest")
    out = host.check_output(f"ctr -n k8s.io run --rm {IMAGE} moltest /bin/echo hello-from-containerd")
    assert out.strip() == "hello-from-containerd"


def test_container_cgroups_stay_inside_the_lab_host(host):
    """The lab's cgroup scoping: a nested container's cgroups sit below this lab host's
    own cgroup, never at the machine's top level."""
    own = [ln.split(":", 2)[2] for ln in host.file("/proc/1/cgroup").content_string.splitlines()
           if ln.split(":")[1] == "memory"][0]
    out = host.check_output(f"ctr -n k8s.io run --rm {IMAGE} moltest-cg /bin/cat /proc/self/cgroup")
    lines = {ln.split(":")[1]: ln.split(":", 2)[2] for ln in out.splitlines()}
    for controller in ("memory", "pids", "cpu,cpuacct" if "cpu,cpuacct" in lines else "cpu", "name=systemd"):
        assert lines[controller].startswith(own + "/"), (controller, lines[controller], own)


def test_login_tools_from_a_directory(host):
    """The login role's directory source: the real kubectl and helm run on the host.
    (kubernetes_packages' directory source runs with real kubeadm/kubelet in kubeadm_cluster.)"""
    assert '"gitVersion": "v1.' in host.check_output("/usr/local/bin/kubectl version --client -o json")
    assert host.run("/usr/local/bin/helm version --short").rc == 0
    assert host.file("/usr/local/bin/helm").mode == 0o755


# kubernetes_packages' download source, from prepare's file mirror of dl.k8s.io. The
# digests are those shared/k8s/README.md publishes for the real v1.36.2 binaries, not
# anything the fixture or the role wrote.
K8S_BINARIES = {
    "kubeadm": ("755057ae9a8c75b43085ca73d806e9efb5be292d86f41302e69b948bb9c5c09f", ["version", "-o", "short"], "v1.36.2"),
    "kubelet": ("f8cc32d160a3009cfb959f358d4da0d02fae4c170c45d5cb7aa4edcedd48bbcd", ["--version"], "Kubernetes v1.36.2"),
}


@pytest.mark.parametrize("name", sorted(K8S_BINARIES))
def test_kubernetes_binary_downloaded_from_the_file_mirror(host, name):
    digest, args, version = K8S_BINARIES[name]
    installed = host.file(f"/usr/local/bin/{name}")
    assert (installed.user, installed.group, installed.mode) == ("root", "root", 0o755)
    assert installed.sha256sum == digest
    assert host.check_output(" ".join([installed.path, *args])).strip() == version


def test_kubelet_enabled_but_left_to_kubeadm(host):
    """Unit and kubeadm's drop-in installed and enabled; with no kubelet.conf (never joined)
    the restart handler does nothing, so kubelet is not running."""
    assert host.service("kubelet").is_enabled
    assert not host.service("kubelet").is_running
    assert "ExecStart=/usr/local/bin/kubelet" in host.file("/etc/systemd/system/kubelet.service").content_string
    assert host.file("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf").exists
    assert not host.file("/etc/kubernetes/kubelet.conf").exists
    # kubectl stays the login role's (kubernetes_packages_install_kubectl: false).
    assert '"gitVersion": "v1.35.2"' in host.check_output("/usr/local/bin/kubectl version --client -o json")


def test_kubelet_restarted_on_a_unit_change_once_joined(host):
    """On a joined node (kubelet.conf present; here a FIXTURE file) a changed unit restarts
    kubelet. kubeadm never ran here, so kubelet finds no /var/lib/kubelet/config.yaml and
    exits at once (systemd retries it): what is checked is that the handler started it."""
    drop_in = "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"
    assert host.check_output("systemctl show -p InvocationID --value kubelet") == "", "kubelet never started so far"
    host.check_output(f"mkdir -p /etc/kubernetes && echo '# FIXTURE: a joined node' > /etc/kubernetes/kubelet.conf && rm {drop_in}")
    try:
        run = lab_playbook.run(SCENARIO / "tests" / "kubernetes_packages.yml", inventories=[INVENTORY.parent])
        out = run.stdout + run.stderr
        assert run.returncode == 0, out[-3000:]
        handler = out.split("RUNNING HANDLER [clusterdos.cluster.kubernetes_packages : Restart kubelet]", 1)
        assert len(handler) == 2 and handler[1].lstrip("* \n").startswith("changed:"), out[-3000:]
        assert host.file(drop_in).exists
        assert host.check_output("systemctl show -p InvocationID --value kubelet") != ""
    finally:
        host.run("systemctl stop kubelet; rm -f /etc/kubernetes/kubelet.conf")
    assert not host.service("kubelet").is_running
