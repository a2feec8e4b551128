# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""The add-on catalog: validation, dependency order, values merging, chart sources.

The catalog is data (roles/addons/vars/catalog.yml): one entry per add-on with a
pinned chart, its namespace, default values, dependencies and the node group it
targets. Nothing here runs a command; every check is done on the whole request
before the first release changes.
"""

from __future__ import annotations

import copy
import re
import typing as t

from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import (
    DEFAULT_UPSTREAM_REGISTRIES,
    rewrite_registries,
)
from ansible_collections.clusterdos.cluster.plugins.module_utils.storage_classes import (
    classes_in_values,
    spec_problems,
    storage_class_problems,
)

# An exact chart version: no ranges, no "latest" (a leading v is how some charts tag).
PINNED_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
ADDON_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
RELEASE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NFD_CHART = "node-feature-discovery"

ENTRY_KEYS = {
    "chart": str,
    "version": str,
    "repo_url": str,
    "namespace": str,
    "release": str,
    "description": str,
    "depends_on": list,
    "node_group": str,
    "node_selector_paths": list,
    "values": dict,
    "image_values": dict,
    "shared_nfd_values": dict,
    "manifests": list,
    "crds": bool,
    "wait": bool,
    "wait_for_jobs": bool,
    "timeout": str,
    "storage_classes": list,
}
REQUIRED_KEYS = ("chart", "version", "namespace")


class CatalogError(Exception):
    """The catalog or the request is wrong; the message says what to fix."""


def deep_merge(base: t.Any, override: t.Any) -> t.Any:
    """Helm's own rule: mappings merge key by key, anything else (lists too) is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = copy.deepcopy(base)
        for key, value in override.items():
            merged[key] = deep_merge(base[key], value) if key in base else copy.deepcopy(value)
        return merged
    return copy.deepcopy(override)


def _contains(whole: t.Any, part: t.Any) -> bool:
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _contains(whole[k], v) for k, v in part.items())
    return whole == part


def _set_path(values: t.Dict[str, t.Any], path: str, value: t.Any) -> None:
    keys = path.split(".")
    node = values
    for key in keys[:-1]:
        nxt = node.get(key)
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        node = nxt
    node[keys[-1]] = copy.deepcopy(value)


def _entry_problems(name: str, entry: t.Any) -> t.List[str]:
    if not ADDON_NAME.match(name):
        return [f"{name}: add-on names are lowercase letters, digits and '_' (they are group_vars keys)"]
    if not isinstance(entry, dict):
        return [f"{name}: the entry must be a mapping, got {type(entry).__name__}"]
    problems = []
    for key in sorted(set(entry) - set(ENTRY_KEYS)):
        problems.append(f"{name}: unknown key {key!r} (known: {', '.join(sorted(ENTRY_KEYS))})")
    for key in REQUIRED_KEYS:
        if not entry.get(key):
            problems.append(f"{name}: {key} is required")
    for key, kind in ENTRY_KEYS.items():
        if key in entry and entry[key] is not None and not isinstance(entry[key], kind):
            problems.append(f"{name}: {key} must be a {kind.__name__}, got {type(entry[key]).__name__}")
    version = entry.get("version")
    if isinstance(version, str) and not PINNED_VERSION.match(version):
        problems.append(f"{name}: version {version!r} is not pinned (give one exact version such as 1.2.3)")
    if "repo_url" not in entry:
        problems.append(f"{name}: repo_url is required (empty only for charts that upstream does not publish)")
    repo = entry.get("repo_url")
    if isinstance(repo, str) and repo and not repo.startswith(("https://", "http://", "oci://")):
        problems.append(f"{name}: repo_url must start with https://, http:// or oci:// (got {repo})")
    release = entry.get("release", name.replace("_", "-"))
    if not isinstance(release, str) or not RELEASE_NAME.match(release) or len(release) > 53:
        problems.append(f"{name}: release {release!r} is not a valid helm release name")
    if isinstance(entry.get("depends_on"), list) and not all(isinstance(d, str) for d in entry["depends_on"]):
        problems.append(f"{name}: depends_on must list add-on names")
    if "storage_classes" in entry:
        problems += spec_problems(name, entry["storage_classes"])
    return problems


def _cycle(graph: t.Dict[str, t.List[str]]) -> t.Optional[t.List[str]]:
    """One dependency cycle as a path (a -> b -> a), or None."""
    state: t.Dict[str, int] = {}
    stack: t.List[str] = []

    def visit(node: str) -> t.Optional[t.List[str]]:
        state[node] = 1
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep in graph and state.get(dep) is None:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None:
            found = visit(node)
            if found:
                return found
    return None


