"""Bad storage input is refused by the roles' own validate tasks, run for real on this
machine (read-only: stat and assert), before any change."""

from __future__ import annotations


def test_nfs_export_of_missing_directory_is_refused(role_runner, tmp_path):
    clients = [{"host": "10.0.0.0/24"}]
    exports = {"nfs_server_exports": [{"path": str(tmp_path), "clients": clients},
                                      {"path": "/srv/clusterdos-no-such-dir", "clients": clients}]}
    proc, _ = role_runner("nfs_server", "validate.yml", exports)
    assert proc.returncode != 0
    assert "has no directory /srv/clusterdos-no-such-dir to export" in proc.stdout
    assert f"has no directory {tmp_path} " not in proc.stdout


def test_nfs_export_marked_create_is_accepted(role_runner):
    exports = {"nfs_server_exports": [{"path": "/srv/clusterdos-no-such-dir", "create": True,
                                       "clients": [{"host": "10.0.0.0/24"}]}]}
    proc, _ = role_runner("nfs_server", "validate.yml", exports)
    assert proc.returncode == 0, proc.stdout


def test_nfs_export_without_clients_is_refused(role_runner, tmp_path):
    proc, _ = role_runner("nfs_server", "validate.yml",
                          {"nfs_server_exports": [{"path": str(tmp_path)}], "nfs_server_client_group": "nobody"})
    assert proc.returncode != 0
    assert f"Export {tmp_path} has no clients" in proc.stdout


def test_lustre_mount_with_malformed_nid_is_refused(role_runner):
    mounts = {"lustre_client_mounts": [{"fsname": "scratch", "mgs_nids": ["10.0.0.1@tcp0", "192.168.1.300@o2ib"],
                                        "path": "/lustre/scratch"}],
              "lustre_client_lnet_networks": [{"net": "tcp", "interfaces": ["eth0"]}]}
    proc, _ = role_runner("lustre_client", "validate.yml", mounts, gather_facts=True)
    assert proc.returncode != 0
    assert "lustre mount scratch: NID '192.168.1.300@o2ib': '192.168.1.300' is not an IPv4 address" in proc.stdout
    assert "10.0.0.1@tcp0'" not in proc.stdout


def test_lustre_well_formed_input_passes_and_selects_packages(role_runner):
    mounts = {"lustre_client_mounts": [{"fsname": "scratch", "mgs_nids": [["10.0.0.1@tcp", "192.168.1.2@o2ib"]],
                                        "path": "/lustre/scratch"}],
              "lustre_client_lnet_networks": [{"net": "tcp", "interfaces": ["eth0"]}, {"net": "o2ib", "interfaces": ["ib0"]}]}
    proc, values = role_runner("lustre_client", "validate.yml", mounts, gather_facts=True,
                               dump=["__lustre_client_repo", "__lustre_client_packages", "__lustre_client_lnet_config"])
    assert proc.returncode == 0, proc.stdout
    # This machine is Debian 12 with a kernel no repository has kmod packages for: DKMS.
    assert values["__lustre_client_packages"]["module_type"] == "dkms"
    assert "lustre-client-modules-dkms" in values["__lustre_client_packages"]["packages"]
    assert values["__lustre_client_repo"] == "https://downloads.whamcloud.com/public/lustre/lustre-2.15.7/debian12/client"
    assert [n["net type"] for n in values["__lustre_client_lnet_config"]["net"]] == ["tcp", "o2ib"]


def test_lustre_repository_from_the_site_mirror(role_runner):
    proc, values = role_runner("lustre_client", "validate.yml", {"clusterdos_package_mirror": "http://mirror.example/"},
                               gather_facts=True, dump=["__lustre_client_repo"])
    assert proc.returncode == 0, proc.stdout
    assert values["__lustre_client_repo"] == "http://mirror.example/lustre/lustre-2.15.7/debian12/client"


def test_lustre_malformed_lnet_network_is_refused(role_runner):
    proc, _ = role_runner("lustre_client", "validate.yml",
                          {"lustre_client_lnet_networks": [{"net": "ib0", "interfaces": ["ib0"]}]}, gather_facts=True)
    assert proc.returncode != 0
    assert "'ib0' is not an LNet network" in proc.stdout
