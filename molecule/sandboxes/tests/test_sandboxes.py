"""Verify gVisor and Kata on real lab hosts (podman containers with systemd).

What runs for real: Debian's runsc runs a busybox bundle built here on the host, and
the workload sees gVisor's kernel; on the other host the gvisor role's release method
fetches runsc and its shim from a file:// mirror at upstream's layout, checks each against
its .sha512 (a tampered file is refused, nothing installed) and runsc's version; the containerd role (Debian's containerd 1.6) keeps
the runsc and kata handlers in its one CRI drop-in, and the CRI plugin loads with them and
with the role's own settings; the Kata preflight refuses this host (no hardware
virtualization), in sandboxes.yml and in the site-wide host preflight (preflight_hosts.yml),
and Kata's input checks refuse a malformed release pin before any change; the host
preflight accepts the gVisor host and well-formed Lustre client inputs, and storage.yml
refuses a malformed Lustre mount, changing nothing; sandboxes.yml alone re-run on the
converged host changes nothing.
Not exercised here: pods through containerd-shim-runsc-v1 (Debian's runsc has no shim;
the mirror's shim is a STAND-IN script, prepare.yml) and any Kata VM (no usable KVM, no
release tarball offline).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
SCENARIO = Path(__file__).resolve().parent.parent
LAB = yaml.safe_load((EPHEMERAL / "inventory" / "clusterdos_lab.yml").read_text())["all"]

BUNDLE = "/tmp/clusterdos-gvisor-bundle"
GVISOR = "sb-gvisor"
KATA = "sb-kata"


@pytest.fixture(scope="module")
def gvisor(request):
    import testinfra

    return testinfra.get_host(f"ansible://{GVISOR}", ansible_inventory=str(EPHEMERAL / "inventory"))


@pytest.fixture(scope="module")
def kata(request):
    import testinfra

    return testinfra.get_host(f"ansible://{KATA}", ansible_inventory=str(EPHEMERAL / "inventory"))


def _dump(host) -> dict:
    """containerd's merged configuration (config.toml plus every import)."""
    return tomllib.loads(host.check_output("containerd config dump"))


