"""remove_node.yml and kubernetes_add_node.yml for a control plane in local_haproxy mode, for
real (runs first, file order, on the fresh cluster; every member is back afterwards).

- remove_node.yml takes the last member out: drained, kubeadm reset, its Node deleted. It is
  no longer an etcd member (read from etcd itself), and the other members' haproxy stops
  balancing over it at once (the running haproxy's servers, read through its master socket,
  and its configuration) although the inventory still names it; the API answers through
  each of them. Before, the Node was deleted ahead of kubeadm reset, which then could not
  find its etcd member and left it (a voter that never answers; a later join of the host
  failed in etcd), and the others' haproxy kept it until the next converge.
- kubernetes_add_node.yml joins it again as a control plane: it is Ready with its own etcd
  and API server, a pod runs there, and every other member's haproxy balances over it again (before, the add
  changed only the node itself, so the others never used the added API server until a
  whole converge).
- The same member with its Node deleted from the API first (kubelet stopped): kubeadm reset
  cannot find its etcd member and only warns, so the role removes it through etcd; then it
  joins once more."""

from __future__ import annotations

import json

from conftest import MEMBERS, etcd_members, haproxy_servers, host, kubectl_json, node_ready, run_playbook, system_pods_ready, tail, wait_until

LEAVING = MEMBERS[-1]
OTHERS = MEMBERS[:-1]
CFG = "/etc/haproxy/haproxy.cfg"
FALLBACK = "clusterdos.cluster.kubernetes_cluster : Remove this host's etcd member that kubeadm reset left"


def section(run, header: str) -> str:
    """The output under ``header`` (``PLAY [name]`` or ``TASK [name]``) up to the next play or task
    (the test fails when the run has no such header)."""
    parts = run.stdout.split(header, 1)
    assert len(parts) == 2, f"no {header!r}:\n{tail(run)}"
    rest = parts[1].split("\nPLAY [", 1)[0]
    return rest if header.startswith("PLAY [") else rest.split("\nTASK [", 1)[0]


def api_through_local_haproxy(name: str):
    ready = host(name).run("kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s get --raw /readyz")
    assert ready.rc == 0 and ready.stdout.strip() == "ok", (name, ready.stdout, ready.stderr)


def control_plane_pods_on(name: str) -> set:
    pods = kubectl_json("get", "pods", "-n", "kube-system", "-l", "tier=control-plane")["items"]
    return {p["metadata"]["labels"]["component"] for p in pods
            if p["spec"].get("nodeName") == name and p["status"].get("phase") == "Running"}


def test_a_removed_control_plane_leaves_every_other_nodes_local_haproxy():
    run = run_playbook("remove_node.yml", {"node": LEAVING})
    assert run.returncode == 0, tail(run)
    others_lb = section(run, "PLAY [Remove node - the other nodes' API load balancer forgets a removed control plane]")
    for name in OTHERS:
        assert f"changed: [{name}]" in others_lb, others_lb
        cfg = host(name).file(CFG).content_string
        assert f"server {LEAVING} " not in cfg, (name, cfg)
        for member in OTHERS:
            assert f"server {member} " in cfg, (name, member, cfg)
        assert host(name).service("haproxy").is_running, name
        assert haproxy_servers(name) == OTHERS, name
        api_through_local_haproxy(name)
    assert f"[{LEAVING}]" not in others_lb, others_lb
    nodes = [n["metadata"]["name"] for n in kubectl_json("get", "nodes")["items"]]
    assert sorted(nodes) == OTHERS, nodes
    # It left etcd: two voting members remain, kubeadm reset removed its member itself (the
    # role's check found none left).
    assert etcd_members() == OTHERS
    assert f"changed: [{LEAVING}" not in section(run, f"TASK [{FALLBACK}]"), tail(run)
    # kubeadm reset ran on the host: no kubelet configuration, no etcd data left there.
    leaving = host(LEAVING)
    assert not leaving.file("/etc/kubernetes/kubelet.conf").exists
    assert not leaving.file("/var/lib/etcd/member").exists


def pod_runs_on(node: str):
    """A pod bound to ``node`` (the busybox image from the site mirror's archives) runs to
    completion: its sandbox and pod network are set up there. Found with it: after a reset, the
    bridge CNI's cni0 kept the node's old pod gateway address while the node joined again got
    another pod CIDR, so every sandbox there failed ("failed to set bridge addr")."""
    name = "rejoin-check"
    kubectl = "kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s "
    first = host(MEMBERS[0])
    first.run(kubectl + f"delete pod {name} --ignore-not-found --wait=true")
    overrides = json.dumps({"spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}]}})
    out = first.run(kubectl + f"run {name} --image=registry.k8s.io/e2e-test-images/busybox:1.36.1-1 "
                    f"--image-pull-policy=Never --restart=Never --overrides='{overrides}' -- true")
    assert out.rc == 0, out.stderr
    try:
        waited = first.run(kubectl + f"wait pod/{name} --for=jsonpath={{.status.phase}}=Succeeded --timeout=120s")
        events = first.run(kubectl + f"get events --field-selector involvedObject.name={name} -o custom-columns=R:.reason,M:.message")
        assert waited.rc == 0, (waited.stderr, events.stdout)
    finally:
        first.run(kubectl + f"delete pod {name} --ignore-not-found --wait=false")


def join_again():
    """kubernetes_add_node.yml for the removed member, and what the test reads after it."""
    run = run_playbook("kubernetes_add_node.yml", {"node": LEAVING})
    assert run.returncode == 0, tail(run)
    others_lb = section(run, "PLAY [Kubernetes add node - the other nodes' API load balancer learns a new control plane]")
    for name in OTHERS:
        assert f"changed: [{name}]" in others_lb, others_lb
    assert f"[{LEAVING}]" not in others_lb, others_lb
    wait_until(f"{LEAVING} Ready", lambda: node_ready(LEAVING))
    wait_until("every control-plane pod Ready", system_pods_ready)
    assert {"etcd", "kube-apiserver"} <= control_plane_pods_on(LEAVING)
    assert etcd_members() == MEMBERS
    pod_runs_on(LEAVING)
    for name in OTHERS:
        cfg = host(name).file(CFG).content_string
        for member in MEMBERS:
            assert f"server {member} " in cfg, (name, member, cfg)
        assert host(name).service("haproxy").is_running, name
        assert haproxy_servers(name) == MEMBERS, name
        api_through_local_haproxy(name)


def test_an_added_control_plane_joins_every_other_nodes_local_haproxy():
    join_again()


def test_a_control_plane_deleted_from_the_api_first_still_leaves_etcd():
    """An operator deleted the Node (kubectl delete node) before remove_node.yml: kubeadm reset
    then cannot read its own member from the cluster and only warns; the role's check finds
    the member left and removes it through etcd (a real run of that branch)."""
    assert host(LEAVING).run("systemctl stop kubelet").rc == 0
    out = host(MEMBERS[0]).run("kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s delete node " + LEAVING)
    assert out.rc == 0, out.stderr
    run = run_playbook("remove_node.yml", {"node": LEAVING})
    assert run.returncode == 0, tail(run)
    assert f"changed: [{LEAVING} -> {MEMBERS[0]}" in section(run, f"TASK [{FALLBACK}]"), tail(run)
    assert etcd_members() == OTHERS
    for name in OTHERS:
        assert haproxy_servers(name) == OTHERS, name
        api_through_local_haproxy(name)


def test_the_control_plane_joins_again():
    join_again()
