"""Filters for awx/configure.yml: what to send so that an AWX object matches the data.

Playbook-adjacent (loaded only by playbooks in awx/): the logic that decides create,
update or nothing lives here, small and unit-tested (tests/unit/awx/test_awx_filters.py).
"""

from __future__ import annotations

from typing import Any

DOCUMENTATION = r"""
name: awx_changes
short_description: Fields of an AWX object that differ from the wanted ones
description:
  - Compares the object as the AWX API returns it with the wanted fields and returns only the
    fields to PATCH (all of them when the object does not exist yet).
  - C(inputs) (credentials) is compared per key. Secret inputs come back as C($encrypted$), so
    they are sent only when missing on the object or when I(update_secrets) is true; when any
    input is sent, all are (AWX replaces C(inputs) as a whole).
"""


def awx_changes(current: dict[str, Any] | None, desired: dict[str, Any], secret_inputs: list[str] | None = None,
                update_secrets: bool = False) -> dict[str, Any]:
    """Return the fields of desired to send so that current matches it ({} when it already does)."""
    if not current:
        return dict(desired)
    secrets = set(secret_inputs or [])
    changes: dict[str, Any] = {}
    for key, want in desired.items():
        if key == "inputs" and isinstance(want, dict):
            have = current.get("inputs") or {}
            if any(_input_differs(k, v, have, secrets, update_secrets) for k, v in want.items()):
                changes[key] = want
        elif current.get(key) != want:
            changes[key] = want
    return changes


def _input_differs(key: str, want: Any, have: dict[str, Any], secrets: set[str], update_secrets: bool) -> bool:
    if key in secrets:
        return update_secrets or key not in have
    return have.get(key) != want


def awx_secret_fields(credential_type: dict[str, Any]) -> list[str]:
    """Ids of the secret fields of a credential type (its inputs.fields with secret: true)."""
    fields = (credential_type.get("inputs") or {}).get("fields") or []
    return [f["id"] for f in fields if f.get("secret")]


_QUESTION_KEYS = ("question_name", "question_description", "required", "type", "variable", "default", "choices", "min", "max")


def awx_survey_spec(questions: list[dict[str, Any]] | None, name: str = "") -> dict[str, Any]:
    """The survey_spec AWX stores for these questions ({} when there are none)."""
    if not questions:
        return {}
    spec = []
    for question in questions:
        item: dict[str, Any] = {"question_description": "", "required": False}
        item.update({k: v for k, v in question.items() if k in _QUESTION_KEYS})
        spec.append(item)
    return {"name": name, "description": "", "spec": spec}


class FilterModule:
    """AWX configuration filters."""

    def filters(self) -> dict[str, Any]:
        return {"awx_changes": awx_changes, "awx_secret_fields": awx_secret_fields, "awx_survey_spec": awx_survey_spec}