def _runtimes(host) -> dict:
    return _dump(host)["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]


@pytest.fixture(scope="module")
def bundle(gvisor):
    """An OCI bundle whose rootfs is unpacked from busybox-static's .deb (no registry)."""
    gvisor.check_output(
        f"rm -rf {BUNDLE} && mkdir -p {BUNDLE}/rootfs /tmp/clusterdos-deb && cd /tmp/clusterdos-deb"
        f" && apt-get download -q busybox-static && dpkg-deb -x busybox-static_*.deb {BUNDLE}/rootfs"
        f" && cd {BUNDLE} && runsc spec -- /bin/busybox sh -c 'uname -r; busybox dmesg'"
    )
    yield BUNDLE
    gvisor.run(f"rm -rf {BUNDLE} /tmp/clusterdos-deb")


def test_runsc_from_os_package(gvisor):
    assert gvisor.package("runsc").is_installed
    assert gvisor.run("runsc --version").rc == 0


def test_workload_runs_inside_gvisor(gvisor, bundle):
    # Old runsc misreads this machine's cgroups; --network=host avoids its netstack setup.
    out = gvisor.check_output(f"runsc --ignore-cgroups --network=host run --bundle {bundle} clusterdos-smoke")
    lines = out.splitlines()
    host_kernel = gvisor.check_output("uname -r").strip()
    assert "Starting gVisor..." in out
    assert lines[0].strip() != host_kernel, "uname -r inside the sandbox must be gVisor's, not the host's"
    # The host's own dmesg never carries gVisor's banner.
    assert "Starting gVisor" not in gvisor.run("dmesg").stdout


def test_runsc_flags_for_pods(gvisor):
    conf = tomllib.loads(gvisor.file("/etc/containerd/runsc.toml").content_string)
    assert conf["runsc_config"]["platform"] == "systrap"


def test_containerd_loads_gvisor_handler(gvisor):
    runsc = _runtimes(gvisor)["runsc"]
    assert runsc["runtime_type"] == "io.containerd.runsc.v1"
    assert runsc["options"]["ConfigPath"] == "/etc/containerd/runsc.toml"
    assert gvisor.service("containerd").is_running


def _cri_state(host) -> str:
    cri = [line for line in host.check_output("ctr plugins ls").splitlines()
           if line.split()[:2] == ["io.containerd.grpc.v1", "cri"]]
    assert cri, "containerd lists no CRI plugin"
    return cri[0].split()[-1]


@pytest.mark.parametrize("name", [GVISOR, KATA])
def test_cri_plugin_loads_with_every_handler_and_keeps_its_settings(name, gvisor, kata):
    """containerd 1.6 replaces a whole plugin table per imported file
    (containerd/containerd#5837): with a runtime drop-in of its own the CRI plugin fell
    back to defaults or refused to load. The handlers are registered with the containerd
    role instead, so CRI loads with runc, the sandbox handler and the role's settings."""
    host = {GVISOR: gvisor, KATA: kata}[name]
    assert _cri_state(host) == "ok"
    cri = _dump(host)["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10.2"
    assert cri["restrict_oom_score_adj"] is True
    runtimes = cri["containerd"]["runtimes"]
    assert runtimes["runc"]["runtime_type"] == "io.containerd.runc.v2"
    assert cri["containerd"]["default_runtime_name"] == "runc"
    # sb-kata is a gVisor host too (the release method): both handlers in the same table.
    assert {GVISOR: {"runsc"}, KATA: {"kata", "runsc"}}[name] <= set(runtimes)
    # One CRI drop-in on the host; the handler is data in the registry.
    assert host.run("ls /etc/containerd/conf.d").stdout.split() == ["10-clusterdos.toml"]
    handler = {GVISOR: "runsc", KATA: "kata"}[name]
    assert host.file(f"/etc/containerd/runtimes.d/{handler}.json").exists


def test_debian_runsc_has_no_containerd_shim(gvisor):
    """The named gap: pods need containerd-shim-runsc-v1, which Debian's runsc lacks
    (upstream releases ship it; gvisor_install_method: release installs both)."""
    assert gvisor.run("command -v containerd-shim-runsc-v1").rc != 0


# --- gVisor's release method (sb-kata), from the fixture mirror ------------------------------
MIRROR = "/srv/file-mirror/storage.googleapis.com/gvisor/releases/release/20221219.0/x86_64"
RELEASE_FILES = ["runsc", "containerd-shim-runsc-v1"]


@pytest.mark.parametrize("name", RELEASE_FILES)
def test_release_file_fetched_from_the_mirror_matches_its_sha512(kata, name):
    installed = kata.file(f"/usr/local/bin/{name}")
    assert (installed.user, installed.group, installed.mode) == ("root", "root", 0o755)
    published = kata.file(f"{MIRROR}/{name}.sha512").content_string.split()
    assert published[1] == name
    digests = kata.check_output(f"sha512sum /usr/local/bin/{name} {MIRROR}/{name}").split()[::2]
    assert digests == [published[0], published[0]]


def test_release_runsc_is_the_pinned_release_not_a_package(kata):
    assert not kata.package("runsc").is_installed
    assert "runsc version 0.0~20221219.0" in kata.check_output("/usr/local/bin/runsc --version")
    # The shim the role's check found (gvisor_require_shim) is the mirror's stand-in.
    assert "test stand-in" in kata.file("/usr/local/bin/containerd-shim-runsc-v1").content_string


def test_release_method_refuses_a_file_that_does_not_match_its_sha512(kata):
    """A copy of the mirror whose runsc differs from the published digest: the role stops
    at the download, and nothing lands in the (scratch) install directory."""
    tampered, bin_dir = "/srv/tampered-mirror", "/tmp/clusterdos-gvisor-tampered-bin"
    kata.check_output(f"rm -rf {tampered} {bin_dir} && mkdir -p {bin_dir} && cp -a /srv/file-mirror {tampered}"
                      f" && echo tampered >> {tampered}/{MIRROR.removeprefix('/srv/file-mirror/')}/runsc")
    try:
        rc, out = _run(str(SCENARIO / "tests" / "gvisor_release.yml"), "--limit", KATA,
                       "-e", f"gvisor_file_mirror=file://{tampered}", "-e", f"gvisor_bin_dir={bin_dir}")
        assert rc != 0, out
        assert "did not match" in out, out[-3000:]
        assert kata.run(f"ls -A {bin_dir}").stdout.split() == []
    finally:
        kata.run(f"rm -rf {tampered} {bin_dir}")


def test_kata_configuration_rendered_for_qemu(kata):
    conf = tomllib.loads(kata.file("/etc/kata-containers/configuration.toml").content_string)
    qemu = conf["hypervisor"]["qemu"]
    assert qemu["path"] == "/opt/kata/bin/qemu-system-x86_64"
    assert qemu["valid_hypervisor_paths"] == [qemu["path"]]
    assert qemu["machine_type"] == "q35"
    assert qemu["kernel"].startswith("/opt/kata/share/kata-containers/")
    assert conf["runtime"]["internetworking_model"] == "tcfilter"


def test_containerd_loads_kata_handler(kata):
    runtime = _runtimes(kata)["kata"]
    assert runtime["runtime_type"] == "io.containerd.kata.v2"
    assert runtime["options"]["ConfigPath"] == "/etc/kata-containers/configuration.toml"


def test_kata_preflight_refuses_host_without_kvm(kata):
    """sb-kata's CPU has no vmx/svm (software-emulated paravirtual KVM only): the
    sandboxes playbook must stop in its preflight with the reason, changing nothing."""
    rc, out = _run("sandboxes.yml", "-e", "clusterdos_kata_group=kata_render", "-e", "clusterdos_gvisor_group=nogroup",
                   "--limit", f"{KATA},localhost")
    assert rc != 0, out
    assert f"Kata Containers cannot run on {KATA}" in out
    assert "neither vmx nor svm" in out
    assert "changed=0" in out
    assert not kata.file("/opt/kata").exists
    assert not kata.file("/opt/kata-releases").exists


# --- The site-wide host preflight (preflight_hosts.yml) and Kata's input checks --------------
# Group names are parameters: clusterdos_lustre_client_group=gvisor makes sb-gvisor a Lustre
# client for the preflight only (read-only: nothing is installed or mounted).
LUSTRE_MOUNT = {"fsname": "scratch", "mgs_nids": ["10.0.0.1@tcp", "10.0.0.2@tcp"], "path": "/lustre/scratch"}


def _run(playbook, *args):
    """A playbook (a name under playbooks/, or a path) on the lab as the converge runs it
    (molecule/_shared/lab_playbook.py): its exit status, and its plain-text output (the recap
    lines are read below)."""
    run = lab_playbook.run(playbook, *args, inventories=[EPHEMERAL / "inventory"])
    return run.returncode, run.stdout + run.stderr


def test_host_preflight_accepts_gvisor_and_lustre_inputs_changing_nothing(gvisor):
    rc, out = _run("preflight_hosts.yml", "--limit", GVISOR, "-e", "clusterdos_lustre_client_group=gvisor",
                   "-e", json.dumps({"lustre_client_mounts": [LUSTRE_MOUNT]}))
    assert rc == 0, out
    assert "changed=0" in out and "failed=0" in out
    # Both roles' checks ran on the host (not skipped): their last task is reported ok.
    assert "TASK [clusterdos.cluster.gvisor : Check runsc flags are flat key = value pairs]" in out
    assert "TASK [clusterdos.cluster.lustre_client : Check Lustre mounts" in out
    assert not gvisor.file("/etc/lnet.conf").exists
    assert not gvisor.file("/lustre/scratch").exists


def test_storage_playbook_refuses_a_malformed_lustre_mount_before_any_change(gvisor):
    """storage.yml's own preflight (the stage run on its own) stops on a bad Lustre mount."""
    bad = dict(LUSTRE_MOUNT, mgs_nids=["10.0.0.1@eth0"], fsname="much_too_long")
    rc, out = _run("storage.yml", "--limit", f"{GVISOR},localhost", "-e", "clusterdos_lustre_client_group=gvisor",
                   "-e", "clusterdos_nfs_client_group=nogroup", "-e", "clusterdos_storage_server_group=nogroup",
                   "-e", json.dumps({"lustre_client_mounts": [bad]}))
    assert rc != 0, out
    assert "Fix lustre_client_mounts" in out and "fsname 'much_too_long'" in out
    assert "changed=0" in out


def test_host_preflight_refuses_kata_without_kvm(kata):
    rc, out = _run("preflight_hosts.yml", "--limit", KATA, "-e", "clusterdos_kata_group=kata_render")
    assert rc != 0, out
    assert f"Kata Containers cannot run on {KATA}" in out
    assert "changed=0" in out
    assert not kata.file("/opt/kata").exists


def test_the_kata_tag_alone_still_checks_the_host_in_the_stages_host_checks(kata):
    """sandboxes.yml --tags kata: the role play's tag also selects the stage's host checks,
    which refuse a host without KVM before any host changes. Before, that play was tagged
    sandboxes and preflight only, and the refusal came from the Kata play itself."""
    rc, out = _run("sandboxes.yml", "--tags", "kata", "--limit", f"{KATA},localhost",
                   "-e", "clusterdos_kata_group=kata_render", "-e", "clusterdos_gvisor_group=nogroup")
    assert rc != 0, out
    checks = out.split("PLAY [Sandboxes - host checks", 1)[1].split("PLAY [Sandboxes - gVisor", 1)[0]
    assert f"Kata Containers cannot run on {KATA}" in checks, out[-3000:]
    assert "changed=0" in out
    assert not kata.file("/opt/kata").exists


def test_kata_input_checks_refuse_a_malformed_pin_before_any_change(kata):
    """With the KVM preflight off, Kata's own input checks still stop sandboxes.yml on this
    host before anything is downloaded or written."""
    rc, out = _run("sandboxes.yml", "--limit", f"{KATA},localhost", "-e", "clusterdos_kata_group=kata_render",
                   "-e", "clusterdos_gvisor_group=nogroup",
                   "-e", json.dumps({"kata_preflight": False, "kata_checksum": "sha256:1234"}))
    assert rc != 0, out
    assert "the pinned digest of" in out and "got 'sha256:1234'" in out
    assert "changed=0" in out
    assert not kata.file("/opt/kata").exists
    assert not kata.file("/opt/kata-releases").exists


def test_sandboxes_playbook_alone_on_the_converged_host_changes_nothing(gvisor):
    """sandboxes.yml on its own, as a site re-runs a stage: the containerd role is not in the
    run, so the handler registration reads the installed containerd's version itself (the
    config schema) and writes the same CRI drop-in: nothing changes."""
    rc, out = _run("sandboxes.yml", "--limit", f"{GVISOR},localhost", "-e", "clusterdos_kata_group=nogroup")
    assert rc == 0, out
    assert "TASK [clusterdos.cluster.containerd : Find the installed containerd's version" in out
    recap = [line for line in out.splitlines() if line.startswith(GVISOR + " ")]
    assert recap and "changed=0" in recap[-1] and "failed=0" in recap[-1], out[-3000:]
