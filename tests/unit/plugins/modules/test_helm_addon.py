"""helm_addon: what it decides and the exact helm commands it runs.

The release cases (tests/unit/addons/release_cases.yml) replay RECORDED helm answers
that stand in for a Kubernetes API server, which cannot run in CI; their names say so.
The argument-spec tests run the module's main() for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args

from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import (
    ChartSource,
    HelmError,
    HelmRelease,
    ReleaseRequest,
)
from ansible_collections.clusterdos.cluster.plugins.modules import helm_addon

CASES = yaml.safe_load((Path(__file__).parents[2] / "addons" / "release_cases.yml").read_text())
SOURCE = ChartSource(ref="widget", version="1.1.0", repo_url="https://charts.example.org")


class RecordedApiServer:
    """Stands in for helm talking to an API server: checks each argv, returns the recorded answer."""

    def __init__(self, steps, values):
        self.steps = list(steps)
        self.values = values
        self.calls = 0

    def __call__(self, argv):
        assert self.calls < len(self.steps), f"unexpected extra helm call: {argv}"
        step = self.steps[self.calls]
        self.calls += 1
        if "--values" in argv:
            path = argv[argv.index("--values") + 1]
            assert json.loads(Path(path).read_text()) == self.values
            argv = [("<values>" if a == path else a) for a in argv]
        assert argv == step["argv"]
        out = json.dumps(step["out_json"]) if "out_json" in step else step.get("out", "")
        return step.get("rc", 0), out, step.get("err", "")


@pytest.mark.parametrize("case", CASES, ids=[f"recorded-api-server-{c['id']}" for c in CASES])
def test_release_against_recorded_api_server(case, tmp_path):
    req = dict(case["request"])
    req.setdefault("values", {})
    server = RecordedApiServer(case["steps"], req["values"])
    helm = HelmRelease(server, kubeconfig=case.get("kubeconfig"), tmpdir=str(tmp_path))
    request = ReleaseRequest(source=SOURCE if req.get("state", "present") == "present" else None, **req)
    if "error" in case:
        with pytest.raises(HelmError) as err:
            helm.ensure(request, check_mode=case.get("check_mode", False), want_diff=case.get("diff", False))
        assert case["error"] in err.value.msg
    else:
        result = helm.ensure(request, check_mode=case.get("check_mode", False), want_diff=case.get("diff", False))
        for key, want in case["result"].items():
            assert getattr(result, key) == want, key
        if case.get("diff_equal"):
            assert result.diff["before"] == result.diff["after"]
    assert server.calls == len(case["steps"]), "helm calls the module did not make"
    assert list(tmp_path.iterdir()) == [], "the values file was left behind"


# --- the module's argument spec, through main() -------------------------------------------
def _main(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        helm_addon.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ({"name": "x", "namespace": "y", "chart": "c", "chart_version": "1.0.0"},
         "state is present but any of the following are missing: repo_url, chart_path"),
        ({"name": "x", "namespace": "y", "repo_url": "https://r", "chart_path": "/c"}, "parameters are mutually exclusive: repo_url|chart_path"),
        ({"name": "x", "namespace": "y", "repo_url": "https://r", "chart": "c"}, "missing parameter(s) required by 'repo_url': chart_version"),
        ({"name": "x", "namespace": "y", "values": ["replicas", 2], "chart_path": "/c"},
         "argument 'values' is of type list and we were unable to convert to dict"),
    ],
)
def test_argument_spec_refuses_bad_input(args, msg, capsys):
    out = _main({**args, "binary_path": "/bin/false"}, capsys)
    assert out["failed"] is True
    assert msg in out["msg"]


def test_registry_mirror_must_be_a_registry_not_a_url(capsys):
    out = _main({"name": "x", "namespace": "y", "chart_path": "/c", "image_registry_mirror": "https://registry.site",
                 "binary_path": "/bin/false"}, capsys)
    assert "image_registry_mirror must be a registry host[:port][/prefix] without a scheme" in out["msg"]


class FlakyApiServer:
    """Stands in for an API server that answers helm with the given (rc, stderr) in turn,
    then success; records every call and every pause (no real sleeping)."""

    def __init__(self, failures):
        self.failures = list(failures)
        self.calls = []
        self.pauses = []

    def __call__(self, argv):
        self.calls.append(argv)
        if self.failures:
            rc, err = self.failures.pop(0)
            return rc, "", err
        return 0, "v4.1.4+g0\n" if argv[1:2] == ["version"] else "[]", ""


UNAVAILABLE = ("Error: unable to build kubernetes objects from release manifest: error validating \"\": "
               "error validating data: failed to download openapi: the server is currently unable to handle the request")


def test_transient_api_error_is_tried_again_then_succeeds():
    server = FlakyApiServer([(1, UNAVAILABLE), (1, "Error: Kubernetes cluster unreachable: dial tcp 127.0.0.1:8443: connect: connection refused")])
    helm = HelmRelease(server, sleep=server.pauses.append)
    assert helm._call(["helm", "list"], "list") == "[]"
    assert len(server.calls) == 3 and server.pauses == [5.0, 10.0]
    assert [what for what, _ in helm.retried] == ["list", "list"]
    assert "unable to handle the request" in helm.retried[0][1]


def test_transient_api_error_that_persists_fails_after_four_tries():
    server = FlakyApiServer([(1, UNAVAILABLE)] * 4)
    helm = HelmRelease(server, sleep=server.pauses.append)
    with pytest.raises(HelmError) as err:
        helm._call(["helm", "list"], "list releases")
    assert err.value.msg.startswith("helm failed to list releases (after 4 tries): ")
    assert len(server.calls) == 4 and server.pauses == [5.0, 10.0, 20.0]


def test_other_errors_are_not_tried_again():
    server = FlakyApiServer([(1, "Error: values don't meet the specifications of the schema(s)")])
    helm = HelmRelease(server, sleep=server.pauses.append)
    with pytest.raises(HelmError) as err:
        helm._call(["helm", "upgrade"], "install or upgrade x")
    assert err.value.msg == "helm failed to install or upgrade x: Error: values don't meet the specifications of the schema(s)"
    assert len(server.calls) == 1 and server.pauses == [] and helm.retried == []
