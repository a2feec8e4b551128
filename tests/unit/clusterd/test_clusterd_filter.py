"""ClusterD and ZooKeeper configuration as data (plugins/filter/clusterd.py): flag files in
the packages' layout, the --zk URL, the quorum, GPU isolation from discovered hardware,
zoo.cfg and myid, and the preflight's inventory checks."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.clusterdos.cluster.plugins.filter import clusterd as cd

F = cd.FilterModule().filters()
HV = {"zk1": {"ansible_host": "10.0.0.1"}, "zk2": {"ansible_host": "10.0.0.2"}, "zk3": {"clusterdos_node_ip": "10.0.1.3",
                                                                                    "ansible_host": "zk3.example"}}
NVIDIA_HW = {"gpus": {"vendor": "nvidia", "count": 4, "model": "H100 SXM5 80GB"}}
NO_GPU_HW = {"gpus": {"vendor": "none", "count": 0}}


def test_every_filter_is_registered():
    assert set(F) == {"clusterd_flag_files", "clusterd_quorum", "clusterd_zk_url", "clusterd_agent_flags",
                      "clusterd_inventory_errors", "zookeeper_ids", "zookeeper_config"}


def test_flag_files_one_file_per_flag_booleans_as_question_mark_files():
    files = cd.clusterd_flag_files({"quorum": 2, "work_dir": "/var/lib/mesos/master", "hostname_lookup": False,
                                    "authenticate_agents": True, "containerizers": ["mesos", "docker"],
                                    "credentials": None, "acls": "",
                                    "attributes": {"rack": "r1", "zone": None}, "resources": {"gpus": 4}})
    assert files == {"quorum": "2\n", "work_dir": "/var/lib/mesos/master\n", "?no-hostname_lookup": "",
                     "?authenticate_agents": "", "containerizers": "mesos,docker\n",
                     "attributes/rack": "r1\n", "resources/gpus": "4\n"}


@pytest.mark.parametrize("flags", [{"Bad-Name": 1}, {"work_dir": "a\nb"}, {"quorum": {"x": 1}}, {"attributes": {"a b": 1}}])
def test_flag_files_refuse_what_the_layout_cannot_hold(flags):
    with pytest.raises(AnsibleFilterError):
        cd.clusterd_flag_files(flags)


@pytest.mark.parametrize(("masters", "quorum"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (["a", "b", "c"], 2)])
def test_quorum_is_a_strict_majority(masters, quorum):
    assert cd.clusterd_quorum(masters) == quorum


def test_quorum_needs_a_master():
    with pytest.raises(AnsibleFilterError):
        cd.clusterd_quorum([])


def test_zk_url_lists_every_member_with_its_address():
    assert cd.clusterd_zk_url(["zk1", "zk2", "zk3"], HV) == "zk://10.0.0.1:2181,10.0.0.2:2181,10.0.1.3:2181/mesos"
    assert cd.clusterd_zk_url(["zk1"], HV, port=2182, path="/site") == "zk://10.0.0.1:2182/site"
    assert cd.clusterd_zk_url(["zk1", "zk2"], HV, use_names=True) == "zk://zk1:2181,zk2:2181/mesos"


@pytest.mark.parametrize(("hosts", "path"), [([], "/mesos"), (["zk1"], "mesos"), (["zk1"], "/")])
def test_zk_url_refuses_no_hosts_or_a_bad_path(hosts, path):
    with pytest.raises(AnsibleFilterError):
        cd.clusterd_zk_url(hosts, HV, path=path)


def test_zookeeper_ids_keep_explicit_ids_and_fill_the_lowest_free():
    hv = {"a": {}, "b": {"zookeeper_myid": 1}, "c": {}}
    assert cd.zookeeper_ids(["a", "b", "c"], hv) == {"a": 2, "b": 1, "c": 3}
    assert cd.zookeeper_ids(["a", "b", "c"], {}) == {"a": 1, "b": 2, "c": 3}


def test_zoo_cfg_has_one_server_line_per_member_and_the_sites_settings():
    cfg = cd.zookeeper_config(["zk1", "zk2", "zk3"], HV, {"tickTime": 2000, "autopurge.purgeInterval": 1,
                                                          "admin.enableServer": False},
                              client_port=2181, quorum_port=2888, election_port=3888, data_dir="/data/zk")
    assert cfg == {"tickTime": "2000", "autopurge.purgeInterval": "1", "admin.enableServer": "false",
                   "dataDir": "/data/zk", "clientPort": "2181", "server.1": "10.0.0.1:2888:3888",
                   "server.2": "10.0.0.2:2888:3888", "server.3": "10.0.1.3:2888:3888"}


def test_agent_gets_gpu_isolation_and_gpus_only_with_nvidia_gpus_found():
    flags = cd.clusterd_agent_flags({"isolation": ["filesystem/linux", "cgroups/cpu"]}, NVIDIA_HW, "auto",
                                    attributes={"rack": "r1"}, resources={"cpus": 8})
    assert flags["isolation"] == "filesystem/linux,cgroups/cpu,cgroups/devices,gpu/nvidia"
    assert flags["resources"] == {"cpus": 8, "gpus": 4}
    assert flags["nvidia_gpu_devices"] == "0,1,2,3"
    assert flags["attributes"] == {"rack": "r1"}
    files = cd.clusterd_flag_files(flags)
    assert files["resources/gpus"] == "4\n" and files["isolation"].endswith("gpu/nvidia\n")


@pytest.mark.parametrize("hw", [NO_GPU_HW, None, {}, {"gpus": {"vendor": "amd", "count": 8}}])
def test_agent_without_nvidia_gpus_gets_no_gpu_isolation(hw):
    flags = cd.clusterd_agent_flags({"isolation": "cgroups/cpu,gpu/nvidia", "nvidia_gpu_devices": "0"}, hw, "auto",
                                    resources={"gpus": 2, "cpus": 4})
    assert flags["isolation"] == "cgroups/cpu"
    assert flags["resources"] == {"cpus": 4}
    assert "nvidia_gpu_devices" not in flags


def test_gpu_isolation_off_and_demanded_without_gpus():
    assert "gpu/nvidia" not in cd.clusterd_agent_flags({"isolation": ["cgroups/cpu"]}, NVIDIA_HW, "false")["isolation"]
    with pytest.raises(AnsibleFilterError, match="no NVIDIA GPU"):
        cd.clusterd_agent_flags({}, NO_GPU_HW, True)
    with pytest.raises(AnsibleFilterError):
        cd.clusterd_agent_flags({}, NO_GPU_HW, "sometimes")


GROUPS = {"zookeeper": ["zk1", "zk2", "zk3"], "clusterd_master": ["zk1", "zk2", "zk3"], "clusterd_agent": ["a1", "g1"],
          "gpu_nvidia": ["g1"]}


def errors(groups=None, hostvars=None, **kwargs):
    return cd.clusterd_inventory_errors(groups if groups is not None else GROUPS, hostvars or {}, **kwargs)


def test_good_inventory_passes():
    assert errors() == []
    assert errors(hostvars={"g1": {"clusterd_agent_gpu_isolation": True}}) == []
    assert errors({}) == []


@pytest.mark.parametrize(("groups", "hostvars", "expected"), [
    (dict(GROUPS, zookeeper=["zk1", "zk2"]), {}, "group zookeeper has 2 members (zk1, zk2)"),
    (dict(GROUPS, clusterd_master=["zk1", "zk2"]), {}, "group clusterd_master has 2 masters (zk1, zk2)"),
    (dict(GROUPS, clusterd_master=[]), {}, "group clusterd_agent has hosts (a1, g1) but group clusterd_master is empty"),
    (dict(GROUPS, zookeeper=[]), {}, "group zookeeper is empty and clusterd_master_zk_url is not set"),
    (GROUPS, {"a1": {"clusterd_agent_gpu_isolation": "true"}}, "clusterd_agent_gpu_isolation = 'true' (on a1): the host is not in gpu_nvidia"),
    (GROUPS, {"zk1": {"clusterd_master_authenticate_frameworks": True}},
     "clusterd_master_authenticate_frameworks = true (on zk1) but clusterd_master_credentials is empty"),
    (GROUPS, {"zk1": {"clusterd_master_authenticate_agents": True,
                      "clusterd_master_credentials": [{"principal": "agent", "secret": "s"}]}},
     "clusterd_agent_credential (on a1) is missing while the masters authenticate agents"),
    (GROUPS, {"zk1": {"clusterd_master_authenticate_agents": True, "clusterd_master_credentials": [{"principal": "x"}]}},
     "every entry needs a principal and a secret"),
    (GROUPS, {"zk1": {"zookeeper_myid": 2}, "zk2": {"zookeeper_myid": 2}}, "zookeeper_myid = 2 (on zk2 and zk1)"),
    (GROUPS, {"zk3": {"zookeeper_myid": 300}}, "zookeeper_myid = 300 (on zk3): must be a whole number from 1 to 255"),
])
def test_bad_inventory_is_named_with_host_variable_value_and_fix(groups, hostvars, expected):
    found = errors(groups, hostvars)
    assert any(expected in e for e in found), found


def test_gpu_isolation_accepted_where_gpus_are_declared_or_discovered():
    hv = {"a1": {"clusterd_agent_gpu_isolation": True, "clusterdos_gpus": [{"vendor": "nvidia", "count": 2}]},
          "g1": {"clusterd_agent_gpu_isolation": True}}
    assert errors(hostvars=hv) == []
    hv = {"a1": {"clusterd_agent_gpu_isolation": True, "clusterdos_hw": NVIDIA_HW}}
    assert errors(hostvars=hv) == []


def test_external_ensemble_replaces_the_group():
    assert errors(dict(GROUPS, zookeeper=[]), external_zk="zk://zk.site:2181/mesos") == []


def test_secrets_never_appear_in_messages():
    hv = {"zk1": {"clusterd_master_authenticate_agents": True,
                  "clusterd_master_credentials": [{"principal": "agent", "secret": "TOPSECRET"}]},
          "a1": {"clusterd_agent_credential": {"principal": "agent", "secret": ""}}}
    assert not any("TOPSECRET" in e for e in errors(hostvars=hv))
