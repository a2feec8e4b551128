"""The addons role's checks and plan, run by ansible-playbook on localhost.

Only the role's addons_validate tasks run (no cluster, no chart download): this proves
the role's derived values and generated objects (Kueue queues, GPU operator driver
mode) are built as data, and that bad input stops before any release.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[4]
DATA = ROOT / "tests" / "unit" / "addons"


def _play(tmp_path, extra):
    out = tmp_path / "plan.json"
    env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    extra = {"ansible_python_interpreter": sys.executable, "plan_out": str(out), "addons_verify_charts": False, "addons_check_api": False, **extra}
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(DATA / "role_inventory.yml"), "--limit", "localhost",
         "--tags", "addons_validate", "-e", json.dumps(extra), str(DATA / "role_plan.yml")],
        capture_output=True, text=True, check=False, env=env, cwd=ROOT,
    )
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_role_plans_a_gpu_cluster(tmp_path):
    proc, result = _play(tmp_path, {
        "addons_enabled": ["cert_manager", "kueue", "node_feature_discovery", "gpu_operator", "dashboard"],
        "addons_gpu_operator_host_driver": False,
        "addons_gpu_operator_host_toolkit": True,
        "addons_kueue_local_queue_namespaces": ["default", "team-a"],
        "addons_image_registry_mirror": "registry.site:5000",
        "addons_values": {"dashboard": {"kong": {"proxy": {"type": "NodePort"}}}},
    })
    assert proc.returncode == 0, proc.stdout[-3000:]
    plan = {r["name"]: r for r in result["plan"]["releases"]}
    order = result["plan"]["order"]
    assert order.index("node_feature_discovery") < order.index("gpu_operator")
    assert order.index("cert_manager") < order.index("kueue")
    gpu = plan["gpu_operator"]["release_values"]
    assert gpu["driver"]["enabled"] is True and gpu["toolkit"]["enabled"] is False and gpu["nfd"] == {"enabled": False}
    assert gpu["driver"]["repository"] == "registry.site:5000/nvidia"
    assert "cilium" not in plan
    assert plan["dashboard"]["release_values"]["kong"]["proxy"]["tls"]["nodePort"] == 32443
    kinds = [(m["kind"], m["metadata"].get("namespace")) for m in result["extra_manifests"]["kueue"]]
    assert kinds == [("ResourceFlavor", None), ("ClusterQueue", None), ("LocalQueue", "default"), ("LocalQueue", "team-a")]
    quota = result["extra_manifests"]["kueue"][1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    # Two hosts in the inventory's gpu_nvidia group, eight GPUs each.
    assert {"name": "nvidia.com/gpu", "nominalQuota": 16} in quota
    assert [m["kind"] for m in plan["cert_manager"]["manifests"]] == ["ClusterIssuer", "Certificate", "ClusterIssuer"]


def test_role_stops_on_a_missing_dependency_before_any_release(tmp_path):
    proc, result = _play(tmp_path, {"addons_enabled": ["kueue"]})
    assert proc.returncode != 0 and result is None
    assert "kueue is enabled but depends on ['cert_manager'], which is not: enable cert_manager too" in proc.stdout


def test_role_leaves_cilium_to_the_kubernetes_stage(tmp_path):
    """One Cilium install path: the Kubernetes stage's (tests/apiserver/test_kubernetes_cilium_real_api.py)."""
    proc, result = _play(tmp_path, {"addons_enabled": ["cilium", "cert_manager"],
                                    "addons_values": {"cilium": {"hubble": {"enabled": True}}}})
    assert proc.returncode != 0 and result is None
    out = " ".join(proc.stdout.split())
    assert "Cilium is the Kubernetes stage's pod network" in out
    assert "Remove cilium from addons_enabled and its values from addons_values (put them in kubernetes_cluster_cilium_values)" in out


def test_role_stops_when_the_api_cannot_be_read(tmp_path):
    """No API server here: the probe must fail with what the add-on host lacks, before the plan and any release."""
    proc, result = _play(tmp_path, {"addons_check_api": True, "addons_kubeconfig": str(tmp_path / "missing.conf"),
                                    "addons_enabled": ["cert_manager"]})
    assert proc.returncode != 0 and result is None
    assert f"cannot read the Kubernetes API with addons_kubeconfig={tmp_path / 'missing.conf'}" in proc.stdout
    assert "Check the catalog and the enabled add-ons" not in proc.stdout


def test_role_stops_on_a_storage_class_name_used_twice(tmp_path):
    proc, result = _play(tmp_path, {"addons_enabled": ["local_path", "shared_path"],
                                    "addons_shared_path_nfs_server": "10.0.0.5",
                                    "addons_values": {"shared_path": {"storageClass": {"name": "local-path"}}}})
    assert proc.returncode != 0 and result is None
    assert "storage class name(s) used more than once: local-path (by local_path, shared_path)" in proc.stdout
