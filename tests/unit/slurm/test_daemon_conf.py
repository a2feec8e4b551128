"""__slurm_daemon_conf: the daemons' own slurm.conf settings without the generated keys.

The waits, log directories and host checks read ports, log files and users from it rather
than from __slurm_conf, whose generated keys walk every compute node's variables each time
they are read. It gives the same values only while no key read through it is generated:
checked here on the role's files, and through Ansible itself on localhost, with a site's
slurm_config overriding some of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from role_runner import ROOT, run_role

ROLE = ROOT / "roles" / "slurm"
READ = re.compile(r"__slurm_daemon_conf\[['\"](\w+)['\"]\]")


def keys_read() -> set[str]:
    found: set[str] = set()
    for path in [*ROLE.rglob("*.yml"), *ROLE.rglob("*.j2"), *(ROOT / "playbooks").rglob("*.yml")]:
        found.update(READ.findall(path.read_text()))
    return found


def test_no_key_read_through_it_is_generated():
    generated = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__slurm_generated_config"]
    read = keys_read()
    assert {"SlurmctldPort", "SlurmdPort", "SlurmUser", "SlurmdSpoolDir"} <= read, read
    assert read.isdisjoint(generated), sorted(read & set(generated))


def test_ansible_gives_the_same_values_as_slurm_conf(tmp_path):
    site = {"SlurmctldPort": "7817-7818", "SlurmdLogFile": "/srv/log/slurmd.log", "SlurmdUser": "root"}
    proc, values = run_role(tmp_path, "slurm", "managed", {
        "__slurm_daemon": "controller", "slurm_config": site, "slurm_accounting_enabled": False},
        groups={"slurm_controller": ["localhost"]}, gather_facts=True, dump=["__slurm_daemon_conf", "__slurm_conf"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    daemon, whole = values["__slurm_daemon_conf"], values["__slurm_conf"]
    assert daemon["SlurmctldPort"] == "7817-7818" and daemon["SlurmdLogFile"] == "/srv/log/slurmd.log"
    for key in keys_read():
        assert daemon.get(key) == whole.get(key), key
    # The generated keys are slurm.conf's alone.
    assert "ClusterName" in whole and "ClusterName" not in daemon
