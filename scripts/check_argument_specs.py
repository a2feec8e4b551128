#!/usr/bin/env python3
"""Fail when a role's defaults/main.yml and meta/argument_specs.yml disagree.

Every public input is listed in defaults (commented out when it has no safe default)
and described in the argument spec of the role's main entry point; internal names
start with `__` and live in vars/. Run from the repository root.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

COMMENTED = re.compile(r"^#\s*([a-z][a-z0-9_]*):")


def defaults_names(path: Path) -> set[str]:
    if not path.exists():
        return set()
    names = set((yaml.safe_load(path.read_text()) or {}).keys())
    for line in path.read_text().splitlines():
        m = COMMENTED.match(line)
        if m:
            names.add(m.group(1))
    return names


def spec_names(path: Path) -> set[str]:
    data = yaml.safe_load(path.read_text()) or {}
    names: set[str] = set()
    for entry in (data.get("argument_specs") or {}).values():
        names |= set((entry.get("options") or {}).keys())
    return names


def check(role: Path) -> list[str]:
    problems = []
    spec = role / "meta" / "argument_specs.yml"
    if not spec.exists():
        return [f"{role.name}: meta/argument_specs.yml is missing"]
    prefix = role.name.lstrip("_") + "_"
    d, s = defaults_names(role / "defaults" / "main.yml"), spec_names(spec)
    for name in sorted(d - s):
        problems.append(f"{role.name}: {name} is in defaults but not in argument_specs")
    for name in sorted(s - d):
        problems.append(f"{role.name}: {name} is in argument_specs but not in defaults (list it, commented if it has no default)")
    for name in sorted(d | s):
        if not name.startswith(prefix):
            problems.append(f"{role.name}: {name} does not start with the role prefix {prefix}")
    return problems


def main() -> int:
    roles = sorted(p for p in Path("roles").iterdir() if p.is_dir())
    problems = [p for role in roles for p in check(role)]
    for p in problems:
        print(p, file=sys.stderr)
    print(f"argument specs: {len(roles)} role(s) checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
