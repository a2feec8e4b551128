"""hw_rdma: HCA discovery from a sysfs tree built per test."""

from __future__ import annotations

from pathlib import Path

from ansible_collections.clusterdos.cluster.plugins.module_utils import hw_rdma


def device(root: Path, name: str, ports: dict[int, dict[str, str]], driver: str | None = None, **attrs: str) -> None:
    d = root / "class" / "infiniband" / name
    (d / "ports").mkdir(parents=True)
    for key, value in attrs.items():
        (d / key).write_text(value + "\n")
    if driver:
        target = root / "bus" / "pci" / "drivers" / driver
        target.mkdir(parents=True, exist_ok=True)
        (d / "device").mkdir()
        (d / "device" / "driver").symlink_to(target)
    for num, files in ports.items():
        p = d / "ports" / str(num)
        p.mkdir()
        for key, value in files.items():
            if key == "netdev":
                (p / "gid_attrs" / "ndevs").mkdir(parents=True)
                (p / "gid_attrs" / "ndevs" / "0").write_text(value + "\n")
            else:
                (p / key).write_text(value + "\n")


def test_connectx_infiniband_and_softroce(tmp_path):
    device(tmp_path, "mlx5_0", {1: {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "link_layer": "InfiniBand",
                                    "rate": "400 Gb/sec (4X NDR)"}},
           driver="mlx5_core", node_type="1: CA", node_guid="a088:c203:0012:3456", fw_ver="28.39.1002",
           board_id="MT_0000000838")
    device(tmp_path, "rxe0", {1: {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "link_layer": "Ethernet",
                                  "rate": "10 Gb/sec (4X QDR)", "netdev": "eth1"}},
           node_type="1: CA", node_guid="5054:00ff:fe12:3401", fw_ver="0.0.0")
    device(tmp_path, "mlx5_1", {1: {"state": "1: DOWN", "phys_state": "3: Disabled", "link_layer": "InfiniBand"}},
           driver="mlx5_core")
    got = hw_rdma.hcas(str(tmp_path))
    assert [h["name"] for h in got] == ["mlx5_0", "mlx5_1", "rxe0"]
    ib = got[0]
    assert (ib["driver"], ib["node_type"], ib["fw_ver"], ib["board_id"]) == ("mlx5_core", "CA", "28.39.1002", "MT_0000000838")
    assert ib["ports"] == [{"port": 1, "state": "ACTIVE", "phys_state": "LinkUp", "link_layer": "InfiniBand",
                            "rate": "400 Gb/sec (4X NDR)", "netdev": None}]
    rxe = got[2]
    assert (rxe["driver"], rxe["ports"][0]["netdev"], rxe["board_id"]) == ("rdma_rxe", "eth1", None)
    assert hw_rdma.summary(got) == {"hca_count": 3, "active_ports": 2, "active_infiniband_ports": 1,
                                    "active_ethernet_ports": 1}


def test_ports_sorted_numerically(tmp_path):
    device(tmp_path, "mlx5_0", {n: {"state": "4: ACTIVE", "link_layer": "InfiniBand"} for n in (1, 2, 10)})
    assert [p["port"] for p in hw_rdma.hcas(str(tmp_path))[0]["ports"]] == [1, 2, 10]


def test_no_rdma_subsystem(tmp_path):
    assert hw_rdma.hcas(str(tmp_path)) == []
    assert hw_rdma.summary([])["hca_count"] == 0
