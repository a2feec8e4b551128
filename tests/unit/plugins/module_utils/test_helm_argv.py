"""The exact helm argv of every operation (cases in tests/unit/addons/helm_argv.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import ChartSource, HelmCli, HelmError, parse_major, redact_secrets

CASES = yaml.safe_load((Path(__file__).parents[2] / "addons" / "helm_argv.yml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_argv(case):
    cli = HelmCli(**case["cli"])
    method, *args = case["call"]
    kwargs = args.pop() if args and isinstance(args[-1], dict) else {}
    if "source" in case:
        # The chart source follows the positional arguments (what to show; release and namespace).
        args.append(ChartSource(**case["source"]))
    assert getattr(cli, method)(*args, **kwargs) == case["argv"]


@pytest.mark.parametrize(("text", "major"), [("v4.1.4+g05fa379", 4), ("v3.17.2+gcc0bbbd", 3), ("v3.13.0\n", 3)])
def test_parse_major(text, major):
    assert parse_major(text) == major


@pytest.mark.parametrize("text", ["v2.16.0", "garbage", ""])
def test_parse_major_rejects_old_or_unreadable(text):
    with pytest.raises(HelmError):
        parse_major(text)


SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: grafana
data:
  admin-password: c2VjcmV0
  admin-user: YWRtaW4=
type: Opaque"""


def test_diff_never_shows_secret_data_but_shows_that_it_changed():
    redacted = redact_secrets(SECRET)
    assert "c2VjcmV0" not in redacted and "YWRtaW4=" not in redacted
    assert redacted.startswith("apiVersion: v1\nkind: Secret\nmetadata:\n  name: grafana\ndata: <redacted, sha256 ")
    assert redacted.endswith("\ntype: Opaque")
    assert redact_secrets(SECRET.replace("c2VjcmV0", "b3RoZXI=")) != redacted


def test_non_secret_documents_are_left_alone():
    doc = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b"
    assert redact_secrets(doc) == doc
