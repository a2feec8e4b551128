"""The kubeadm documents the kubernetes_cluster role builds, rendered by Ansible on the
controller from a three-control-plane inventory and checked against kubeadm v1beta4's
fields and value types, then validated by the real kubeadm (shared/k8s) for its own
Kubernetes version."""

from __future__ import annotations

import shutil

import pytest
import yaml

from .conftest import ROOT, inventory
from .v1beta4 import KUBELET_FIELDS, SCHEMAS, TAINT_EFFECTS, unknown_fields

RENDER = ROOT / "tests" / "unit" / "kubernetes" / "render.yml"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from .conftest import run_playbook

    tmp = tmp_path_factory.mktemp("render")
    inv = inventory(kubernetes_cluster_cilium_kube_proxy_replacement=True, kubernetes_cluster_fail_cgroup_v1=False)
    inv["all"]["children"]["kube_node"]["hosts"]["gpu1"]["kubernetes_cluster_node_taints"] = ["nvidia.com/gpu=present:NoSchedule"]
    result = run_playbook(RENDER, inv, tmp, "-e", f"out_dir={tmp}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    init_text = (tmp / "cp1" / "kubeadm-init.yaml").read_text()
    return {
        "init_text": init_text,
        "init": [d for d in yaml.safe_load_all(init_text) if d],
        "join": {h: list(yaml.safe_load_all((tmp / f"{h}.join.yaml").read_text())) for h in ("cp2", "cp3", "gpu1", "gpu2")},
        "extra": yaml.safe_load((tmp / "cp1.extra.yaml").read_text()),
        "dir": tmp,
    }


def by_kind(docs, kind):
    return next(d for d in docs if d["kind"] == kind)


def test_init_file_is_managed_and_private(rendered):
    assert rendered["init_text"].startswith("#")
    assert oct((rendered["dir"] / "cp1" / "kubeadm-init.yaml").stat().st_mode & 0o777) == "0o600"


def test_every_kubeadm_document_uses_only_v1beta4_fields(rendered):
    docs = rendered["init"] + [d for docs in rendered["join"].values() for d in docs]
    for doc in docs:
        key = (doc["apiVersion"], doc["kind"])
        if key in SCHEMAS:
            assert unknown_fields(doc, SCHEMAS[key]) == [], key
    kinds = [d["kind"] for d in rendered["init"]]
    # kube-proxy replaced by Cilium: no KubeProxyConfiguration, and kubeadm skips the phase.
    assert kinds == ["InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"]


def test_cluster_configuration_values(rendered):
    cc = by_kind(rendered["init"], "ClusterConfiguration")
    assert cc["kubernetesVersion"] == "v1.34.1"
    assert cc["controlPlaneEndpoint"] == "192.168.10.5:6443"
    assert cc["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12", "dnsDomain": "cluster.local"}
    assert {"192.168.10.5", "cp1", "cp2", "cp3", "192.168.10.11", "192.168.10.13"} <= set(cc["apiServer"]["certSANs"])
    args = {a["name"]: a["value"] for a in cc["apiServer"]["extraArgs"]}
    assert all(isinstance(a["value"], str) for a in cc["apiServer"]["extraArgs"])  # v1beta4: strings
    config_dir = str(rendered["dir"] / "cp1")  # kubernetes_cluster_config_dir, set by the test
    assert args["encryption-provider-config"] == f"{config_dir}/encryption-config.yaml"
    assert args["audit-policy-file"] == f"{config_dir}/audit-policy.yaml"
    assert args["audit-log-path"] == "/var/log/kubernetes/audit/audit.log"
    assert args["audit-log-maxage"] == "30"
    mounts = {v["name"]: v for v in cc["apiServer"]["extraVolumes"]}
    assert mounts["clusterdos-config"]["readOnly"] is True
    assert mounts["clusterdos-config"]["hostPath"] == mounts["clusterdos-config"]["mountPath"] == config_dir
    assert mounts["audit-log"]["mountPath"] == "/var/log/kubernetes/audit"


def test_init_configuration_values(rendered):
    ic = by_kind(rendered["init"], "InitConfiguration")
    assert ic["localAPIEndpoint"] == {"advertiseAddress": "192.168.10.11", "bindPort": 6443}
    nr = ic["nodeRegistration"]
    assert nr["name"] == "cp1" and nr["criSocket"] == "unix:///run/containerd/containerd.sock"
    assert nr["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert nr["kubeletExtraArgs"] == [{"name": "node-ip", "value": "192.168.10.11"}]
    # cgroup v1 lab settings and kube-vip's manifest placed before init.
    assert set(nr["ignorePreflightErrors"]) == {"SystemVerification", "DirAvailable--etc-kubernetes-manifests"}
    assert ic["skipPhases"] == ["addon/kube-proxy"]
    assert "bootstrapTokens" not in ic and "certificateKey" not in ic  # no secrets in the file


def test_kubelet_configuration(rendered):
    kc = by_kind(rendered["init"], "KubeletConfiguration")
    assert kc["apiVersion"] == "kubelet.config.k8s.io/v1beta1"
    assert set(kc) <= KUBELET_FIELDS
    assert kc["failCgroupV1"] is False and kc["serverTLSBootstrap"] is True and kc["rotateCertificates"] is True
    assert kc["maxPods"] == 110 and kc["cgroupDriver"] == "systemd"
    assert kc["systemReserved"]["memory"] == "1Gi" and kc["kubeReserved"]["cpu"] == "500m"
    assert kc["evictionHard"]["memory.available"] == "500Mi"


def test_join_configurations(rendered):
    cp2 = rendered["join"]["cp2"][0]
    gpu1 = rendered["join"]["gpu1"][0]
    gpu2 = rendered["join"]["gpu2"][0]
    for jc in (cp2, gpu1, gpu2):
        bt = jc["discovery"]["bootstrapToken"]
        assert bt["apiServerEndpoint"] == "192.168.10.5:6443"
        assert bt["token"] == "abcdef.0123456789abcdef"
        assert bt["caCertHashes"] == ["sha256:" + "0" * 64]
        assert jc["timeouts"]["discovery"] == "5m0s"
    assert cp2["controlPlane"] == {"localAPIEndpoint": {"advertiseAddress": "192.168.10.12", "bindPort": 6443},
                                   "certificateKey": "f" * 64}
    assert "controlPlane" not in gpu1
    assert gpu1["nodeRegistration"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert gpu2["nodeRegistration"]["taints"] == []
    for jc in (cp2, gpu1, gpu2):
        for taint in jc["nodeRegistration"]["taints"]:
            assert taint["effect"] in TAINT_EFFECTS


def test_kube_vip_manifest_and_cilium_values(rendered):
    pod = rendered["extra"]["kube_vip"]
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    assert env["address"] == "192.168.10.5" and env["vip_arp"] == "true" and env["vip_interface"] == "eth0"
    assert all(isinstance(v, str) for v in env.values())
    assert pod["spec"]["hostNetwork"] is True
    cilium = rendered["extra"]["cilium"]
    assert cilium["kubeProxyReplacement"] is True
    assert cilium["k8sServiceHost"] == "192.168.10.5" and cilium["k8sServicePort"] == 6443
    assert cilium["routingMode"] == "tunnel" and cilium["tunnelProtocol"] == "vxlan"
    assert "ipv4NativeRoutingCIDR" not in cilium


SHARED_KUBEADM = ROOT.parent / "shared" / "k8s" / "kubeadm.xz"


@pytest.fixture(scope="module")
def kubeadm_binary(tmp_path_factory):
    """The real kubeadm: shared/k8s's (decompressed here), else one on PATH."""
    import lzma

    if SHARED_KUBEADM.exists():
        out = tmp_path_factory.mktemp("kubeadm") / "kubeadm"
        with lzma.open(SHARED_KUBEADM) as fin, out.open("wb") as fout:
            shutil.copyfileobj(fin, fout)
        out.chmod(0o755)
        return str(out)
    found = shutil.which("kubeadm")
    if found is None:
        pytest.skip("no kubeadm: neither ../shared/k8s/kubeadm.xz nor one on PATH")
    return found


def test_kubeadm_validates_the_rendered_config(kubeadm_binary, tmp_path_factory):
    """Render for the version of the kubeadm under test (kubeadm refuses a control plane
    more than one minor older than itself), then `kubeadm config validate` every file:
    the init documents and each node's join document."""
    import subprocess

    from .conftest import run_playbook

    version = subprocess.run([kubeadm_binary, "version", "-o", "short"], capture_output=True, text=True,
                             check=True).stdout.strip().lstrip("v")
    tmp = tmp_path_factory.mktemp("render-real")
    inv = inventory(clusterdos_kubernetes_version=version, kubernetes_cluster_fail_cgroup_v1=False)
    result = run_playbook(RENDER, inv, tmp, "-e", f"out_dir={tmp}")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    files = [tmp / "cp1" / "kubeadm-init.yaml"] + sorted(tmp.glob("*.join.yaml"))
    assert len(files) == 6  # init, and a join file per node (cp1..cp3, gpu1, gpu2)
    for path in files:
        check = subprocess.run([kubeadm_binary, "config", "validate", "--config", str(path)],
                               capture_output=True, text=True, check=False)
        assert check.returncode == 0, f"{path.name}: {check.stderr}"