def validate_catalog(catalog: t.Any) -> t.List[str]:
    """Every problem of the catalog (empty when it is sound)."""
    if not isinstance(catalog, dict) or not catalog:
        return ["the catalog must be a non-empty mapping of add-on name to entry"]
    problems: t.List[str] = []
    for name in sorted(catalog):
        problems += _entry_problems(str(name), catalog[name])
    if problems:
        return problems
    graph = {name: list(entry.get("depends_on") or []) for name, entry in catalog.items()}
    for name in sorted(graph):
        for dep in graph[name]:
            if dep not in catalog:
                problems.append(f"{name}: depends on {dep!r}, which is not in the catalog")
            elif dep == name:
                problems.append(f"{name}: depends on itself")
    cycle = _cycle(graph)
    if cycle:
        problems.append(f"dependency cycle: {' -> '.join(cycle)}")
    nfd = sorted(n for n, e in catalog.items() if e["chart"] == NFD_CHART)
    if len(nfd) != 1:
        problems.append(f"exactly one add-on deploys Node Feature Discovery (chart {NFD_CHART}); found {len(nfd)}: {nfd}")
    for name in sorted(n for n, e in catalog.items() if e.get("shared_nfd_values")):
        entry = catalog[name]
        if nfd and nfd[0] not in (entry.get("depends_on") or []):
            problems.append(f"{name}: uses the shared Node Feature Discovery, so it must depend on {nfd[0]}")
        if not _contains(entry.get("values") or {}, entry["shared_nfd_values"]):
            problems.append(f"{name}: its values must include shared_nfd_values (its own NFD turned off)")
    releases: t.Dict[t.Tuple[str, str], str] = {}
    for name in sorted(catalog):
        key = (catalog[name]["namespace"], catalog[name].get("release", name.replace("_", "-")))
        if key in releases:
            problems.append(f"{name}: release {key[1]} in {key[0]} is also {releases[key]}'s")
        releases[key] = name
    return problems


def dependency_order(catalog: t.Dict[str, t.Any], names: t.Iterable[str]) -> t.List[str]:
    """``names`` ordered so that each comes after its dependencies; ties in name order."""
    wanted = sorted(set(names))
    remaining = {n: {d for d in (catalog[n].get("depends_on") or []) if d in wanted} for n in wanted}
    order: t.List[str] = []
    while remaining:
        ready = sorted(n for n, deps in remaining.items() if not deps)
        if not ready:
            raise CatalogError(f"dependency cycle among {sorted(remaining)}")
        for n in ready:
            order.append(n)
            del remaining[n]
        for deps in remaining.values():
            deps.difference_update(ready)
    return order


def _chart_location(entry: t.Dict[str, t.Any], chart_mirror: str) -> t.Dict[str, t.Optional[str]]:
    """repo_url / chart_path for the module: upstream, a site repository, OCI, or a directory."""
    mirror = (chart_mirror or "").rstrip("/")
    if not mirror:
        if not entry["repo_url"]:
            raise CatalogError(f"chart {entry['chart']} has no upstream Helm repository: put {entry['chart']}-{entry['version']}.tgz "
                               "in your chart mirror and set the chart mirror (docs/addons.md)")
        return {"repo_url": entry["repo_url"], "chart_path": None}
    if mirror.startswith(("https://", "http://", "oci://")):
        return {"repo_url": mirror, "chart_path": None}
    if mirror.startswith("file://"):
        mirror = mirror[len("file://"):]
    if mirror.startswith("/"):
        return {"repo_url": None, "chart_path": mirror}
    raise CatalogError(f"the chart mirror must be an https://, http:// or oci:// URL or an absolute directory (got {chart_mirror})")


