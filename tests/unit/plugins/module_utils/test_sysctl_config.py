"""sysctl_config: which of the base role's sysctls a later sysctl.d file overrides at boot.

Pure logic on `systemd-analyze cat-config sysctl.d` text; the real command runs on lab hosts
in molecule/slurm_cluster (test_a_later_sysctl_file_that_overrides_the_roles_stops_base).
"""

from __future__ import annotations

from ansible_collections.clusterdos.cluster.plugins.module_utils import sysctl_config as sc

OWN = "/etc/sysctl.d/90-clusterdos.conf"
CAT = """# /usr/lib/sysctl.d/50-pid-max.conf
kernel.pid_max = 32768

# /etc/sysctl.d/90-clusterdos.conf
#
# Ansible managed
net.ipv4.ip_forward = 1
vm.max_map_count = 262144

# /etc/sysctl.d/95-site.conf
; a comment
-net/ipv4/ip_forward = 0
vm.max_map_count=262144

# /etc/sysctl.d/99-sysctl.conf
#net.ipv4.ip_forward=1
net.core.somaxconn =   4096
"""
WANTED = {"net.ipv4.ip_forward": 1, "vm.max_map_count": 262144, "kernel.pid_max": 4194304, "net.core.somaxconn": "1024"}


def test_a_later_file_with_another_value_overrides_and_an_earlier_one_does_not():
    assert sc.overrides(CAT, WANTED, OWN) == [
        {"key": "net.core.somaxconn", "value": "4096", "wanted": "1024", "file": "/etc/sysctl.d/99-sysctl.conf"},
        # "-" (ignore errors) and the slash form name the same key.
        {"key": "net.ipv4.ip_forward", "value": "0", "wanted": "1", "file": "/etc/sysctl.d/95-site.conf"},
    ]


def test_the_same_value_later_or_an_override_before_the_roles_file_is_fine():
    # 50-pid-max.conf sorts before 90-clusterdos.conf: the role's value wins at boot.
    assert sc.overrides(CAT, {"kernel.pid_max": 4194304, "vm.max_map_count": "262144"}, OWN) == []
    # Check mode: the role's file is not there yet; the order is by name all the same.
    assert sc.overrides(CAT.replace("# /etc/sysctl.d/90-clusterdos.conf", "# /etc/sysctl.d/10-other.conf"),
                        {"net.ipv4.ip_forward": 1}, OWN)[0]["file"] == "/etc/sysctl.d/95-site.conf"
    assert sc.overrides("", WANTED, OWN) == []
