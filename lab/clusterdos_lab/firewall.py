"""Fence the lab bridge: nothing leaves it, and the controller answers only the proxy.

Rules are tagged with a per-lab comment so `down` removes exactly what `up` added.
netavark enables ip_forward even for internal networks, so the FORWARD drops matter.
"""

from __future__ import annotations

from .spec import LabSpec
from .util import run


def _forward_rules(spec: LabSpec) -> list[list[str]]:
    tag = ["-m", "comment", "--comment", f"clusterdos-lab:{spec.name}"]
    return [
        ["FORWARD", "-i", spec.bridge, "!", "-o", spec.bridge, *tag, "-j", "DROP"],
        ["FORWARD", "-o", spec.bridge, "!", "-i", spec.bridge, *tag, "-j", "DROP"],
    ]


def up(spec: LabSpec, proxy_port: int) -> None:
    down(spec)
    chain = spec.chain
    for tool in ("iptables", "ip6tables"):
        for rule in _forward_rules(spec):
            run([tool, "-I", rule[0], "1", *rule[1:]])
    run(["iptables", "-N", chain])
    run(["iptables", "-A", chain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"])
    run(["iptables", "-A", chain, "-p", "tcp", "--dport", str(proxy_port), "-d", spec.gateway, "-j", "RETURN"])
    run(["iptables", "-A", chain, "-p", "icmp", "-j", "RETURN"])
    run(["iptables", "-A", chain, "-j", "DROP"])
    run(["iptables", "-I", "INPUT", "1", "-i", spec.bridge, "-j", chain])
    run(["ip6tables", "-I", "INPUT", "1", "-i", spec.bridge, "-m", "comment", "--comment",
         f"clusterdos-lab:{spec.name}", "-j", "DROP"])


def down(spec: LabSpec) -> None:
    """Remove this lab's rules; safe to run when none exist."""
    chain = spec.chain
    for tool in ("iptables", "ip6tables"):
        for rule in _forward_rules(spec):
            while run([tool, "-D", *rule], check=False).returncode == 0:
                pass
    while run(["iptables", "-D", "INPUT", "-i", spec.bridge, "-j", chain], check=False).returncode == 0:
        pass
    while run(["ip6tables", "-D", "INPUT", "-i", spec.bridge, "-m", "comment", "--comment",
               f"clusterdos-lab:{spec.name}", "-j", "DROP"], check=False).returncode == 0:
        pass
    run(["iptables", "-F", chain], check=False)
    run(["iptables", "-X", chain], check=False)


def present(spec: LabSpec) -> bool:
    out = run(["iptables", "-S", "FORWARD"], check=False).stdout or ""
    return f"clusterdos-lab:{spec.name}" in out
