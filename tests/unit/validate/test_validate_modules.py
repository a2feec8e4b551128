"""The two modules, run in-process with real commands on this machine.

Nothing here stands in for a cluster: with no Slurm, no reachable API server and no
GPU on the CI machine, the checks must fail or skip with the reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.clusterdos.cluster.plugins.modules import cluster_report, cluster_validate


def _call(module, args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_unknown_check_and_missing_kubeconfig(capsys, tmp_path):
    out = _call(cluster_validate, {"checks": ["kubernetes.nodes_ready", "nonsense"],
                                   "kubeconfig": str(tmp_path / "missing.conf"),
                                   "nodes": [{"name": "n1", "kubernetes": True}]}, capsys)
    assert not out.get("failed") and out["changed"] is False
    by_name = {c["name"]: c for c in out["checks"]}
    assert by_name["nonsense"]["status"] == "failed"
    assert by_name["nonsense"]["detail"].startswith("unknown check 'nonsense'")
    assert by_name["kubernetes.nodes_ready"]["detail"] == "kubeconfig %s does not exist on this host" % (
        tmp_path / "missing.conf")
    assert out["summary"] == {"passed": 0, "failed": 2, "skipped": 0, "total": 2}


def test_api_server_that_does_not_answer(capsys, tmp_path):
    """A kubeconfig pointing at a closed loopback port: real kubectl (or its absence) answers."""
    kubeconfig = tmp_path / "admin.conf"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\n"
        "contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n")
    out = _call(cluster_validate, {"checks": ["kubernetes.nodes_ready", "kubernetes.addons"],
                                   "kubeconfig": str(kubeconfig), "timeout": 20}, capsys)
    for check in out["checks"]:
        assert check["status"] == "failed"
        assert check["detail"].startswith("cannot reach the Kubernetes API with kubeconfig %s: " % kubeconfig)


def test_slurm_controller_that_does_not_answer_fails_in_strict_mode(capsys):
    out = _call(cluster_validate, {"checks": ["slurm.controller", "slurm.node_states"], "strict": True,
                                   "nodes": [{"name": "c1", "slurm_compute": True}]}, capsys)
    assert out["failed"] is True
    assert out["msg"] == "2 checks failed: slurm.controller, slurm.node_states"
    for check in out["checks"]:
        assert check["detail"].startswith("the Slurm controller does not answer: ")


def test_report_module_writes_once_then_reports_no_change(capsys, tmp_path):
    args = {"results": [{"name": "slurm.srun", "group": "slurm", "status": "passed", "detail": "ok", "duration": 1.5,
                         "host": "login1"}],
            "nodes": [{"name": "c1", "kind": "worker", "gpus": {"nvidia.com/gpu": 2}}],
            "dest": str(tmp_path / "report"), "generated": "2026-11-29T16:00:00Z", "cluster_name": "lab"}
    first = _call(cluster_report, args, capsys)
    assert first["changed"] is True
    assert sorted(Path(p).name for p in first["files"].values()) == [
        "validation-junit.xml", "validation.html", "validation.json"]
    assert json.loads(Path(first["files"]["json"]).read_text())["summary"]["passed"] == 1
    second = _call(cluster_report, args, capsys)
    assert second["changed"] is False


def test_report_module_rewrites_a_later_run_but_reports_a_change_only_when_the_outcome_moves(capsys, tmp_path):
    """A re-run has its own time and durations: the files are rewritten, changed=0; a check
    whose status moves, a check that appears, or a deleted file is a change."""
    def run(status, generated, duration, extra=()):
        results = [{"name": "slurm.srun", "status": status, "duration": duration, "host": "login1"}, *extra]
        return _call(cluster_report, {"results": results, "dest": str(tmp_path), "generated": generated}, capsys)

    assert run("passed", "2026-11-29T16:00:00Z", 1.5)["changed"] is True
    again = run("passed", "2026-11-29T17:00:00Z", 0.7)
    assert again["changed"] is False
    report = json.loads(Path(again["files"]["json"]).read_text())
    assert report["generated"] == "2026-11-29T17:00:00Z" and report["checks"][0]["duration"] == 0.7
    assert run("failed", "2026-11-29T18:00:00Z", 0.7)["changed"] is True
    assert run("failed", "2026-11-29T18:30:00Z", 0.7,
               [{"name": "slurm.mpi", "status": "passed", "host": "login1"}])["changed"] is True
    Path(again["files"]["html"]).unlink()
    assert run("failed", "2026-11-29T19:00:00Z", 0.7,
               [{"name": "slurm.mpi", "status": "passed", "host": "login1"}])["changed"] is True
    assert Path(again["files"]["html"]).is_file()


def test_report_module_check_mode_writes_nothing(capsys, tmp_path):
    args = {"results": [], "dest": str(tmp_path / "r"), "_ansible_check_mode": True}
    out = _call(cluster_report, args, capsys)
    assert out["changed"] is True and not (tmp_path / "r").exists()


def test_report_module_rejects_results_it_cannot_read(capsys, tmp_path):
    out = _call(cluster_report, {"results": [{"name": "x", "status": "green"}], "dest": str(tmp_path)}, capsys)
    assert out["failed"] is True
    assert out["msg"] == "results must come from cluster_validate: result 0 has no name or an unknown status ('green')"
