"""A site's file mirror for a lab: one directory of the controller served read-only over
HTTP on the lab bridge's address (for example ../shared/charts as a Helm chart
repository, the way an air-gapped site keeps its chart mirror on a web server).

The lab's firewall answers only the package proxy; `serve` opens exactly this port on the
bridge address as well, and `down` stops the server (its rule goes with the lab's chain).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from .proxy import port_free
from .spec import LabSpec
from .util import LabError, run, terminate

DEFAULT_PORT = int(os.environ.get("CLUSTERDOS_LAB_FILES_PORT", "8090"))


def _state(spec: LabSpec) -> Path:
    return spec.state_dir / "fileserver"


def _read_state(spec: LabSpec) -> tuple[int, str, int] | None:
    """(pid, directory, port) of this lab's running file server, or None."""
    try:
        lines = (_state(spec) / "pid").read_text(encoding="utf-8").splitlines()
        pid = int(lines[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    # A state file from before the port was kept in it: the default port.
    port = int(lines[2]) if len(lines) > 2 and lines[2].strip().isdigit() else DEFAULT_PORT
    return pid, lines[1].strip() if len(lines) > 1 else "", port


def running(spec: LabSpec) -> tuple[int, str] | None:
    """(pid, directory) of this lab's file server, or None."""
    state = _read_state(spec)
    return state[:2] if state else None


def keep_open(spec: LabSpec) -> None:
    """Open a running server's port again once `up` has rebuilt the lab's firewall (a host
    added to a running lab): the rebuilt chain answers only the package proxy."""
    state = _read_state(spec)
    if state:
        _open_port(spec, state[2])


def url(spec: LabSpec, port: int = DEFAULT_PORT) -> str:
    return f"http://{spec.gateway}:{port}"


def _open_port(spec: LabSpec, port: int) -> None:
    rule = ["-p", "tcp", "--dport", str(port), "-d", spec.gateway, "-j", "RETURN"]
    if run(["iptables", "-C", spec.chain, *rule], check=False).returncode != 0:
        run(["iptables", "-I", spec.chain, "1", *rule])


def start(spec: LabSpec, directory: Path, port: int = DEFAULT_PORT) -> str:
    """Serve directory on the bridge address; the same directory again is a no-op."""
    directory = directory.resolve()
    if not directory.is_dir():
        raise LabError(f"--dir {directory}: no such directory")
    current = running(spec)
    if current and current[1] == str(directory):
        _open_port(spec, port)
        return url(spec, port)
    if current:
        stop(spec)
    if not port_free(spec.gateway, port):
        raise LabError(f"port {port} on {spec.gateway} is already taken; free it or set CLUSTERDOS_LAB_FILES_PORT")
    state = _state(spec)
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", spec.gateway, "--directory", str(directory)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    (state / "pid").write_text(f"{proc.pid}\n{directory}\n{port}\n", encoding="utf-8")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LabError(f"the file server exited ({proc.returncode}); see {state / 'log'}")
        if not port_free(spec.gateway, port):
            _open_port(spec, port)
            return url(spec, port)
        time.sleep(0.2)
    stop(spec)
    raise LabError(f"the file server did not listen on {spec.gateway}:{port}; see {state / 'log'}")


def stop(spec: LabSpec) -> None:
    current = running(spec)
    if current:
        terminate(current[0])
    (_state(spec) / "pid").unlink(missing_ok=True)
