"""Small helpers shared by the lab: errors, timed steps, running commands."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Iterator, Sequence


class LabError(Exception):
    """An error the user can fix; printed without a traceback."""


def log(message: str) -> None:
    print(f"[lab] {message}", file=sys.stderr, flush=True)


@contextmanager
def step(title: str, timings: dict[str, float] | None = None) -> Iterator[None]:
    """Print a step's title, then how long it took."""
    log(f"{title} ...")
    start = time.monotonic()
    try:
        yield
    finally:
        elapsed = time.monotonic() - start
        if timings is not None:
            timings[title] = round(elapsed, 2)
        log(f"{title}: {elapsed:.1f}s")


def run(argv: Sequence[str], *, check: bool = True, capture: bool = True,
        input_text: str | None = None, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run argv (never a shell string); raise LabError with stderr on failure."""
    try:
        proc = subprocess.run(
            list(argv), check=False, text=True, input=input_text, timeout=timeout,
            stdout=subprocess.PIPE if capture else None,
            stderr=subprocess.PIPE if capture else None,
        )
    except FileNotFoundError as exc:
        raise LabError(f"{argv[0]}: command not found") from exc
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"{' '.join(argv)}: timed out after {timeout}s") from exc
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout or "").strip()
        raise LabError(f"{' '.join(argv)} failed ({proc.returncode}): {detail[-2000:]}")
    return proc


def require_root() -> None:
    if os.geteuid() != 0:
        raise LabError("the lab needs root (it creates bridges, firewall rules and privileged hosts); run it with sudo")


def require_tools(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        hint = {
            "podman": "podman runc netavark aardvark-dns",
            "debootstrap": "debootstrap",
            "apt-cacher-ng": "apt-cacher-ng",
            "iptables": "iptables",
            "ssh": "openssh-client",
            "ssh-keygen": "openssh-client",
            "qemu-system-x86_64": "qemu-system-x86 qemu-utils",
            "qemu-img": "qemu-utils",
            "mkfs.ext4": "e2fsprogs",
        }
        pkgs = " ".join(sorted({hint.get(t, t) for t in missing}))
        raise LabError(f"missing tools: {', '.join(missing)}; install them with: apt-get install -y {pkgs}")


def mem_available_mib() -> int:
    with open("/proc/meminfo", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def terminate(pid: int, grace_s: float = 5.0) -> None:
    """SIGTERM a process, then SIGKILL it if it is still there after grace_s."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
