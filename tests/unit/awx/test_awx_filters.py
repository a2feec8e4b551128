"""awx/filter_plugins/awx_config.py: what awx/configure.yml sends to make an object match."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "awx" / "filter_plugins"))
from awx_config import awx_changes, awx_secret_fields, awx_survey_spec  # noqa: E402

WANT = {"name": "c", "credential_type": 3, "inputs": {"username": "root", "ssh_key_data": "KEY"}}


@pytest.mark.parametrize(("current", "update_secrets", "expected"), [
    ({}, False, WANT),
    ({"id": 1, "name": "c", "credential_type": 3, "inputs": {"username": "root", "ssh_key_data": "$encrypted$"}},
     False, {}),
    ({"id": 1, "name": "c", "credential_type": 3, "inputs": {"username": "root", "ssh_key_data": "$encrypted$"}},
     True, {"inputs": WANT["inputs"]}),
    ({"id": 1, "name": "c", "credential_type": 3, "inputs": {"username": "admin", "ssh_key_data": "$encrypted$"}},
     False, {"inputs": WANT["inputs"]}),
    ({"id": 1, "name": "c", "credential_type": 3, "inputs": {"username": "root"}}, False, {"inputs": WANT["inputs"]}),
    ({"id": 1, "name": "c", "credential_type": 4, "inputs": {"username": "root", "ssh_key_data": "$encrypted$"}},
     False, {"credential_type": 3}),
], ids=["absent", "same", "update-secrets", "input-changed", "secret-missing", "field-changed"])
def test_awx_changes(current, update_secrets, expected):
    assert awx_changes(current, WANT, ["ssh_key_data"], update_secrets) == expected


def test_secret_fields_of_a_credential_type():
    ctype = {"inputs": {"fields": [{"id": "kubeconfig", "secret": True}, {"id": "context"}]}}
    assert awx_secret_fields(ctype) == ["kubeconfig"]


def test_survey_spec_fills_what_awx_stores_and_keeps_only_question_keys():
    spec = awx_survey_spec([{"variable": "node", "question_name": "Node", "type": "text", "required": True,
                             "note": "ignored"}], "clusterdOS add_node")
    assert spec == {"name": "clusterdOS add_node", "description": "", "spec": [
        {"question_description": "", "required": True, "variable": "node", "question_name": "Node", "type": "text"}]}
    assert awx_survey_spec([], "x") == {}
