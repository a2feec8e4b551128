"""Limits of this machine that decide whether it can start more lab hosts.

Measured here (docs/lab.md, "When the machine cannot start more hosts"): every podman
host runs systemd, which opens inotify instances (systemd, journald, logind, udevd,
dbus ...) as root. When root's `fs.inotify.max_user_instances` (128 by default) is used
up, a new container's systemd exits at once with status 255 and prints nothing. The lab
checks the headroom before it starts hosts, and explains a host that exits at once.
"""

from __future__ import annotations

import os
from pathlib import Path

from .util import LabError

INOTIFY_LIMIT = Path("/proc/sys/fs/inotify/max_user_instances")
# Inotify instances one lab host holds as root (systemd and its services): 8 counted on
# each kubeadm lab host here (systemd, journald, logind, dbus, containerd, kubelet).
INSTANCES_PER_HOST = 8
# What to raise the limit to: enough for four labs of up to 30 hosts (docs/lab.md).
SUGGESTED_LIMIT = 1024


def inotify_limit(path: Path = INOTIFY_LIMIT) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None


def inotify_instances(uid: int = 0, proc: Path = Path("/proc")) -> int:
    """Inotify instances open by processes of UID (each open inotify file descriptor).

    The kernel does not publish its per-user count; a descriptor shared by fork is counted
    twice, so this can over-count a little, never under-count."""
    count = 0
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue  # the process ended, or is not ours to read
        for fd in fds:
            try:
                if os.readlink(fd) == "anon_inode:inotify":
                    count += 1
            except OSError:
                continue
    return count


def raise_hint(limit_name: str = "fs.inotify.max_user_instances", value: int = SUGGESTED_LIMIT) -> str:
    return (f"raise it with `sysctl -w {limit_name}={value}` (and keep it across reboots: "
            f"`echo {limit_name}={value} > /etc/sysctl.d/60-clusterdos-lab.conf`), "
            "or take other labs down first (`clusterdos-lab status`, `clusterdos-lab down --name NAME`)")


def check_inotify_headroom(new_hosts: int, *, limit: int | None = None, in_use: int | None = None) -> None:
    """Refuse to start NEW_HOSTS podman hosts when root's inotify instances would run out."""
    if new_hosts <= 0:
        return
    limit = inotify_limit() if limit is None else limit
    if limit is None:
        return  # no such knob on this kernel: nothing to check
    in_use = inotify_instances() if in_use is None else in_use
    need = new_hosts * INSTANCES_PER_HOST
    if in_use + need > limit:
        raise LabError(
            f"this machine cannot start {new_hosts} more host(s): root's inotify instances would run out "
            f"(fs.inotify.max_user_instances = {limit}, about {in_use} in use, each host's systemd needs "
            f"about {INSTANCES_PER_HOST}); a host started anyway exits at once with status 255 and no message; "
            + raise_hint(value=max(SUGGESTED_LIMIT, in_use + need + 128)))


def explain_exit(host: str, exit_code: int, log_tail: str, *, limit: int | None = None,
                 in_use: int | None = None) -> str:
    """Why a lab host's container stopped right after it started, as far as this machine can tell."""
    limit = inotify_limit() if limit is None else limit
    in_use = inotify_instances() if in_use is None else in_use
    message = f"lab host {host} exited right after it started (status {exit_code})"
    if limit is not None and (exit_code == 255 or not log_tail.strip()) and in_use + INSTANCES_PER_HOST > limit:
        return (f"{message}: root's inotify instances are used up (fs.inotify.max_user_instances = {limit}, "
                f"about {in_use} in use), so its systemd could not start; " + raise_hint())
    tail = log_tail.strip()[-1500:] or "(it printed nothing)"
    return f"{message}; its last output: {tail}"
