"""The lab's package proxy: apt-cacher-ng on the lab bridge's address.

Lab hosts have no route out; the only way packages reach them is this proxy, which
the collection's own `clusterdos_package_proxy` setting points apt at (the same
setting an air-gapped site uses for its own proxy or mirror). ForceManaged limits it
to the distribution archives it knows, so it is not a general web proxy.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

from .spec import CACHE_ROOT, LabSpec
from .util import LabError, run, terminate

DEFAULT_PORT = int(os.environ.get("CLUSTERDOS_LAB_PROXY_PORT", "3142"))
DEBIAN_MIRROR = os.environ.get("CLUSTERDOS_LAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
DEBIAN_SECURITY = os.environ.get("CLUSTERDOS_LAB_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")

# Requests for any known Debian archive name are served from the configured upstream
# (the stock mirror lists name hosts this machine may not resolve). ForceManaged: only
# these archives, no general proxying.
CONFIG = """# Written by clusterdos-lab.
CacheDir: {cache}
LogDir: {log}
PidFile: {pid}
SupportDir: /usr/lib/apt-cacher-ng
Port: {port}
BindAddress: {address}
SocketPath:
ForeGround: 0
ForceManaged: 1
ExThreshold: 4
Remap-debrep: file:deb_mirror*.gz /debian ; {mirror}/
Remap-secdeb: security.debian.org security.debian.org/debian-security deb.debian.org/debian-security /debian-security ; {security}/
"""


def pidfile(spec: LabSpec) -> Path:
    return spec.state_dir / "apt-cacher-ng" / "pid"


def url(spec: LabSpec, port: int = DEFAULT_PORT) -> str:
    return f"http://{spec.gateway}:{port}"


def port_free(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def running(spec: LabSpec) -> int | None:
    try:
        pid = int(pidfile(spec).read_text(encoding="ascii").strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def start(spec: LabSpec, port: int = DEFAULT_PORT) -> str:
    if running(spec):
        return url(spec, port)
    if not port_free(spec.gateway, port):
        raise LabError(f"port {port} on {spec.gateway} is already taken; free it or set CLUSTERDOS_LAB_PROXY_PORT")
    state = spec.state_dir / "apt-cacher-ng"
    (state / "log").mkdir(parents=True, exist_ok=True)
    cache = CACHE_ROOT / "apt-cacher-ng"
    cache.mkdir(parents=True, exist_ok=True)
    conf = state / "conf"
    conf.mkdir(exist_ok=True)
    (conf / "acng.conf").write_text(CONFIG.format(
        cache=cache, log=state / "log", pid=pidfile(spec), port=port, address=spec.gateway,
        mirror=DEBIAN_MIRROR.rstrip("/"), security=DEBIAN_SECURITY.rstrip("/")), encoding="utf-8")
    run(["apt-cacher-ng", "-c", str(conf)])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if running(spec) and not port_free(spec.gateway, port):
            return url(spec, port)
        time.sleep(0.2)
    raise LabError(f"apt-cacher-ng did not start; see {state / 'log'}")


def stop(spec: LabSpec) -> None:
    pid = running(spec)
    if pid:
        terminate(pid)
    pidfile(spec).unlink(missing_ok=True)
