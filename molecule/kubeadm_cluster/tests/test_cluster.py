"""A kubeadm cluster built by site.yml from real Kubernetes v1.36.2 binaries, checked
on live state: nodes, versions, labels and taints, the control plane, CoreDNS, pods on
every worker talking across nodes directly and through a Service, Secret encryption at
rest read back from etcd itself, and the API audit log."""

from __future__ import annotations

import base64
import json
import textwrap

import pytest
import yaml

from conftest import CONTROL_PLANES, GROUP_VARS, TEST_IMAGE, WORKERS, eventually, http_get, lab_host, run_playbook

ALL = GROUP_VARS["all"]
VERSION = "v" + str(ALL["clusterdos_kubernetes_version"])


def test_every_node_registered_ready_and_on_the_pinned_version(kubectl):
    nodes = {n["metadata"]["name"]: n for n in kubectl.json("get", "nodes")["items"]}
    assert sorted(nodes) == sorted(CONTROL_PLANES + WORKERS)
    for name, node in nodes.items():
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        assert ready["status"] == "True", (name, ready)
        assert node["status"]["nodeInfo"]["kubeletVersion"] == VERSION
        assert node["spec"]["podCIDR"], name


def test_inventory_labels_and_taints_are_on_the_nodes(kubectl):
    nodes = {n["metadata"]["name"]: n for n in kubectl.json("get", "nodes")["items"]}
    for worker in WORKERS:
        labels = nodes[worker]["metadata"]["labels"]
        for key, value in GROUP_VARS["kube_node"]["kubernetes_cluster_node_labels"].items():
            assert labels.get(key) == value, (worker, key)
    for cp in CONTROL_PLANES:
        taints = {(t["key"], t.get("value", ""), t["effect"]) for t in nodes[cp]["spec"].get("taints", [])}
        assert ("node-role.kubernetes.io/control-plane", "", "NoSchedule") in taints
        assert ("clusterdos.io/service-node", "true", "NoSchedule") in taints
    for worker in WORKERS:
        assert not nodes[worker]["spec"].get("taints"), worker


# The lab hosts see this machine's PCI bus and no RDMA device: the hardware fact
# (clusterdos_hw) finds no GPU and no active RDMA port, and the labels say so.
HW_NONE = {"clusterdos.io/gpu.vendor": "none", "clusterdos.io/gpu.count": "0",
           "clusterdos.io/rdma.ib": "false", "clusterdos.io/rdma.roce": "false"}
GPU_PCI = ("n=0; for d in /sys/bus/pci/devices/*; do case \"$(cat $d/vendor):$(cat $d/class)\" in "
           "0x10de:0x03*|0x1002:0x03*|0x1002:0x12*) n=$((n+1));; esac; done; echo $n")


def test_hardware_labels_come_from_the_discovered_facts(kubectl):
    host = lab_host(CONTROL_PLANES[0])
    assert host.check_output(GPU_PCI).strip() == "0", "this machine has GPUs: the expected labels below assume none"
    assert not host.file("/sys/class/infiniband").exists or not host.file("/sys/class/infiniband").listdir()
    nodes = {n["metadata"]["name"]: n for n in kubectl.json("get", "nodes")["items"]}
    for name in CONTROL_PLANES + WORKERS:
        labels = nodes[name]["metadata"]["labels"]
        assert {k: labels.get(k) for k in HW_NONE} == HW_NONE, name
        assert "clusterdos.io/gpu.type" not in labels and "clusterdos.io/gpu.architecture" not in labels, name


