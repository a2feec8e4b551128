"""The validate role's own input checks (its main entry point: the describe task finds each
host's problems, roles/validate/tasks/validate.yml fails once for all of them), run through
ansible-playbook on this machine (connection local, nothing changed): every problem of the
report settings and of the host's declared GPUs, labels and taints is named at once in one
failure, and good values pass."""

from __future__ import annotations

import pytest

GOOD = {"validate_report_formats": ["json", "junit"], "validate_report_dir": "/tmp/clusterdos-report",
        "validate_node_gpus": [{"vendor": "nvidia", "type": "h100", "count": 8}],
        "validate_node_labels": {"zone": "a"}, "validate_node_taints": ["gpu=true:NoSchedule"]}


def test_good_inputs_pass(role_runner):
    proc, _ = role_runner("validate", "main.yml", GOOD)
    assert proc.returncode == 0, proc.stdout[-3000:]


@pytest.mark.parametrize(
    ("bad", "messages"),
    [
        ({"validate_report_formats": ["pdf"]}, ["validate_report_formats must list json, junit and/or html"]),
        ({"validate_report_dir": "relative"}, ["validate_report_dir must be an absolute path (got relative)"]),
        ({"validate_node_gpus": [{"type": "h100", "count": 8}]}, ["each GPU entry"]),
        ({"validate_node_gpus": [{"vendor": "intel", "count": "eight"}]}, ["needs vendor nvidia or amd",
          "got [{", "eight"]),
        ({"validate_node_taints": ["gpu=true:Sometimes"]}, ["taints a list of KEY[=VALUE]:EFFECT",
                                                                    "got labels {", "taints [", "Sometimes"]),
        ({"validate_node_labels": ["zone=a"]}, ["node labels must be a mapping"]),
        # Several problems: one failure names each of them.
        ({"validate_report_dir": "relative", "validate_node_gpus": [{"vendor": "amd"}],
          "validate_node_taints": "gpu:NoSchedule"},
         ["validate_report_dir must be an absolute path", "each GPU entry", "node labels must be a mapping and taints"]),
    ],
    ids=["format", "dir", "gpu-vendor-missing", "gpu-vendor-count", "taint-effect", "labels-list", "all-at-once"],
)
def test_bad_inputs_fail_naming_each_problem(role_runner, bad, messages):
    proc, _ = role_runner("validate", "main.yml", {**GOOD, **bad})
    assert proc.returncode != 0
    failure = proc.stdout[proc.stdout.index("FAILED!"):] if "FAILED!" in proc.stdout else proc.stdout
    for message in messages:
        assert message in " ".join(failure.split()), (message, failure[-2000:])
