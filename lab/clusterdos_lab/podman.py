"""podman backend: each lab host is a privileged container with systemd as PID 1.

Measured facts behind the flags (see docs/lab.md): runc, not crun (cgroups v1 hybrid);
explicit ulimits; an --internal network with no DNS; no CAP_SYS_TIME; /etc/hosts and
/etc/resolv.conf left to the image so the collection can manage them.
"""

from __future__ import annotations

import json

from . import limits
from .spec import LabSpec
from .util import LabError, run

LABEL = "clusterdos-lab"


def network_name(spec: LabSpec) -> str:
    return f"clusterdos-{spec.name}"


def container_name(spec: LabSpec, host: str) -> str:
    return f"cdl-{spec.name}-{host}"


def ensure_network(spec: LabSpec) -> str:
    """Create the lab's internal network; return its host-side bridge interface."""
    name = network_name(spec)
    if run(["podman", "network", "exists", name], check=False).returncode != 0:
        run(["podman", "network", "create", "--internal", "--disable-dns",
             "--subnet", spec.subnet, "--gateway", spec.gateway,
             "--label", f"{LABEL}={spec.name}", name])
    return run(["podman", "network", "inspect", "--format", "{{.NetworkInterface}}", name]).stdout.strip()


# Paths inside each host backed by a directory of this machine (ext4): containerd's
# overlayfs snapshotter fails on the container's own overlay root. They live under the
# lab's state directory, which `down` removes.
HOST_VOLUMES = {"containerd": "/var/lib/containerd"}


def volume_dir(spec: LabSpec, host: str, name: str):
    return spec.state_dir / "volumes" / host / name


def new_hosts(spec: LabSpec) -> list[str]:
    """The lab's hosts that have no container yet (`up` will start these)."""
    return [h.name for h in spec.hosts
            if run(["podman", "container", "exists", container_name(spec, h.name)], check=False).returncode != 0]


def exited_hosts(spec: LabSpec, names: list[str]) -> list[tuple[str, int, str]]:
    """Of NAMES, the hosts whose container has stopped: (host, exit code, last output)."""
    stopped = []
    for name in names:
        state = run(["podman", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                     container_name(spec, name)], check=False)
        if state.returncode != 0:
            continue
        status, _, code = state.stdout.strip().partition(" ")
        if status in ("exited", "stopped"):
            logs = run(["podman", "logs", "--tail", "20", container_name(spec, name)], check=False)
            stopped.append((name, int(code or 0), (logs.stdout or "") + (logs.stderr or "")))
    return stopped


def start_hosts(spec: LabSpec, image: str, pubkey_path: str) -> None:
    limits.check_inotify_headroom(len(new_hosts(spec)))
    for index, host in enumerate(spec.hosts):
        volumes = []
        for vname, target in HOST_VOLUMES.items():
            vdir = volume_dir(spec, host.name, vname)
            vdir.mkdir(parents=True, exist_ok=True)
            volumes += ["--volume", f"{vdir}:{target}:rw"]
        cname = container_name(spec, host.name)
        if run(["podman", "container", "exists", cname], check=False).returncode == 0:
            state = run(["podman", "inspect", "--format", "{{.State.Running}}", cname]).stdout.strip()
            if state != "true":
                run(["podman", "start", cname])
            continue
        run([
            "podman", "run", "-d", "--name", cname, "--hostname", host.name,
            "--label", f"{LABEL}={spec.name}",
            "--network", network_name(spec), "--ip", spec.host_ip(index),
            "--runtime", "runc", "--systemd", "always", "--privileged",
            "--cap-drop", "SYS_TIME",
            "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768",
            "--memory", f"{host.memory_mib}m",
            *(["--cpuset-cpus", host.cpuset] if host.cpuset else []),
            "--no-hosts", "--dns", "none",
            "--volume", f"{pubkey_path}:/root/.ssh/authorized_keys:ro,Z", *volumes,
            "--tmpfs", "/tmp", "--tmpfs", "/run", "--tmpfs", "/run/lock",
            "--env", "container=podman",
            image, "/sbin/init",
        ])


def remove(spec: LabSpec) -> None:
    out = run(["podman", "ps", "-a", "--filter", f"label={LABEL}={spec.name}", "--format", "{{.Names}}"],
              check=False).stdout or ""
    names = out.split()
    if names:
        run(["podman", "rm", "-f", "-t", "3", *names], check=False)
    run(["podman", "network", "rm", "-f", network_name(spec)], check=False)


def status(spec: LabSpec) -> list[dict]:
    out = run(["podman", "ps", "-a", "--filter", f"label={LABEL}={spec.name}", "--format", "json"],
              check=False).stdout or "[]"
    try:
        rows = json.loads(out)
    except json.JSONDecodeError as exc:
        raise LabError(f"podman ps returned unreadable output: {exc}") from exc
    return [{"name": r["Names"][0], "state": r.get("State", "?")} for r in rows]
