"""awx/configure.yml against a STAND-IN AWX API (tests/unit/awx/awx_standin.py), not a real AWX.

No AWX server can run in CI. The stand-in serves the subset of the REST API v2 the playbook
uses, on 127.0.0.1, from memory. The real playbook runs with ansible-playbook:
check mode on an empty controller reports changes and writes nothing; the first run creates
everything; the objects then match awx/config.yml; a second run (and a check-mode run)
changes nothing and writes nothing; an object changed by hand is put back; the token and
the secrets never appear in the output; a wrong token fails with a clear message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
sys.path.insert(0, str(Path(__file__).parent))
from awx_standin import StandInAWX  # noqa: E402

TOKEN = "standin-token-5f0c9e"
SECRETS = {
    "awx_machine_username": "root",
    "awx_machine_ssh_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nstandin-key-b64\n-----END OPENSSH PRIVATE KEY-----\n",
    "awx_kubeconfig": "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: standin-kube-secret}}]\n",
}
# localhost as AWX's execution environment has it: local, with the Python running Ansible.
LOCALHOST = {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                             "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}
CONFIG = yaml.safe_load((ROOT / "awx" / "config.yml").read_text().replace("!unsafe ", ""))["awx_config"]


def run_configure(tmp_path: Path, url: str, *extra: str, token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    extra_vars = tmp_path / "site.json"
    extra_vars.write_text(json.dumps({"awx_controller_host": url, "awx_controller_token": token,
                                      "awx_project_scm_url": "https://git.example/clusterdos/cluster.git",
                                      "awx_project_sync_delay": 0, **SECRETS}))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_NOCOLOR="1", PATH=f"{BIN}:{os.environ['PATH']}")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(LOCALHOST))
    return subprocess.run([str(BIN / "ansible-playbook"), "-i", str(inventory), str(ROOT / "awx" / "configure.yml"),
                           "-e", f"@{extra_vars}", *extra], capture_output=True, text=True, env=env, check=False)


def recap(result: subprocess.CompletedProcess[str]) -> dict[str, int]:
    match = re.search(r"^localhost\s*:\s*(.*)$", result.stdout, re.MULTILINE)
    assert match, result.stdout + result.stderr
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match.group(1))}


@pytest.fixture(scope="module")
def applied(tmp_path_factory):
    """A stand-in AWX, a check-mode run on it while empty, then the first real run."""
    tmp = tmp_path_factory.mktemp("awx")
    with StandInAWX(TOKEN) as awx:
        check = run_configure(tmp, awx.url, "--check")
        writes_in_check = list(awx.writes())
        first = run_configure(tmp, awx.url)
        writes_after_first = len(awx.writes())
        second = run_configure(tmp, awx.url, "-v")
        check_again = run_configure(tmp, awx.url, "--check")
        writes_again = awx.writes()[writes_after_first:]
        yield awx, tmp, check, writes_in_check, first, (second, check_again, writes_again)


def test_standin_check_mode_on_empty_controller_reports_changes_and_writes_nothing(applied):
    _, _, check, writes_in_check, _, _ = applied
    assert check.returncode == 0, check.stdout + check.stderr
    assert writes_in_check == []
    assert recap(check)["changed"] > 0


def test_standin_first_run_creates_everything(applied):
    awx, _, _, _, first, _ = applied
    assert first.returncode == 0, first.stdout + first.stderr
    assert recap(first)["changed"] > 0
    assert [o["name"] for o in awx.objects["projects"].values()] == [CONFIG["project"]["name"]]
    assert sorted(o["name"] for o in awx.objects["job_templates"].values()) == sorted(
        jt["name"] for jt in CONFIG["job_templates"])


def test_standin_objects_match_the_data(applied):
    awx, _, _, _, _, _ = applied
    org = awx.find("organizations", name="Default")[0]["id"]
    project = awx.find("projects", name=CONFIG["project"]["name"])[0]
    assert project["organization"] == org and project["scm_url"] == "https://git.example/clusterdos/cluster.git"
    inventory = awx.find("inventories", name=CONFIG["inventory"]["name"])[0]
    source = awx.find("inventory_sources", name=CONFIG["inventory_source"]["name"])[0]
    assert (source["inventory"], source["source_project"], source["source"]) == (inventory["id"], project["id"], "scm")

    ctype = awx.find("credential_types", name="clusterdOS kubeconfig")[0]
    assert ctype["injectors"]["env"] == {"K8S_AUTH_KUBECONFIG": "{{ tower.filename.kubeconfig }}"}
    assert ctype["injectors"]["file"] == {"template.kubeconfig": "{{ kubeconfig }}"}
    kube = awx.find("credentials", name="clusterdOS kubeconfig")[0]
    assert kube["credential_type"] == ctype["id"] and kube["inputs"] == {"kubeconfig": SECRETS["awx_kubeconfig"]}
    machine = awx.find("credentials", name="clusterdOS machine")[0]
    assert machine["credential_type"] == awx.find("credential_types", name="Machine")[0]["id"]
    assert machine["inputs"]["ssh_key_data"] == SECRETS["awx_machine_ssh_key"]

    creds = {c["id"]: c["name"] for c in awx.objects["credentials"].values()}
    for want in CONFIG["job_templates"]:
        jt = awx.find("job_templates", name=want["name"])[0]
        assert (jt["playbook"], jt["project"], jt["inventory"]) == (want["playbook"], project["id"], inventory["id"])
        assert jt["ask_variables_on_launch"] is False
        assert [creds[i] for i in awx.links[("job_templates", jt["id"], "credentials")]] == want["credentials"]
        survey = awx.surveys[("job_templates", jt["id"])]
        assert jt["survey_enabled"] is True
        assert [q["variable"] for q in survey["spec"]] == [q["variable"] for q in want["survey"]]
        for got, asked in zip(survey["spec"], want["survey"]):
            assert {k: got[k] for k in asked} == asked

    wf_want = CONFIG["workflow_job_templates"][0]
    wf = awx.find("workflow_job_templates", name=wf_want["name"])[0]
    nodes = {n["identifier"]: n for n in awx.find("workflow_job_template_nodes", workflow_job_template=wf["id"])}
    jt_names = {o["id"]: o["name"] for o in awx.objects["job_templates"].values()}
    assert {k: jt_names[n["unified_job_template"]] for k, n in nodes.items()} == {"site": "clusterdOS site",
                                                                                  "validate": "clusterdOS validate"}
    assert awx.links[("workflow_job_template_nodes", nodes["site"]["id"], "success_nodes")] == [nodes["validate"]["id"]]
    assert awx.links.get(("workflow_job_template_nodes", nodes["validate"]["id"], "success_nodes"), []) == []
    assert [q["variable"] for q in awx.surveys[("workflow_job_templates", wf["id"])]["spec"]] == [
        "clusterdos_kubernetes_version", "addons_enabled"]


def test_standin_second_run_and_check_mode_change_nothing(applied):
    second, check, writes_again = applied[5]
    assert second.returncode == 0, second.stdout + second.stderr
    assert recap(second)["changed"] == 0, second.stdout
    assert check.returncode == 0, check.stdout + check.stderr
    assert recap(check)["changed"] == 0, check.stdout
    assert writes_again == []


def test_standin_drift_is_put_back(applied):
    awx, tmp, _, _, _, _ = applied
    jt = awx.find("job_templates", name="clusterdOS upgrade")[0]
    jt["playbook"] = "playbooks/site.yml"
    awx.surveys.pop(("job_templates", jt["id"]))
    validate = awx.find("job_templates", name="clusterdOS validate")[0]
    awx.links[("job_templates", validate["id"], "credentials")].pop()

    fixed = run_configure(tmp, awx.url)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert recap(fixed)["changed"] == 3, fixed.stdout
    assert jt["playbook"] == "playbooks/upgrade.yml"
    assert ("job_templates", jt["id"]) in awx.surveys
    assert len(awx.links[("job_templates", validate["id"], "credentials")]) == 2


def test_standin_output_shows_no_token_or_secret(applied):
    _, _, check, _, first, (second, check_again, _) = applied
    for result in (check, first, second, check_again):
        text = result.stdout + result.stderr
        for secret in (TOKEN, "standin-key-b64", "standin-kube-secret"):
            assert secret not in text


def test_standin_wrong_token_fails_with_a_clear_message(tmp_path):
    with StandInAWX(TOKEN) as awx:
        result = run_configure(tmp_path, awx.url, token="wrong")
        assert result.returncode != 0
        assert "Organization 'Default' not found" in result.stdout and "HTTP 401" in result.stdout
        assert awx.writes() == []
