"""The roles' own wiring, played on this machine (connection local, read-only entry points):
the flag files clusterd_master and clusterd_agent would write for an inventory, and the
zoo.cfg keys of the zookeeper role. Nothing is installed or written; the daemons
themselves run in molecule/clusterd (ZooKeeper always, ClusterD when packages exist)."""

from __future__ import annotations

GROUPS = {"zookeeper": ["zk1", "zk2", "zk3"], "clusterd_master": ["zk1", "zk2", "zk3"], "clusterd_agent": ["localhost"]}


def test_master_flag_files_from_the_inventory(role_runner):
    proc, values = role_runner("clusterd_master", "validate.yml", {
        "inventory_hostname_short": "zk1", "clusterd_master_flags": {"offer_timeout": None, "max_agent_ping_timeouts": 10},
        "clusterd_master_authenticate_frameworks": True,
        "clusterd_master_credentials": [{"principal": "compose", "secret": "s3cret"}],
        "clusterd_master_group": "clusterd_master",
    }, groups=dict(GROUPS, clusterd_master=["localhost", "zk2", "zk3"]), dump=["__clusterd_master_files", "__clusterd_master_zk_url"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    files = values["__clusterd_master_files"]
    assert files["quorum"] == "2\n"
    assert files["cluster"] == "clusterdos\n" and files["work_dir"] == "/var/lib/mesos/master\n"
    assert files["?authenticate_frameworks"] == "" and "?no-authenticate_agents" in files
    assert files["credentials"] == "/etc/mesos/credentials\n"
    assert files["max_agent_ping_timeouts"] == "10\n" and "offer_timeout" not in files
    assert "acls" not in files and "zk" not in files
    assert values["__clusterd_master_zk_url"] == "zk://zk1:2181,zk2:2181,zk3:2181/mesos"
    assert "s3cret" not in proc.stdout


def test_agent_flag_files_isolate_gpus_only_where_found(role_runner):
    nvidia = {"gpus": {"vendor": "nvidia", "count": 2}}
    proc, values = role_runner("clusterd_agent", "validate.yml", {
        "__clusterd_agent_hw": nvidia, "clusterd_agent_attributes": {"rack": "r7"},
        "clusterd_agent_resources": {"cpus": 6}, "zookeeper_client_port": 2182,
    }, groups=GROUPS, dump=["__clusterd_agent_files", "__clusterd_agent_zk_url"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    files = values["__clusterd_agent_files"]
    assert files["isolation"] == "filesystem/linux,cgroups/cpu,cgroups/mem,cgroups/devices,gpu/nvidia\n"
    assert files["resources/gpus"] == "2\n" and files["resources/cpus"] == "6\n"
    assert files["nvidia_gpu_devices"] == "0,1\n" and files["attributes/rack"] == "r7\n"
    assert files["containerizers"] == "mesos\n" and files["?no-hostname_lookup"] == ""
    assert values["__clusterd_agent_zk_url"] == "zk://zk1:2182,zk2:2182,zk3:2182/mesos"

    proc, values = role_runner("clusterd_agent", "validate.yml", {"__clusterd_agent_hw": {"gpus": {"vendor": "none", "count": 0}}},
                               groups=GROUPS, dump=["__clusterd_agent_files"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    files = values["__clusterd_agent_files"]
    assert "gpu/nvidia" not in files["isolation"] and "resources/gpus" not in files and "nvidia_gpu_devices" not in files


def test_agent_role_refuses_agents_without_masters(role_runner):
    proc, _ = role_runner("clusterd_agent", "validate.yml", {}, groups={"clusterd_agent": ["localhost"]})
    assert proc.returncode != 0
    assert "group clusterd_master is empty" in proc.stdout


def test_zookeeper_role_refuses_an_even_ensemble(role_runner):
    proc, _ = role_runner("zookeeper", "validate.yml", {}, groups={"zookeeper": ["localhost", "zk2"]})
    assert proc.returncode != 0
    assert "group zookeeper has 2 members" in proc.stdout


def test_zookeeper_config_of_the_role(role_runner):
    proc, values = role_runner("zookeeper", "validate.yml", {"zookeeper_config": {"tickTime": 3000}},
                               groups={"zookeeper": ["localhost", "zk2", "zk3"]}, dump=["__zookeeper_config", "__zookeeper_ids"])
    assert proc.returncode == 0, proc.stdout[-3000:]
    cfg = values["__zookeeper_config"]
    assert cfg["tickTime"] == "3000" and cfg["autopurge.purgeInterval"] == "1" and cfg["admin.enableServer"] == "false"
    assert sorted(k for k in cfg if k.startswith("server.")) == ["server.1", "server.2", "server.3"]
    assert values["__zookeeper_ids"] == {"localhost": 1, "zk2": 2, "zk3": 3}
