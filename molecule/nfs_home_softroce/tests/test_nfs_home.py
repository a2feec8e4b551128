"""Verify NFS /home on QEMU VMs (their own Debian kernels): the server exports /home and
a scratch area to exactly the client VMs (one in this scenario); every client mounts them
from /etc/fstab (systemd mount units); a file written through a client's mount is read
through every client's mount and on the server's disk, and one written on the server is
read through the clients. The real reboot is in test_reboot.py (runs last).
Expectations come from the lab's inventory (addresses), not from files the roles wrote.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest
import testinfra
import yaml

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
LAB = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]
HOSTS = LAB["hosts"]
SERVER = "nfs-server"
CLIENTS = sorted(LAB["children"]["nfs_client"]["hosts"])
MOUNTS = {"/home": "/home", "/scratch": "/srv/scratch"}
# A user that exists on no host: files it owns keep its numeric id end to end.
UID = 4242


def _host(name):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=str(EPHEMERAL / "inventory"))


@pytest.fixture(scope="module")
def server():
    return _host(SERVER)


@pytest.fixture(scope="module")
def clients():
    return [_host(name) for name in CLIENTS]


def test_server_running_and_exports_only_to_clients(server):
    assert server.service("nfs-server").is_running and server.service("nfs-server").is_enabled
    exports = server.check_output("exportfs -v")
    client_ips = sorted(HOSTS[c]["clusterdos_node_ip"] for c in CLIENTS)
    for path in MOUNTS.values():
        lines = [line for line in exports.replace("\n\t", " ").splitlines() if line.startswith(path + " ")]
        assert sorted(line.split()[1].split("(")[0] for line in lines) == client_ips, exports
    assert HOSTS[SERVER]["clusterdos_node_ip"] not in exports
    assert "root_squash" in exports and "no_root_squash" not in exports


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize(("mountpoint", "export"), sorted(MOUNTS.items()))
def test_client_mounts_nfs42_from_server(client, mountpoint, export):
    host = _host(client)
    mount = host.mount_point(mountpoint)
    assert mount.exists and mount.filesystem == "nfs4"
    assert mount.device == f"{HOSTS[SERVER]['clusterdos_node_ip']}:{export}"
    assert "vers=4.2" in mount.options and "hard" in mount.options


@pytest.mark.parametrize("client", CLIENTS)
def test_mounts_come_back_at_boot(client):
    """fstab lines become systemd mount units (the generator runs at every boot); the
    unit is active and pulled in by remote-fs.target."""
    host = _host(client)
    assert host.check_output("systemctl show -p ActiveState --value home.mount") == "active"
    assert "/etc/fstab" in host.check_output("systemctl show -p SourcePath --value home.mount")
    assert "home.mount" in host.check_output("systemctl list-dependencies --plain remote-fs.target")


def _as_user(command: str) -> str:
    return f"setpriv --reuid={UID} --regid={UID} --clear-groups sh -c '{command}'"


@pytest.mark.parametrize("writer", CLIENTS)
def test_file_written_through_a_client_is_read_everywhere(server, writer):
    token = uuid.uuid4().hex
    home = f"/home/clusterdos-{token[:8]}"
    server.check_output(f"install -d -o {UID} -g {UID} -m 0700 {home}")
    try:
        _host(writer).check_output(_as_user(f"echo {token} > {home}/note"))
        for reader in CLIENTS:
            assert _host(reader).check_output(_as_user(f"cat {home}/note")) == token, reader
        # On the server's own disk, owned by the user (not squashed to nobody).
        assert server.file(f"{home}/note").content_string.strip() == token
        assert server.file(f"{home}/note").uid == UID
    finally:
        server.run(f"rm -rf {home}")


def test_file_written_on_the_server_is_read_through_every_client(server, clients):
    token = uuid.uuid4().hex
    home = f"/home/clusterdos-{token[:8]}"
    server.check_output(f"install -d -o {UID} -g {UID} -m 0700 {home}")
    try:
        server.check_output(_as_user(f"echo {token} > {home}/from-server"))
        for client in clients:
            assert client.check_output(_as_user(f"cat {home}/from-server")) == token
    finally:
        server.run(f"rm -rf {home}")


def test_root_is_squashed_on_home(clients):
    probe = clients[0].run(f"touch /home/root-was-here-{uuid.uuid4().hex[:8]}")
    assert probe.rc != 0 and "Permission denied" in probe.stderr


def test_scratch_is_shared_and_sticky(server, clients):
    """A user's file in the world-writable scratch area is read through every client and on
    the server; another user cannot delete it (sticky bit). Written as a user, not root:
    root is squashed to nobody, and Debian's fs.protected_regular=2 then refuses root's
    O_CREAT|O_TRUNC of a file nobody owns in a sticky directory (kernel behaviour)."""
    name = f"/scratch/clusterdos-{uuid.uuid4().hex[:8]}"
    clients[0].check_output(_as_user(f"echo scratch > {name}"))
    try:
        for client in clients:
            assert client.check_output(f"cat {name}") == "scratch"
        assert server.file(f"/srv{name}").content_string.strip() == "scratch"
        assert server.file(f"/srv{name}").uid == UID
        assert server.file("/srv/scratch").mode == 0o1777
        other = clients[-1].run(f"setpriv --reuid={UID + 1} --regid={UID + 1} --clear-groups rm -f {name}")
        assert other.rc != 0 and "Operation not permitted" in other.stderr, other.stderr
        assert server.file(f"/srv{name}").exists
    finally:
        server.run(f"rm -f /srv{name}")


def test_nfsd_runs_the_configured_threads(server):
    """nfs_server_threads (12 in this scenario, 8 is the default) is in the server's
    nfs.conf drop-in, and the running nfsd has that many threads: the role restarted it."""
    conf = server.file("/etc/nfs.conf.d/clusterdos-threads.conf").content_string
    assert "threads = 12" in conf or "threads=12" in conf, conf
    assert server.check_output("cat /proc/fs/nfsd/threads").strip() == "12"


def test_the_nfs_client_tag_alone_still_checks_the_clients_in_the_stages_host_checks(playbook):
    """storage.yml --tags nfs_client: the role play's tag also selects the stage's host checks
    (before, that play was tagged storage and preflight only, and each client was checked only
    in its own play, just before its changes); on the converged client nothing changes."""
    res = playbook("storage.yml", "--tags", "nfs_client")
    out = res.stdout
    assert res.returncode == 0, out[-4000:] + res.stderr[-2000:]
    checks = out.split("PLAY [Storage - host checks", 1)[1].split("PLAY [Storage - NFS server", 1)[0]
    check = "TASK [clusterdos.cluster.nfs_client : Check every mount has a server]"
    assert check in checks, checks
    assert all(f"ok: [{name}]" in checks.split(check, 1)[1].split("TASK [", 1)[0] for name in CLIENTS), checks
    assert "TASK [Apply the nfs_server role]" not in out
    assert not re.search(r"changed=[1-9]", out), out[-3000:]


def test_an_add_leaves_alone_a_server_whose_clients_the_node_is_not_among(server, playbook):
    """storage.yml -e node=CLIENT where the server exports to a group the node is not in (the
    server's client group set to its own group, as a site whose second NFS server serves other
    hosts): the server's play ends for it before its role (meta: end_host), so its exports
    stay as they are, and the node's client play still runs. Were the server converged with
    that group, its exports would lose the client (a changed drop-in, changed=1): the
    counterpart of the add test below, where the node is a client and the server converges."""
    name = CLIENTS[0]
    drop_in = "/etc/exports.d/clusterdos.exports"
    before = server.check_output(f"sha256sum {drop_in}")
    res = playbook("storage.yml", "-e", json.dumps({"node": name, "nfs_server_client_group": "storage_server"}))
    out = res.stdout
    assert res.returncode == 0, out[-5000:] + res.stderr[-2000:]
    server_play = out.split("PLAY [Storage - NFS server]", 1)[1].split("PLAY [", 1)[0]
    assert "TASK [Leave this server alone when the node added is neither it nor one of its clients]" in server_play
    assert "TASK [Apply the nfs_server role]" not in server_play, server_play
    client_play = out.split("PLAY [Storage - NFS clients]", 1)[1].split("PLAY [", 1)[0]
    assert f"ok: [{name}]" in client_play, client_play
    assert SERVER not in client_play, client_play
    assert server.check_output(f"sha256sum {drop_in}") == before
    assert not re.search(r"changed=[1-9]", out), out[-3000:]


def test_a_client_added_with_add_node_is_exported_to_and_mounts(server, clients, playbook):
    """add_node.yml -e node=CLIENT for an NFS client its server does not export to yet: the
    server's exports learn it in the same run, then the client mounts. The new client is
    stood in for by the client VM: its exports are taken out of the server's drop-in (as
    before the host was in the inventory) and its mounts are stopped. Before, the NFS
    server's play was limited to the node like the other stages, so it had no host in an
    add: the exports stayed without the client and its mount was refused ("access denied by
    server"), failing the add."""
    name, client = CLIENTS[0], clients[0]
    address = HOSTS[name]["clusterdos_node_ip"]
    drop_in = "/etc/exports.d/clusterdos.exports"
    # The scenario's one client: its export lines go whole (a line left without clients
    # would export to every host).
    assert CLIENTS == [name]
    server.check_output(f"sed -i '/ {address}(/d' {drop_in} && exportfs -ra")
    assert address not in server.check_output("exportfs -v")
    client.check_output("systemctl stop scratch.mount home.mount")
    assert not client.mount_point("/home").exists
    res = playbook("add_node.yml", "-e", json.dumps({"node": name}))
    assert res.returncode == 0, res.stdout[-5000:] + res.stderr[-2000:]
    exports = server.check_output("exportfs -v").replace("\n\t", " ")
    for path in MOUNTS.values():
        assert any(line.startswith(path + " ") and address in line for line in exports.splitlines()), exports
    for mountpoint, export in MOUNTS.items():
        mount = client.mount_point(mountpoint)
        assert mount.exists and mount.device == f"{HOSTS[SERVER]['clusterdos_node_ip']}:{export}", mountpoint
    token = uuid.uuid4().hex
    server.check_output(f"echo {token} > /srv/scratch/added-{token}")
    try:
        assert client.check_output(f"cat /scratch/added-{token}") == token
    finally:
        server.run(f"rm -f /srv/scratch/added-{token}")
