# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Which of the base role's sysctls another sysctl.d file overrides at boot: the base role's
check, from `systemd-analyze cat-config sysctl.d` (every file systemd-sysctl applies, in
the order it applies them, each after a `# /path` line)."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.converge_stamp import normalise_sysctl

_HEADER = re.compile(r"^# (/\S+\.conf)$")


def _key(raw: str) -> str:
    """A sysctl.d key as sysctl(8) names it: no leading "-" (ignore errors), and where "/"
    comes before any ".", the two swap roles (sysctl.d(5))."""
    key = raw.strip().lstrip("-")
    slash, dot = key.find("/"), key.find(".")
    if slash != -1 and (dot == -1 or slash < dot):
        key = key.translate(str.maketrans("/.", "./"))
    return key


def later_assignments(cat_config: str, own_file: str) -> Dict[str, Tuple[str, str]]:
    """Each key's value and file where a file applied after OWN_FILE sets it (systemd-sysctl
    applies the files sorted by name, whatever their directory; the last assignment wins).
    OWN_FILE need not exist yet (check mode)."""
    own = os.path.basename(own_file)
    out: Dict[str, Tuple[str, str]] = {}
    source = ""
    for line in cat_config.splitlines():
        text = line.strip()
        header = _HEADER.match(text)
        if header:
            source = header.group(1)
            continue
        if not text or text[0] in "#;" or "=" not in text or os.path.basename(source) <= own:
            continue
        key, value = text.split("=", 1)
        out[_key(key)] = (normalise_sysctl(value), source)
    return out


def overrides(cat_config: str, wanted: Mapping[str, Any], own_file: str) -> List[Dict[str, str]]:
    """The WANTED keys (written to OWN_FILE) that a file applied after it sets to another
    value, so that the host boots with that value: [{key, value, wanted, file}], by key."""
    later = later_assignments(cat_config, own_file)
    found = []
    for key in sorted(wanted):
        want = normalise_sysctl(wanted[key])
        if key in later and later[key][0] != want:
            found.append({"key": key, "value": later[key][0], "wanted": want, "file": later[key][1]})
    return found
