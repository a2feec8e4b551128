"""runtime_classes: the objects and node labels the role would apply (computed by the
role itself through ansible-playbook; no Kubernetes API is reachable here, so nothing
is applied)."""

from __future__ import annotations

GROUPS = {"gvisor": ["gv-1", "gv-2"], "kata": ["kt-1"], "kube_control_plane": ["cp-1"]}
DUMP = ["__runtime_classes_objects", "__runtime_classes_labels"]


def test_classes_select_the_nodes_that_have_the_runtime(role_runner):
    proc, values = role_runner("runtime_classes", "validate.yml", {}, groups=GROUPS, dump=DUMP)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    objects = {o["metadata"]["name"]: o for o in values["__runtime_classes_objects"]}
    assert objects["gvisor"] == {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "gvisor"}, "handler": "runsc",
        "scheduling": {"nodeSelector": {"clusterdos.io/runtime-gvisor": "true"}}}
    assert objects["kata"]["handler"] == "kata"
    assert objects["kata"]["overhead"] == {"podFixed": {"memory": "160Mi", "cpu": "250m"}}
    assert objects["kata"]["scheduling"]["nodeSelector"] == {"clusterdos.io/runtime-kata": "true"}
    assert sorted((p["class"], p["node"]) for p in values["__runtime_classes_labels"]) == [
        ("gvisor", "gv-1"), ("gvisor", "gv-2"), ("kata", "kt-1")]


def test_class_without_nodes_is_not_applied(role_runner):
    proc, values = role_runner("runtime_classes", "validate.yml", {}, groups={"gvisor": ["gv-1"]}, dump=DUMP)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [o["metadata"]["name"] for o in values["__runtime_classes_objects"]] == ["gvisor"]


def test_handler_follows_the_runtime_roles(role_runner):
    proc, values = role_runner("runtime_classes", "validate.yml", {"gvisor_runtime_handler": "gvisor-runsc"},
                               groups=GROUPS, dump=DUMP)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {o["metadata"]["name"]: o["handler"] for o in values["__runtime_classes_objects"]}["gvisor"] == "gvisor-runsc"


def test_class_name_used_twice_is_refused(role_runner):
    extra = {"runtime_classes_extra": [{"name": "kata", "handler": "kata-fc", "group": "kata"}]}
    proc, _ = role_runner("runtime_classes", "validate.yml", extra, groups=GROUPS)
    assert proc.returncode != 0
    assert "RuntimeClass name(s) used more than once: kata" in proc.stdout