def test_nodes_stage_repairs_labels_and_taints_through_the_api(kubectl):
    """Stale hardware labels, a changed inventory label and a removed taint are put back by
    kubernetes.yml's node stage alone (its tag): the facts are read there, the API written
    through kubernetes.core; a label nobody owns stays."""
    worker, cp = WORKERS[0], CONTROL_PLANES[0]
    kubectl.ok("label", "node", worker, "--overwrite", "clusterdos.io/gpu.count=8",
               "clusterdos.io/gpu.architecture=hopper", "clusterdos.io/pool=other", "site.example/keep=me")
    kubectl.ok("taint", "node", cp, "clusterdos.io/service-node:NoSchedule-")
    try:
        res = run_playbook("playbooks/kubernetes.yml", "--tags", "kubernetes_nodes_config")
        assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
        nodes = {n["metadata"]["name"]: n for n in kubectl.json("get", "nodes")["items"]}
        labels = nodes[worker]["metadata"]["labels"]
        assert labels["clusterdos.io/gpu.count"] == "0"
        assert "clusterdos.io/gpu.architecture" not in labels
        assert labels["clusterdos.io/pool"] == "lab-workers"
        assert labels["site.example/keep"] == "me"
        taints = {(t["key"], t.get("value", ""), t["effect"]) for t in nodes[cp]["spec"].get("taints", [])}
        assert ("clusterdos.io/service-node", "true", "NoSchedule") in taints
        again = run_playbook("playbooks/kubernetes.yml", "--tags", "kubernetes_nodes_config")
        assert again.returncode == 0, again.stdout[-5000:]
        assert all(" changed=0 " in line for line in again.stdout.split("PLAY RECAP")[-1].splitlines() if "ok=" in line), \
            again.stdout[-3000:]
    finally:
        kubectl.run("label", "node", worker, "site.example/keep-")


def test_control_plane_components_run_from_the_preloaded_images(kubectl, cp):
    pods = kubectl.json("get", "pods", "-n", "kube-system", "-l", "tier=control-plane")["items"]
    components = {p["metadata"]["labels"]["component"] for p in pods}
    assert components == {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}
    for pod in pods:
        assert all(c["ready"] for c in pod["status"]["containerStatuses"]), pod["metadata"]["name"]
    # Nothing was pulled: every image the nodes run came from the archives (no registry here).
    images = cp.check_output("ctr --namespace k8s.io images list --quiet").split()
    assert f"registry.k8s.io/kube-apiserver:{VERSION}" in images
    assert "registry.k8s.io/pause:3.10.2" in images


def test_etcd_is_healthy_through_the_api_server(kubectl):
    assert "[+]etcd ok" in kubectl.ok("get", "--raw", "/livez?verbose")


def test_containerd_runs_with_its_cri_plugin_on_every_node():
    for name in CONTROL_PLANES + WORKERS:
        out = lab_host(name).check_output("ctr plugins list")
        cri = [line for line in out.splitlines() if line.startswith("io.containerd.grpc.v1") and " cri " in line]
        assert cri and cri[0].split()[-1] == "ok", (name, cri)


POD = textwrap.dedent("""\
    apiVersion: v1
    kind: Pod
    metadata:
      name: web-{node}
      namespace: default
      labels: {{app: web, node: {node}}}
    spec:
      nodeName: {node}
      containers:
        - name: web
          image: {image}
          imagePullPolicy: Never
          command: [sh, -c, "hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
          ports: [{{containerPort: 8080}}]
    """)
SERVICE = textwrap.dedent("""\
    apiVersion: v1
    kind: Service
    metadata: {name: web-first, namespace: default}
    spec:
      selector: {app: web, node: FIRST}
      ports: [{port: 80, targetPort: 8080}]
    """)


@pytest.fixture(scope="module")
def web(kubectl):
    """One busybox web server per worker, and a Service in front of the first one."""
    docs = [POD.format(node=w, image=TEST_IMAGE) for w in WORKERS] + [SERVICE.replace("FIRST", WORKERS[0])]
    # --validate=false: these API server builds cannot serve the OpenAPI v2 document kubectl's
    # client-side check downloads ("$root has invalid property: Extensions", a 503); the
    # server still validates every object it stores.
    kubectl.ok("apply", "--validate=false", "-f", "-", stdin="---\n".join(docs))
    kubectl.wait("condition=Ready", "pod", "-l", "app=web", "-n", "default")
    pods = {p["spec"]["nodeName"]: p for p in kubectl.json("get", "pods", "-n", "default", "-l", "app=web")["items"]}
    yield pods
    kubectl.run("delete", "pod,service", "-n", "default", "-l", "app=web", "--wait=false")
    kubectl.run("delete", "service", "web-first", "-n", "default", "--wait=false")


