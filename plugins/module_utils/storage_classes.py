# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Storage classes: where an add-on's chart values name them, and what is wrong with a set of them.

Shared by the storage filters (plugins/filter/storage.py) and the add-on plan
(module_utils/addon_catalog.py), so a class name used twice is refused the same way
wherever it is checked.
"""

from __future__ import annotations

import re
import typing as t

# Kubernetes object names (DNS-1123 subdomain).
K8S_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
# A catalog entry's storage_classes spec: each item names value paths (dotted keys).
SPEC_KEYS = {"each", "name", "default"}


def storage_class_problems(classes: t.Iterable[t.Mapping[str, t.Any]]) -> t.List[str]:
    """Names used twice, names Kubernetes would refuse, more than one default class."""
    classes = list(classes)
    problems: t.List[str] = []
    names = [str(c.get("name", "")) for c in classes]
    for name in names:
        if not K8S_NAME_RE.match(name):
            problems.append(f"storage class name '{name}' is not a valid Kubernetes name (lowercase, digits, '-', '.')")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        owners = {n: sorted({str(c["addon"]) for c in classes if str(c.get("name", "")) == n and c.get("addon")}) for n in dupes}
        named = [f"{n} (by {', '.join(owners[n])})" if owners[n] else n for n in dupes]
        problems.append(f"storage class name(s) used more than once: {', '.join(named)}; give each class its own name")
    defaults = [str(c.get("name")) for c in classes if c.get("default")]
    if len(defaults) > 1:
        problems.append(f"only one storage class can be the default; {', '.join(defaults)} are all marked default")
    return problems


def _get(values: t.Any, path: str) -> t.Any:
    for key in path.split("."):
        if not isinstance(values, dict):
            return None
        values = values.get(key)
    return values


def spec_problems(addon: str, spec: t.Any) -> t.List[str]:
    """What is wrong with a catalog entry's storage_classes list."""
    if not isinstance(spec, list):
        return [f"{addon}: storage_classes must be a list"]
    problems = []
    for item in spec:
        if not isinstance(item, dict) or "name" not in item or set(item) - SPEC_KEYS \
                or not all(isinstance(v, str) and v for v in item.values()):
            problems.append(f"{addon}: each storage_classes item maps name (and optional default, each) to a dotted "
                            f"values path, got {item!r}")
    return problems


def classes_in_values(addon: str, spec: t.Sequence[t.Mapping[str, str]], values: t.Mapping[str, t.Any]) -> t.List[t.Dict[str, t.Any]]:
    """The storage classes a release's final values create, as {name, default, addon}.

    Each spec item gives the dotted path of the class name and of its default flag in
    the values; with ``each``, the paths are relative to every item of the list found
    at that path (charts that create several classes from a list).
    """
    found = []
    for item in spec:
        scopes = _get(values, item["each"]) if item.get("each") else [values]
        for scope in scopes if isinstance(scopes, list) else []:
            name = _get(scope, item["name"])
            if name is None or name == "":
                continue
            default = _get(scope, item["default"]) if item.get("default") else False
            found.append({"name": str(name), "default": default is True or str(default).lower() == "true", "addon": addon})
    return found
