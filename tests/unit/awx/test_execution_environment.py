"""execution-environment.yml is a valid ansible-builder v3 definition with every dependency pinned.

Runs the real `ansible-builder create` on a copy of the definition (with the collection built
from this checkout) and parses the build context it writes: the Containerfile's build args,
_build/requirements.txt, _build/requirements.yml and _build/bindep.txt. Nothing is pulled or
built; no container engine is used. Also runs awx/ee/install_tool.py (the helm/kubectl fetch
step) against file:// URLs: the right checksum installs, a wrong one refuses.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[3]
BIN = ROOT / ".venv" / "bin"
EE_FILE = ROOT / "execution-environment.yml"
INSTALL_TOOL = ROOT / "awx" / "ee" / "install_tool.py"
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())

sys.path.insert(0, str(INSTALL_TOOL.parent))
import install_tool  # noqa: E402


def _builder() -> Path:
    exe = BIN / "ansible-builder"
    if not exe.exists():
        found = shutil.which("ansible-builder")
        if not found:
            pytest.skip("ansible-builder is not installed: add ansible-builder==3.2.0 to requirements-dev.txt")
        exe = Path(found)
    return exe


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    """Build context written by `ansible-builder create` from a copy of the definition."""
    work = tmp_path_factory.mktemp("ee")
    shutil.copy(EE_FILE, work / "execution-environment.yml")
    (work / "awx" / "ee" / "collections").mkdir(parents=True)
    shutil.copy(INSTALL_TOOL, work / "awx" / "ee" / "install_tool.py")
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", str(ROOT), "--output-path",
                    str(work / "awx" / "ee" / "collections")], check=True, capture_output=True, text=True)
    result = subprocess.run([str(_builder()), "create", "-f", "execution-environment.yml", "-c", "context"],
                            cwd=work, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return work / "context"


def _build_args(containerfile: str) -> dict[str, str]:
    """Every ARG NAME=VALUE of the Containerfile, quotes removed, ${VAR} expanded from earlier ones."""
    args: dict[str, str] = {}
    for name, value in re.findall(r"^ARG (\w+)=(.*)$", containerfile, re.MULTILINE):
        value = value.strip().strip('"')
        args[name] = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], value)
    return args


def _pinned(requirement: str) -> bool:
    spec = list(Requirement(requirement).specifier)
    return len(spec) == 1 and spec[0].operator == "=="


def test_definition_is_v3():
    definition = yaml.safe_load(EE_FILE.read_text())
    assert definition["version"] == 3
    assert definition["images"]["base_image"]["name"]


def test_python_packages_are_pinned(context):
    lines = [ln.strip() for ln in (context / "_build" / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    reqs = {Requirement(ln).name.lower(): ln for ln in lines}
    for needed in ("kubernetes", "netaddr", "jinja2", "jmespath", "pyyaml"):
        assert needed in reqs, f"{needed} missing from _build/requirements.txt: {lines}"
    unpinned = [ln for ln in lines if not _pinned(ln)]
    assert not unpinned, f"not pinned with ==: {unpinned}"


def test_ansible_core_and_runner_are_pinned(context):
    args = _build_args((context / "Containerfile").read_text())
    refs = args["ANSIBLE_INSTALL_REFS"].split()
    assert {Requirement(r).name for r in refs} == {"ansible-core", "ansible-runner"}
    assert all(_pinned(r) for r in refs), refs
    dev_core = next(ln for ln in (ROOT / "requirements-dev.txt").read_text().splitlines() if ln.startswith("ansible-core=="))
    assert dev_core in refs, f"the EE's ansible-core differs from requirements-dev.txt ({dev_core}): {refs}"


def test_base_image_is_an_overridable_build_arg(context):
    args = _build_args((context / "Containerfile").read_text())
    assert args["EE_BASE_IMAGE"] == yaml.safe_load(EE_FILE.read_text())["images"]["base_image"]["name"]
    assert args["PYCMD"] == "/usr/bin/python3.12"


def test_collections_match_galaxy_yml(context):
    collections = yaml.safe_load((context / "_build" / "requirements.yml").read_text())["collections"]
    ranges = {c["name"]: c.get("version") for c in collections if c.get("type") != "file"}
    assert ranges == GALAXY["dependencies"], "collection ranges differ from galaxy.yml's dependencies"
    own = [c["name"] for c in collections if c.get("type") == "file"]
    expected = f"{GALAXY['namespace']}-{GALAXY['name']}-{GALAXY['version']}.tar.gz"
    assert own == [f"/build/collections/{expected}"], f"the collection itself should be {expected} (galaxy.yml's version)"
    # The galaxy stage copies _build to /build: the tarball must be in the context.
    assert (context / "_build" / "collections" / expected).is_file()


def test_system_packages_are_bindep_rpm_entries(context):
    lines = [ln for ln in (context / "_build" / "bindep.txt").read_text().splitlines() if ln.strip()]
    assert lines and all(re.match(r"^[\w.+-]+ \[platform:rpm\]$", ln) for ln in lines), lines


def test_helm_and_kubectl_are_pinned_with_checksums(context):
    containerfile = (context / "Containerfile").read_text()
    args = _build_args(containerfile)
    for tool in ("HELM", "KUBECTL"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", args[f"{tool}_VERSION"]), args[f"{tool}_VERSION"]
        assert re.fullmatch(r"[0-9a-f]{64}", args[f"{tool}_SHA256"]), args[f"{tool}_SHA256"]
        assert f"v{args[f'{tool}_VERSION']}" in args[f"{tool}_URL"]
        # The fetch step really uses the pinned checksum and the overridable URL.
        assert f'--url "${tool}_URL"' in containerfile and f'--sha256 "${tool}_SHA256"' in containerfile
    assert (context / "_build" / "tools" / "install_tool.py").read_bytes() == INSTALL_TOOL.read_bytes()


@pytest.mark.parametrize(("tool", "version_argv", "pattern"), [
    ("helm", ["version", "--short"], r"v(\d+\.\d+\.\d+)"),
    ("kubectl", ["version", "--client"], r"Client Version: v(\d+\.\d+\.\d+)"),
])
def test_pinned_checksums_are_of_the_official_binaries(context, tool, version_argv, pattern):
    """The pins equal the sha256 of the same-version binaries scripts/install-helm.sh installs."""
    exe = BIN / tool
    if not exe.exists():
        pytest.skip(f"{exe} not installed (scripts/install-helm.sh)")
    out = subprocess.run([str(exe), *version_argv], capture_output=True, text=True, check=True).stdout
    args = _build_args((context / "Containerfile").read_text())
    local_version = re.search(pattern, out).group(1)
    if local_version != args[f"{tool.upper()}_VERSION"]:
        pytest.skip(f"local {tool} is {local_version}, the EE pins {args[f'{tool.upper()}_VERSION']}")
    assert hashlib.sha256(exe.read_bytes()).hexdigest() == args[f"{tool.upper()}_SHA256"]


def _tarball(tmp_path: Path, member: str, data: bytes) -> Path:
    archive = tmp_path / "tool.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return archive


def test_install_tool_installs_a_matching_member_from_a_file_mirror(tmp_path):
    data = b"#!/bin/sh\necho helm\n"
    archive = _tarball(tmp_path, "linux-amd64/helm", data)
    dest = tmp_path / "bin" / "helm"
    rc = install_tool.main(["--url", archive.as_uri(), "--member", "linux-amd64/helm",
                            "--sha256", hashlib.sha256(data).hexdigest(), "--dest", str(dest)])
    assert rc == 0
    assert dest.read_bytes() == data
    assert dest.stat().st_mode & 0o777 == 0o755


def test_install_tool_refuses_a_checksum_mismatch(tmp_path, capsys):
    binary = tmp_path / "kubectl"
    binary.write_bytes(b"not the pinned kubectl")
    dest = tmp_path / "bin" / "kubectl"
    rc = install_tool.main(["--url", binary.as_uri(), "--sha256", "0" * 64, "--dest", str(dest)])
    assert rc == 1
    assert "refusing to install" in capsys.readouterr().err
    assert not dest.exists()