def test_a_pod_runs_on_each_worker(web):
    assert sorted(web) == WORKERS
    for node, pod in web.items():
        assert pod["status"]["phase"] == "Running", node
        assert pod["status"]["podIP"], node


def test_pod_to_pod_across_nodes(kubectl, web):
    first, second = WORKERS[0], WORKERS[1]
    assert http_get(kubectl, f"web-{second}", web[first]["status"]["podIP"]) == f"web-{first}"
    assert http_get(kubectl, f"web-{first}", web[second]["status"]["podIP"]) == f"web-{second}"


def test_service_and_dns_across_nodes(kubectl, web):
    """The Service name resolves through CoreDNS to its ClusterIP, and the ClusterIP (kube-proxy's
    rules) reaches the pod on the other worker."""
    cluster_ip = kubectl.json("get", "service", "web-first", "-n", "default")["spec"]["clusterIP"]
    answer = kubectl.ok("exec", "-n", "default", f"web-{WORKERS[1]}", "--", "nslookup",
                        "web-first.default.svc.cluster.local")
    assert cluster_ip in answer
    assert eventually(lambda: http_get(kubectl, f"web-{WORKERS[1]}", cluster_ip, 80), timeout=90) == f"web-{WORKERS[0]}"


def test_coredns_answers_a_lookup_from_a_pod(kubectl, web):
    out = kubectl.ok("exec", "-n", "default", f"web-{WORKERS[0]}", "--", "nslookup",
                     "kubernetes.default.svc.cluster.local")
    service_ip = kubectl.json("get", "service", "kubernetes", "-n", "default")["spec"]["clusterIP"]
    assert service_ip in out


ETCD_READ = textwrap.dedent("""\
    import base64, json, ssl, sys, urllib.request
    pki = "/etc/kubernetes/pki"
    ctx = ssl.create_default_context(cafile=pki + "/etcd/ca.crt")
    ctx.load_cert_chain(pki + "/apiserver-etcd-client.crt", pki + "/apiserver-etcd-client.key")
    body = json.dumps({"key": base64.b64encode(sys.argv[1].encode()).decode()}).encode()
    req = urllib.request.Request("https://127.0.0.1:2379/v3/kv/range", data=body)
    kvs = json.load(urllib.request.urlopen(req, context=ctx, timeout=10)).get("kvs", [])
    print(base64.b64decode(kvs[0]["value"])[:64].decode("latin-1") if kvs else "")
    """)


def test_secrets_are_encrypted_at_rest_in_etcd(kubectl, cp):
    kubectl.run("delete", "secret", "clusterdos-probe", "-n", "default", "--ignore-not-found")
    kubectl.ok("create", "secret", "generic", "clusterdos-probe", "-n", "default", "--from-literal=password=plain-text-here")
    try:
        stored = cp.check_output("python3 -c %s %s", ETCD_READ, "/registry/secrets/default/clusterdos-probe")
        assert stored.startswith("k8s:enc:secretbox:v1:key1:"), stored
        assert "plain-text-here" not in stored
        # The API still hands the value back decrypted.
        secret = kubectl.json("get", "secret", "clusterdos-probe", "-n", "default")
        assert base64.b64decode(secret["data"]["password"]) == b"plain-text-here"
    finally:
        kubectl.run("delete", "secret", "clusterdos-probe", "-n", "default", "--ignore-not-found")


def test_api_audit_log_records_secret_access(cp, kubectl):
    kubectl.run("get", "secrets", "-n", "kube-system")
    log = cp.file("/var/log/kubernetes/audit/audit.log")
    assert log.exists
    events = [json.loads(line) for line in log.content_string.splitlines()[-2000:] if line.startswith("{")]
    secret_reads = [e for e in events if (e.get("objectRef") or {}).get("resource") == "secrets"]
    assert secret_reads, "no audit event for secrets"
    assert {e["level"] for e in secret_reads} == {"Metadata"}