def plan(catalog: t.Dict[str, t.Any], enabled: t.Sequence[str], overrides: t.Optional[t.Dict[str, t.Any]] = None, *,
         derived: t.Optional[t.Dict[str, t.Any]] = None, chart_mirror: str = "", registry_mirror: str = "",
         upstream_registries: t.Sequence[str] = DEFAULT_UPSTREAM_REGISTRIES,
         node_selectors: t.Optional[t.Dict[str, t.Dict[str, str]]] = None) -> t.List[t.Dict[str, t.Any]]:
    """The releases to deploy, in dependency order, each with its final values.

    Values, later wins: the catalog's defaults, then ``derived`` (what the role computes
    from the inventory, such as the GPU Operator's host-driver mode), then the node
    selector of the add-on's node group, then the user's ``overrides``. With a registry
    mirror, the entry's ``image_values`` are merged under the rest and every value naming
    an upstream registry is rewritten to the mirror.
    """
    problems = validate_catalog(catalog)
    if problems:
        raise CatalogError("the add-on catalog is invalid: " + "; ".join(problems))
    overrides = overrides or {}
    derived = derived or {}
    node_selectors = node_selectors or {}
    errors: t.List[str] = []
    if not isinstance(enabled, (list, tuple)) or not all(isinstance(n, str) for n in enabled):
        raise CatalogError("enabled must be a list of add-on names")
    unknown = sorted(set(enabled) - set(catalog))
    if unknown:
        errors.append(f"unknown add-on(s) {unknown}; the catalog has {sorted(catalog)}")
    if not isinstance(overrides, dict):
        raise CatalogError(f"values must be a mapping of add-on name to values, got {type(overrides).__name__}")
    for name in sorted(overrides):
        if name not in catalog:
            errors.append(f"values are given for {name!r}, which is not in the catalog (known: {sorted(catalog)})")
        elif not isinstance(overrides[name], dict):
            errors.append(f"values for {name} must be a mapping, got {type(overrides[name]).__name__}: {str(overrides[name])[:60]!r}")
    for name in sorted(derived):
        if name in catalog and not isinstance(derived[name], dict):
            errors.append(f"derived values for {name} must be a mapping, got {type(derived[name]).__name__}")
    for name in sorted(set(enabled) & set(catalog)):
        missing = [d for d in catalog[name].get("depends_on") or [] if d not in enabled]
        if missing:
            errors.append(f"{name} is enabled but depends on {missing}, which {'is' if len(missing) == 1 else 'are'} not: enable {' and '.join(missing)} too")
        group = catalog[name].get("node_group")
        if catalog[name].get("node_selector_paths") and group and group not in node_selectors:
            errors.append(f"{name} targets node group {group!r}, which has no node selector (set it in addons_node_selectors)")
    if errors:
        raise CatalogError("; ".join(errors))
    location = {}
    for name in enabled:
        try:
            location[name] = _chart_location(catalog[name], chart_mirror)
        except CatalogError as exc:
            errors.append(f"{name}: {exc}")
    if errors:
        raise CatalogError("; ".join(errors))

    releases = []
    for name in dependency_order(catalog, enabled):
        entry = catalog[name]
        values: t.Dict[str, t.Any] = {}
        if registry_mirror:
            values = deep_merge(values, entry.get("image_values") or {})
        values = deep_merge(values, entry.get("values") or {})
        values = deep_merge(values, derived.get(name) or {})
        group = entry.get("node_group")
        if group and entry.get("node_selector_paths"):
            for path in entry["node_selector_paths"]:
                _set_path(values, path, node_selectors[group])
        values = deep_merge(values, overrides.get(name) or {})
        if registry_mirror:
            values = rewrite_registries(values, registry_mirror, upstream_registries)
        releases.append({
            "name": name,
            "release": entry.get("release", name.replace("_", "-")),
            "namespace": entry["namespace"],
            "chart": entry["chart"],
            "version": entry["version"],
            "repo_url": location[name]["repo_url"],
            "chart_path": location[name]["chart_path"],
            "release_values": values,
            "depends_on": list(entry.get("depends_on") or []),
            "node_group": group or None,
            "manifests": rewrite_registries(entry.get("manifests") or [], registry_mirror, upstream_registries)
            if registry_mirror else list(entry.get("manifests") or []),
            "crds": entry.get("crds", True),
            "wait": entry.get("wait", True),
            "wait_for_jobs": entry.get("wait_for_jobs", False),
            "timeout": entry.get("timeout", "10m"),
            "storage_classes": classes_in_values(name, entry.get("storage_classes") or [], values),
        })
    # Storage classes of every enabled add-on, with the site's values applied: one name,
    # one class; at most one default.
    problems = storage_class_problems([c for r in releases for c in r["storage_classes"]])
    if problems:
        raise CatalogError("; ".join(problems))
    return releases


def removal_plan(catalog: t.Dict[str, t.Any], absent: t.Sequence[str], enabled: t.Sequence[str]) -> t.List[t.Dict[str, t.Any]]:
    """The add-ons to uninstall, dependents first; refuses to remove what an enabled add-on needs."""
    errors: t.List[str] = []
    unknown = sorted(set(absent) - set(catalog))
    if unknown:
        errors.append(f"unknown add-on(s) to remove {unknown}; the catalog has {sorted(catalog)}")
    both = sorted(set(absent) & set(enabled))
    if both:
        errors.append(f"{both} both enabled and to be removed: take them out of one of the two lists")
    for name in sorted(set(enabled) & set(catalog)):
        needed = sorted(set(catalog[name].get("depends_on") or []) & set(absent))
        if needed:
            errors.append(f"cannot remove {needed}: {name} is enabled and depends on {'it' if len(needed) == 1 else 'them'}")
    if errors:
        raise CatalogError("; ".join(errors))
    order = list(reversed(dependency_order(catalog, absent)))
    return [{"name": n, "release": catalog[n].get("release", n.replace("_", "-")), "namespace": catalog[n]["namespace"]} for n in order]
