"""Kata's preflight, run for real on this machine: /dev/kvm exists here but the CPU
offers no vmx/svm to it (a paravirtual hypervisor), so Kata must be refused before any
change, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

CPU_FLAGS = next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), [])


@pytest.mark.skipif(bool({"vmx", "svm"} & set(CPU_FLAGS)), reason="this machine has hardware virtualization")
def test_kata_refused_without_hardware_virtualization(role_runner):
    proc, _ = role_runner("kata", "validate.yml", {"kata_checksum": "sha256:" + "0" * 64}, gather_facts=True)
    assert proc.returncode != 0
    assert "Kata Containers cannot run on localhost" in proc.stdout
    assert "neither vmx nor svm" in proc.stdout


def test_kata_checksum_required(role_runner):
    proc, _ = role_runner("kata", "validate.yml", {"kata_preflight": False}, gather_facts=True)
    assert proc.returncode != 0
    assert "kata_checksum the pinned digest of kata-static-3.18.0-amd64.tar.xz" in proc.stdout


def test_gvisor_refuses_unknown_install_method(role_runner):
    proc, _ = role_runner("gvisor", "validate.yml", {"gvisor_install_method": "snap"}, gather_facts=True)
    assert proc.returncode != 0
    assert "gvisor_install_method must be 'release' or 'package' (got snap)" in proc.stdout
