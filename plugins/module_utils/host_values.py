# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Settings that must be cluster-wide: which of them are not alike on every host, and how
the hosts split by value. The Kubernetes preflight (filter differing_vars) and the Slurm
preflight (filter slurm_cluster_wide_errors) share this."""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Tuple

# A host that does not set a variable: a value of its own, equal only to itself.
UNSET = object()


def hosts_by_value(name: str, hosts: Iterable[str], hostvars: Mapping[str, Any]) -> List[Tuple[Any, List[str]]]:
    """The hosts grouped by their value of `name` (UNSET where a host does not set it), in
    the order each value first appears in `hosts`."""
    groups: List[Tuple[Any, List[str]]] = []
    for host in hosts:
        own = hostvars[host]
        value = own.get(name, UNSET) if hasattr(own, "get") else UNSET
        for seen, members in groups:
            if seen is value or (seen is not UNSET and value is not UNSET and seen == value):
                members.append(host)
                break
        else:
            groups.append((value, [host]))
    return groups


def differing(names: Iterable[str], hosts: Iterable[str], hostvars: Mapping[str, Any]) -> dict:
    """Of the variables `names`, those not alike on every host, each with its hosts grouped by
    value (hosts_by_value), in the order of `names`."""
    hosts = list(hosts or [])
    out = {}
    for name in names or []:
        groups = hosts_by_value(name, hosts, hostvars)
        if len(groups) > 1:
            out[name] = groups
    return out
