"""Read a playbook run's per-host outcome from ansible's json stdout callback.

Used by the tests that run many cases as one ansible-playbook run, one host per case.
"""

from __future__ import annotations

from typing import Any, Iterable


def host_outcomes(data: dict[str, Any], hosts: Iterable[str], context: str = "") -> dict[str, dict[str, Any]]:
    """{host: {"failed": bool, "msgs": [...], "stats": recap}} for HOSTS from the json callback's DATA.

    A failed task's msg and its failed loop items' msgs are collected. Every host must be in
    the recap, unreachable nowhere, and failed there exactly when a task failed (CONTEXT is
    added to the assertion messages).
    """
    outcome = {host: {"failed": False, "msgs": [], "stats": data["stats"].get(host)} for host in hosts}
    for play in data["plays"]:
        for task in play["tasks"]:
            for host, res in task["hosts"].items():
                if host in outcome and res.get("failed"):
                    outcome[host]["failed"] = True
                    outcome[host]["msgs"].append(res.get("msg", ""))
                    outcome[host]["msgs"] += [r.get("msg", "") for r in res.get("results", [])
                                              if r.get("failed") or r.get("evaluated_to") is False]
    for host, case in outcome.items():
        assert case["stats"] is not None, f"{host} is missing from the recap: {context}"
        assert case["stats"]["unreachable"] == 0 and bool(case["stats"]["failures"]) == case["failed"], (host, case)
    return outcome
