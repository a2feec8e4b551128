"""kubernetes_add_node.yml for a control plane in local_haproxy mode (runs first, file order,
on the fresh cluster): every other node's haproxy learns the new API server.

The control plane added is stood in for by the last member: its backend is taken out of the
other members' haproxy configuration (as before it was in the inventory) and they reload,
then `kubernetes_add_node.yml -e node=LAST` runs. The member has joined already, so the
join itself is skipped; what the test reads is the other nodes' load balancer. Before,
the add changed only the node itself (and the first control plane's token), so the other
nodes never balanced over the added control plane until a whole converge."""

from __future__ import annotations

from conftest import MEMBERS, host, run_playbook, tail

ADDED = MEMBERS[-1]
OTHERS = MEMBERS[:-1]
CFG = "/etc/haproxy/haproxy.cfg"


def test_an_added_control_plane_joins_every_other_nodes_local_haproxy():
    for name in OTHERS:
        h = host(name)
        h.check_output(f"sed -i '/^    server {ADDED} /d' {CFG} && systemctl reload haproxy")
        assert f"server {ADDED} " not in h.file(CFG).content_string, name
    run = run_playbook("kubernetes_add_node.yml", {"node": ADDED})
    assert run.returncode == 0, tail(run)
    play = run.stdout.split("PLAY [Kubernetes add node - the other nodes' API load balancer learns a new control plane]", 1)
    assert len(play) == 2, tail(run)
    for name in OTHERS:
        h = host(name)
        cfg = h.file(CFG).content_string
        for member in MEMBERS:
            assert f"server {member} " in cfg, (name, member, cfg)
        assert h.service("haproxy").is_running, name
        # The API through this node's haproxy, which now also balances over the added member.
        ready = h.run("kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=20s get --raw /readyz")
        assert ready.rc == 0 and ready.stdout.strip() == "ok", (name, ready.stdout, ready.stderr)
    # That play wrote each other node's configuration (the added member is not in it).
    section = play[1].split("\nPLAY [", 1)[0]
    for name in OTHERS:
        assert f"changed: [{name}]" in section, section
    assert f"[{ADDED}]" not in section, section
