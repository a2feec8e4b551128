# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Task coverage: one JSON line per task result, for scripts/coverage.py to merge."""

from __future__ import annotations

DOCUMENTATION = r"""
name: task_coverage
type: aggregate
short_description: Record which tasks ran, where, and with what status
version_added: 0.1.0
description:
  - Appends one JSON line per task result (per host) to a file under O(records_dir), with the
    task's file and line (as C(Task.get_path()) gives them), its name, action, role, the play
    and playbook, the status (V(ok), V(changed), V(skipped), V(failed), V(unreachable)), the
    host, the connection plugin, and the scenario the run belongs to.
  - Results on the controller (connection C(local), or a host named C(localhost),
    C(127.0.0.1) or C(::1)) carry C(controller=true), so that a run on the controller can be
    told apart from one on a managed host.
  - Each ansible-playbook process writes its own file, so concurrent runs never interleave.
  - Tasks ansible adds itself (a role's argument spec check) carry C(implicit=true); their C(file) and
    C(line) are the play's.
  - Prints nothing. Without O(records_dir) it records nothing.
  - Used by the collection's own tests (C(make test), C(make coverage)); enable it with
    C(callbacks_enabled).
options:
  records_dir:
    description:
      - Directory that receives the record files (created when missing). Empty or unset
        disables recording.
      - A relative path set in C(ansible.cfg) is relative to that file.
    type: path
    env:
      - name: CLUSTERDOS_COVERAGE_DIR
    ini:
      - section: callback_task_coverage
        key: records_dir
  scenario:
    description:
      - Name of the test or run the records belong to. Unset, the molecule scenario name
        (E(MOLECULE_SCENARIO_NAME)) is used, then the pytest test that started the run
        (E(PYTEST_CURRENT_TEST)), then V(adhoc).
    type: str
    env:
      - name: CLUSTERDOS_COVERAGE_SCENARIO
    ini:
      - section: callback_task_coverage
        key: scenario
"""

import json
import os
import socket
import time
from typing import Any, Dict, List, Optional

from ansible.playbook.handler import Handler
from ansible.plugins.callback import CallbackBase

_LOOPBACK_NAMES = frozenset(("localhost", "127.0.0.1", "::1"))
# The collection root: plugins/callback/<this file> is three levels down. Paths under it
# are recorded relative to it, so records from different checkouts merge.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def _relative(path: str) -> str:
    """PATH resolved through links, relative to the collection root when under it."""
    if not path:
        return ""
    real = os.path.realpath(path)
    if real == _ROOT or real.startswith(_ROOT + os.sep):
        return os.path.relpath(real, _ROOT)
    return real


def _split_path(where: str) -> tuple:
    """'FILE:LINE' (as Task.get_path() gives it) as (relative file, line)."""
    if not where:
        return "", 0
    path, _sep, line = where.rpartition(":")
    if not path or not line.isdigit():
        return _relative(where), 0
    return _relative(path), int(line)


def _implicit(task: Any) -> bool:
    """Whether ansible added TASK itself (a role's argument spec check): such a task has no
    place of its own, and get_path() gives its play's."""
    return bool(getattr(task, "implicit", False)) or getattr(task, "_origin", True) is None


def _delegated_vars(result: Dict[str, Any]) -> Dict[str, Any]:
    """Where a delegated task ran. A looped task's result carries it per item only
    (under results), not at the top: a delegated loop would otherwise look undelegated."""
    delegated = result.get("_ansible_delegated_vars")
    if delegated:
        return delegated
    for item in result.get("results") or []:
        if isinstance(item, dict) and item.get("_ansible_delegated_vars"):
            return item["_ansible_delegated_vars"]
    return {}


def _scenario(configured: Optional[str]) -> str:
    if configured:
        return configured
    if os.environ.get("MOLECULE_SCENARIO_NAME"):
        return os.environ["MOLECULE_SCENARIO_NAME"]
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    if current:
        # "tests/unit/x/test_y.py::test_z (call)": the test, without its phase.
        return "pytest:" + current.split(" ")[0]
    return "adhoc"


class CallbackModule(CallbackBase):
    """Write one JSON line per task result; see DOCUMENTATION."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "clusterdos.cluster.task_coverage"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._file: Optional[str] = None
        self._scenario = "adhoc"
        self._playbook = ""
        self._play = ""
        self._play_path = ""
        self._play_hosts: List[str] = []
        self._enabled = False

    def set_options(self, *args: Any, **kwargs: Any) -> None:
        super().set_options(*args, **kwargs)
        records_dir = self.get_option("records_dir")
        # An empty CLUSTERDOS_COVERAGE_DIR turns recording off for one run (a benchmark
        # timing someone else's role); the path type would read it as the current directory.
        self._enabled = bool(records_dir) and os.environ.get("CLUSTERDOS_COVERAGE_DIR") != ""
        self._scenario = _scenario(self.get_option("scenario"))
        if not self._enabled:
            return
        name = "%s-%s-%d-%d.jsonl" % ("".join(c if c.isalnum() or c in "-_." else "_" for c in self._scenario)[:80],
                                      socket.gethostname(), os.getpid(), int(time.time() * 1000))
        self._file = os.path.join(records_dir, name)

    # Playbook and play context -------------------------------------------------------
    def v2_playbook_on_start(self, playbook: Any) -> None:
        self._playbook = _relative(getattr(playbook, "_file_name", "") or "")

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._play = play.get_name() if hasattr(play, "get_name") else ""
        self._play_path = _split_path(play.get_path() if hasattr(play, "get_path") else "")[0]
        hosts = getattr(play, "hosts", None) or []
        self._play_hosts = [str(h) for h in ([hosts] if isinstance(hosts, str) else hosts)]

    # Results --------------------------------------------------------------------------
    def _record(self, result: Any, status: str) -> None:
        if not self._enabled or not self._file:
            return
        try:
            self._write(self._entry(result, status))
        except Exception as exc:  # pylint: disable=broad-exception-caught
            # Coverage must never break a run; say once why records stop.
            self._display.warning("task_coverage: not recording (%s)" % exc)
            self._enabled = False

    def _entry(self, result: Any, status: str) -> Dict[str, Any]:
        task = result._task
        host = result._host
        path, line = _split_path(task.get_path())
        connection = str(getattr(task, "connection", "") or "")
        delegated = _delegated_vars(result._result or {})
        target = str(delegated.get("ansible_delegated_host") or delegated.get("ansible_host") or host.get_name())
        controller = connection.rsplit(".", 1)[-1] == "local" or target in _LOOPBACK_NAMES \
            or host.get_name() in _LOOPBACK_NAMES
        role = task._role.get_name(include_role_fqcn=False) if task._role else ""
        return {
            "file": path, "line": line, "task": task.get_name(), "action": task.action,
            "role": role, "handler": isinstance(task, Handler), "implicit": _implicit(task),
            "status": status, "host": host.get_name(), "delegated_to": target if delegated else "",
            "connection": connection, "controller": controller,
            "play": self._play, "play_file": self._play_path, "play_hosts": self._play_hosts, "playbook": self._playbook,
            "scenario": self._scenario, "time": round(time.time(), 3),
        }

    def _write(self, entry: Dict[str, Any]) -> None:
        os.makedirs(os.path.dirname(self._file), exist_ok=True)
        # One write of one line per result, in append mode: a reader never sees half a line.
        with open(self._file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._record(result, "changed" if result._result.get("changed", False) else "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._record(result, "failed")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._record(result, "unreachable")
