# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Check results, the check registry and the runner (selection, skip, durations).

A check is a function of its group's context that returns a detail string (passed),
or raises CheckFailed / CheckSkipped with the reason. Anything else a check raises is
caught and reported as a failed check with its message: the module never shows a
stack trace for a cluster problem.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"
STATUSES = (PASSED, FAILED, SKIPPED)


class CheckFailed(Exception):
    """The cluster is not as expected; the message says what is wrong."""


class CheckSkipped(Exception):
    """The check does not apply here; the message says why."""


@dataclass
class CheckResult:
    name: str
    group: str
    status: str
    detail: str
    duration: float = 0.0
    host: str = ""
    data: Dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass
class Outcome:
    """What a passing check may return besides a detail line: measured values."""

    detail: str
    data: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    func: Callable[[Any], Any]
    # Run when the selection is "all" or the check's group; otherwise only when named.
    default: bool = True
    # Creates temporary objects (pods, PVCs, jobs): not run in check mode.
    mutates: bool = False
    # The context the check needs (defaults to its group).
    context: str = ""

    @property
    def group(self) -> str:
        return self.name.split(".", 1)[0]


@dataclass
class CmdResult:
    rc: int
    out: str
    err: str

    def reason(self) -> str:
        """The first useful line of output, for a check's detail."""
        for text in (self.err, self.out):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                return lines[-1] if len(lines) == 1 else lines[0]
        return "exit status %d" % self.rc


# A command runner takes an argv list (never a shell string), optional stdin text and
# a timeout in seconds.
Runner = Callable[..., CmdResult]


class ModuleRunner:
    """Runs argv lists through AnsibleModule.run_command, bounded by coreutils timeout.

    A missing executable gives rc 127 and a message instead of run_command's fail_json.
    """

    def __init__(self, module: Any, timeout: int = 120) -> None:
        self._module = module
        self._timeout = timeout
        self._timeout_bin = module.get_bin_path("timeout")

    def __call__(self, argv: List[str], data: Optional[str] = None, timeout: Optional[int] = None) -> CmdResult:
        exe = self._module.get_bin_path(argv[0]) if "/" not in argv[0] else argv[0]
        if not exe or not shutil.which(exe):
            return CmdResult(127, "", "%s: command not found on this host" % argv[0])
        full = [exe] + list(argv[1:])
        limit = timeout or self._timeout
        if self._timeout_bin and limit:
            full = [self._timeout_bin, "--kill-after=10", str(limit)] + full
        rc, out, err = self._module.run_command(full, data=data, binary_data=data is None)
        if rc == 124 and self._timeout_bin:
            return CmdResult(rc, out, "%s did not finish within %d s" % (argv[0], limit))
        return CmdResult(rc, out, err)


def known_names(checks: List[Check]) -> Tuple[List[str], List[str]]:
    names = [c.name for c in checks]
    groups = sorted({c.group for c in checks})
    return names, groups


def _resolve(items: List[str], checks: List[Check], explicit_only: bool) -> Tuple[List[Check], List[str]]:
    """Checks matching the items (a name, a group or "all"), and the unknown items."""
    chosen: List[Check] = []
    unknown: List[str] = []
    for item in items:
        if item == "all":
            matched = [c for c in checks if c.default or explicit_only]
        else:
            matched = [c for c in checks if c.name == item or (c.group == item and (c.default or explicit_only))]
        if not matched:
            unknown.append(item)
        chosen.extend(c for c in matched if c not in chosen)
    return chosen, unknown


def select(checks: List[Check], selected: List[str], skipped: List[str]) -> Tuple[List[Check], List[Check], List[str]]:
    """Resolve a selection: (to run, skipped on request, unknown names)."""
    run, unknown = _resolve(selected, checks, explicit_only=False)
    skip, unknown_skip = _resolve(skipped, checks, explicit_only=True)
    return [c for c in run if c not in skip], [c for c in run if c in skip], unknown + unknown_skip


def run_checks(
    checks: List[Check],
    contexts: Dict[str, Any],
    selected: List[str],
    skipped: List[str],
    check_mode: bool = False,
    host: str = "",
    clock: Callable[[], float] = time.monotonic,
) -> List[CheckResult]:
    """Run the selected checks in registry order and return one result per check."""
    to_run, to_skip, unknown = select(checks, selected, skipped)
    names, groups = known_names(checks)
    results: List[CheckResult] = []
    for item in unknown:
        results.append(CheckResult(
            name=item, group="selection", status=FAILED, host=host,
            detail="unknown check '%s': use 'all', a group (%s) or a check name (%s)"
                   % (item, ", ".join(groups), ", ".join(names))))
    for check in checks:
        if check in to_skip:
            results.append(CheckResult(check.name, check.group, SKIPPED, "skipped on request", host=host))
            continue
        if check not in to_run:
            continue
        if check_mode and check.mutates:
            results.append(CheckResult(check.name, check.group, SKIPPED,
                                       "not run in check mode: it creates temporary objects or jobs", host=host))
            continue
        context = contexts.get(check.context or check.group)
        start = clock()
        status, data = PASSED, {}
        try:
            if context is None:
                raise CheckSkipped("no %s context on this host" % (check.context or check.group))
            outcome = check.func(context)
            if isinstance(outcome, Outcome):
                detail, data = outcome.detail, outcome.data
            else:
                detail = str(outcome)
        except CheckFailed as exc:
            status, detail = FAILED, str(exc)
        except CheckSkipped as exc:
            status, detail = SKIPPED, str(exc)
        except Exception as exc:  # pylint: disable=broad-except  # a check's bug must not hide the others
            status, detail = FAILED, "internal error in %s: %s: %s" % (check.name, type(exc).__name__, exc)
        results.append(CheckResult(check.name, check.group, status, detail,
                                   duration=round(max(clock() - start, 0.0), 3), host=host, data=data))
    return results


def summarize(results: List[Dict[str, Any]]) -> Dict[str, int]:
    summary = {status: 0 for status in STATUSES}
    for result in results:
        summary[result["status"]] = summary.get(result["status"], 0) + 1
    summary["total"] = len(results)
    return summary
