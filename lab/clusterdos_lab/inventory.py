"""The inventory a lab writes: Ansible reaches every host over SSH, as on bare metal."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .spec import LabSpec


def ssh_key(spec: LabSpec) -> Path:
    return spec.state_dir / "ssh" / "id_ed25519"


def ssh_args() -> list[str]:
    # Lab hosts are recreated often and share the image's host keys: don't pin them.
    return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "BatchMode=yes"]


def build(spec: LabSpec, proxy_url: str) -> dict:
    groups: dict[str, dict] = {}
    hosts: dict[str, dict] = {}
    for index, host in enumerate(spec.hosts):
        hosts[host.name] = {"ansible_host": spec.host_ip(index), "clusterdos_node_ip": spec.host_ip(index)}
        for group in host.groups:
            groups.setdefault(group, {"hosts": {}})["hosts"][host.name] = {}
    lab_vars = {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(ssh_key(spec)),
        "ansible_ssh_common_args": " ".join(ssh_args()),
        "ansible_python_interpreter": "/usr/bin/python3",
        # The collection's own artifact-source setting, as an air-gapped site sets it.
        "clusterdos_package_proxy": proxy_url,
        # Nothing outside this machine is reachable; the gateway stands in for NTP.
        "clusterdos_time_servers": [spec.gateway],
        "clusterdos_lab": {"name": spec.name, "backend": spec.backend, "gateway": spec.gateway},
    }
    lab_vars.update(spec.vars)
    return {"all": {"vars": lab_vars, "hosts": hosts, "children": groups}}


def write(spec: LabSpec, proxy_url: str) -> Path:
    inv = build(spec, proxy_url)
    path = spec.state_dir / "inventory.yml"
    path.write_text("# Written by clusterdos-lab; regenerated on every `up`.\n"
                    + yaml.safe_dump(inv, sort_keys=False), encoding="utf-8")
    hosts = [{"instance": h.name, "address": spec.host_ip(i), "user": "root", "port": 22,
              "identity_file": str(ssh_key(spec)), "groups": h.groups} for i, h in enumerate(spec.hosts)]
    (spec.state_dir / "hosts.json").write_text(json.dumps(hosts, indent=2) + "\n", encoding="utf-8")
    return path