def test_kubeadm_config_file_has_no_comment_only_document(cp):
    text = cp.file("/etc/kubernetes/clusterdos/kubeadm-init.yaml").content_string
    docs = [d for d in yaml.safe_load_all(text)]
    assert all(isinstance(d, dict) and d.get("kind") for d in docs), [type(d) for d in docs]


# The site's own RuntimeClass (runtime_classes_extra in molecule.yml): for the kube_node group.
RUNTIME_CLASS = ALL["runtime_classes_extra"][0]
RUNTIME_LABEL = f"clusterdos.io/runtime-{RUNTIME_CLASS['name']}"


def _runtime_class_nodes(kubectl) -> set[str]:
    return {n["metadata"]["name"] for n in kubectl.json("get", "nodes")["items"]
            if n["metadata"].get("labels", {}).get(RUNTIME_LABEL) == "true"}


def test_runtime_class_selects_its_groups_nodes_and_runs_a_pod_there(kubectl):
    rc = kubectl.json("get", "runtimeclass", RUNTIME_CLASS["name"])
    assert rc["handler"] == RUNTIME_CLASS["handler"]
    assert rc["scheduling"] == {"nodeSelector": {RUNTIME_LABEL: "true"}}
    assert _runtime_class_nodes(kubectl) == set(WORKERS)
    # No sandbox runtime host in this inventory: no gvisor or kata class that no node could run.
    assert kubectl.run("get", "runtimeclass", "gvisor").rc != 0 and kubectl.run("get", "runtimeclass", "kata").rc != 0
    # The class works end to end: the scheduler places its pod by the class's selector and the
    # kubelet runs it through containerd's handler of that name.
    kubectl.run("delete", "pod", "in-class", "-n", "default", "--ignore-not-found")
    kubectl.ok("run", "in-class", "-n", "default", f"--image={TEST_IMAGE}", "--image-pull-policy=Never",
               "--overrides", json.dumps({"spec": {"runtimeClassName": RUNTIME_CLASS["name"]}}), "--", "sleep", "3600")
    try:
        kubectl.wait("condition=Ready", "pod/in-class", "-n", "default")
        pod = kubectl.json("get", "pod", "in-class", "-n", "default")
        assert pod["spec"]["nodeName"] in WORKERS
        assert pod["spec"]["nodeSelector"] == {RUNTIME_LABEL: "true"}
    finally:
        kubectl.run("delete", "pod", "in-class", "-n", "default", "--wait=false", "--grace-period=0", "--force")


def test_runtime_classes_replace_a_class_whose_handler_changed(kubectl):
    """The cluster holds the class with another handler (made before the inventory's changed;
    the API refuses to change a handler in place): playbooks/runtime_classes.yml removes it
    and creates it again, from the first control plane only. test_idempotence.py's run of
    site.yml afterwards is this stage's second run: nothing changes."""
    kubectl.ok("delete", "runtimeclass", RUNTIME_CLASS["name"])
    # --validate=false: no client-side schema download (a busy API server can answer it 503); the server checks.
    kubectl.ok("create", "--validate=false", "-f", "-", stdin=json.dumps({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": RUNTIME_CLASS["name"]},
        "handler": "crun"}))
    res = run_playbook("playbooks/runtime_classes.yml", env_extra={"ANSIBLE_STDOUT_CALLBACK": "ansible.posix.json"})
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    doc = json.loads(res.stdout[res.stdout.index("{"):])
    replaced = [task["hosts"][CONTROL_PLANES[0]] for play in doc["plays"] for task in play["tasks"]
                if task["task"]["name"].endswith("Remove the RuntimeClasses whose handler changed")
                and CONTROL_PLANES[0] in task["hosts"]]
    assert replaced and [r["item"] for r in replaced[0]["results"]] == [RUNTIME_CLASS["name"]], replaced
    assert set(doc["stats"]) <= {CONTROL_PLANES[0], "localhost"}, doc["stats"]
    assert kubectl.json("get", "runtimeclass", RUNTIME_CLASS["name"])["handler"] == RUNTIME_CLASS["handler"]
    assert _runtime_class_nodes(kubectl) == set(WORKERS)
