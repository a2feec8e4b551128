#!/usr/bin/env python3
"""Task coverage: which tasks of the collection ran for real, and which never did.

Every task in roles/*/tasks/*.yml, roles/*/handlers/*.yml, playbooks/*.yml,
playbooks/stages/*.yml and playbooks/tasks/*.yml is enumerated from the YAML (file:line
of the task's mapping, the same place ansible's Task.get_path() gives), then matched against the records the task_coverage callback
wrote (.cache/coverage/*.jsonl, one JSON line per task result).

A task counts as run for real when some record has status ok, changed or failed, and
  - it ran on a managed host (a lab container or VM: connection other than local), or
  - it ran on the controller by design: a play of playbooks/ whose hosts are localhost,
    or a task delegated to localhost, started from a playbook of playbooks/.
A role task played on localhost by a unit-test harness does not count: that renders
templates on the controller, it does not run the task where it is meant to run.
Skipped and unreachable do not count.

Tasks that need what this machine lacks (GPU, InfiniBand, KVM hardware; packages it cannot
reach offline, such as EL mirrors) are listed with a
reason in tests/coverage_exempt.yml and reported apart.

  scripts/coverage.py              summary, never-run list, HTML page; exit 1 when a task
                                   is neither run nor exempt (the strict gate: make coverage)
  scripts/coverage.py --summary    the per-role/per-playbook figures only
  scripts/coverage.py --no-fail    always exit 0 (make test prints the figure; see docs/testing.md)
"""

from __future__ import annotations

import argparse
import glob
import html
import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RECORDS = ROOT / ".cache" / "coverage"
DEFAULT_EXEMPT = ROOT / "tests" / "coverage_exempt.yml"
DEFAULT_HTML = ROOT / "reports" / "coverage.html"
RUN_STATUSES = frozenset(("ok", "changed", "failed"))
LOOPBACK = frozenset(("localhost", "127.0.0.1", "::1"))
# What an exempt task needs that this machine lacks: GPU, InfiniBand or KVM hardware, or
# packages and downloads it cannot reach offline (EL mirrors, vendor release servers).
HARDWARE = ("gpu", "infiniband", "kvm", "offline")
# Static imports are resolved when the playbook is parsed; they never run (their tasks do,
# and are counted). meta tasks are control flow: ansible reports no result for them.
NOT_RUNNABLE = frozenset(
    "%s%s" % (prefix, name)
    for prefix in ("", "ansible.builtin.", "ansible.legacy.")
    for name in ("import_tasks", "import_role", "import_playbook", "meta"))
TASK_LISTS = ("pre_tasks", "tasks", "post_tasks", "handlers")
BLOCK_LISTS = ("block", "rescue", "always")
# Keys of a task that are not its action (to name the action in reports).
TASK_KEYWORDS = frozenset((
    "name", "when", "tags", "vars", "register", "loop", "loop_control", "with_items", "with_dict",
    "with_fileglob", "with_nested", "with_subelements", "with_together", "with_sequence", "notify",
    "listen", "changed_when", "failed_when", "check_mode", "diff", "no_log", "become", "become_user",
    "become_method", "delegate_to", "delegate_facts", "run_once", "ignore_errors", "ignore_unreachable",
    "environment", "args", "until", "retries", "delay", "async", "poll", "throttle", "timeout",
    "any_errors_fatal", "collections", "module_defaults", "local_action", "connection", "debugger",
    "remote_user", "port", "action", "with_first_found", "with_together", "with_list", "with_flattened",
    "with_indexed_items", "with_random_choice", "with_lines", "with_inventory_hostnames", "with_dict",
))


@dataclass
class Task:
    """One task as written: where, what, and what the records say about it."""
    file: str
    line: int
    name: str
    action: str
    handler: bool = False
    runs: Dict[str, List[str]] = field(default_factory=dict)      # scenario -> statuses (real runs)
    other: Dict[str, List[str]] = field(default_factory=dict)     # scenario -> statuses (skipped, controller harness)
    exempt: Optional[Dict[str, str]] = None

    @property
    def where(self) -> str:
        return "%s:%d" % (self.file, self.line)

    @property
    def group(self) -> str:
        """'role NAME' or 'playbook FILE'."""
        parts = self.file.split("/")
        return "role %s" % parts[1] if parts[0] == "roles" else "playbook %s" % parts[-1]

    @property
    def ran(self) -> bool:
        return bool(self.runs)


# Enumeration --------------------------------------------------------------------------
def _key(node: yaml.Node) -> Optional[str]:
    return node.value if isinstance(node, yaml.ScalarNode) else None


def _mapping(node: yaml.Node) -> Dict[str, yaml.Node]:
    return {_key(k): v for k, v in node.value if _key(k) is not None} if isinstance(node, yaml.MappingNode) else {}


def _action(keys: Dict[str, yaml.Node]) -> str:
    for key in keys:
        if key not in TASK_KEYWORDS and not key.startswith("with_"):
            return key
    action = keys.get("action") or keys.get("local_action")
    if isinstance(action, yaml.ScalarNode):
        return action.value.split()[0] if action.value else ""
    return _action(_mapping(action)) if action is not None else ""


def _walk(nodes: yaml.Node, rel: str, handler: bool) -> Iterable[Task]:
    """Tasks in a list of tasks/blocks, blocks opened."""
    if not isinstance(nodes, yaml.SequenceNode):
        return
    for node in nodes.value:
        keys = _mapping(node)
        if not keys:
            continue
        if any(k in keys for k in BLOCK_LISTS):
            for section in BLOCK_LISTS:
                if section in keys:
                    yield from _walk(keys[section], rel, handler)
            continue
        action = _action(keys)
        if action in NOT_RUNNABLE:
            continue
        name = keys["name"].value if isinstance(keys.get("name"), yaml.ScalarNode) else ""
        yield Task(file=rel, line=node.start_mark.line + 1, name=name, action=action, handler=handler)


def _compose(path: Path) -> Optional[yaml.Node]:
    with open(path, encoding="utf-8") as handle:
        return yaml.compose(handle, Loader=yaml.SafeLoader)


def enumerate_tasks(root: Path = ROOT) -> List[Task]:
    """Every runnable task of roles/*/{tasks,handlers}/*.yml, playbooks/*.yml, playbooks/stages/*.yml
    and the playbooks' task files (playbooks/tasks/*.yml), in file order."""
    tasks: List[Task] = []
    for pattern, handler in (("roles/*/tasks/*.yml", False), ("roles/*/handlers/*.yml", True),
                             ("playbooks/tasks/*.yml", False)):
        for path in sorted(root.glob(pattern)):
            rel = path.relative_to(root).as_posix()
            tasks.extend(_walk(_compose(path), rel, handler))
    for path in sorted([*root.glob("playbooks/*.yml"), *root.glob("playbooks/stages/*.yml")]):
        rel = path.relative_to(root).as_posix()
        doc = _compose(path)
        if not isinstance(doc, yaml.SequenceNode):
            continue
        for play in doc.value:
            keys = _mapping(play)
            for section in TASK_LISTS:
                if section in keys:
                    tasks.extend(_walk(keys[section], rel, section == "handlers"))
    return tasks


# Records ------------------------------------------------------------------------------
def load_records(records_dir: Path) -> Tuple[List[Dict[str, Any]], int]:
    """Every task record under RECORDS_DIR, and how many lines could not be read."""
    records, bad = [], 0
    for name in sorted(glob.glob(str(records_dir / "*.jsonl"))):
        with open(name, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(record, dict) or "file" not in record or "line" not in record:
                    bad += 1
                elif record["file"] and record["line"]:
                    records.append(record)
                # else: an ad-hoc command (`ansible HOST -m MODULE`): no task file, no task to count
    return records, bad


def is_real(record: Dict[str, Any]) -> bool:
    """Whether RECORD shows the task run for real (see the module docstring)."""
    if record.get("status") not in RUN_STATUSES:
        return False
    if not record.get("controller"):
        return True
    if not str(record.get("play_file", "")).startswith("playbooks/"):
        return False
    hosts = record.get("play_hosts")
    hosts = [hosts] if isinstance(hosts, str) else list(hosts or [])
    on_controller = bool(hosts) and all(h in LOOPBACK for h in hosts)
    return on_controller or record.get("delegated_to") in LOOPBACK


def _same_name(task: Task, record: Dict[str, Any]) -> bool:
    """Whether RECORD names TASK. ansible names a role's task "ROLE : NAME" (ROLE may be the
    FQCN); an unnamed task, a name that is a template (rendered in the record) or a record
    without a name cannot be compared and is taken as matching."""
    recorded = str(record.get("task") or "")
    if not task.name or "{{" in task.name or not recorded:
        return True
    if record.get("role") and " : " in recorded:
        recorded = recorded.split(" : ", 1)[1]
    return recorded == task.name


def merge(tasks: List[Task], records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Attach RECORDS to TASKS; return the records of collection files that match no task."""
    by_place = {(t.file, t.line): t for t in tasks}
    unmatched = []
    for record in records:
        task = by_place.get((record["file"], int(record["line"])))
        if task is not None and not _same_name(task, record):
            # The file changed since the record was written: another task sits at that line
            # now, and the record must not count for it.
            task = None
        if task is None:
            if str(record["file"]).startswith(("roles/", "playbooks/")) and record.get("action") not in NOT_RUNNABLE \
                    and not record.get("implicit"):
                unmatched.append(record)
            continue
        scenario = str(record.get("scenario") or "adhoc")
        bucket = task.runs if is_real(record) else task.other
        bucket.setdefault(scenario, []).append(str(record.get("status")))
    return unmatched


# Exemptions ---------------------------------------------------------------------------
def load_exempt(path: Path) -> List[Dict[str, str]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    return list(data.get("exempt") or [])


def apply_exempt(tasks: List[Task], entries: List[Dict[str, str]]) -> List[str]:
    """Mark exempt tasks; return the problems in ENTRIES (bad fields, entries matching nothing).

    An entry names a file (every task in it), a file and a task name, or a file:line.
    """
    problems = []
    for index, entry in enumerate(entries):
        where = "tests/coverage_exempt.yml entry %d" % (index + 1)
        if not isinstance(entry, dict) or not entry.get("file") or not entry.get("reason"):
            problems.append("%s: needs file and reason" % where)
            continue
        if entry.get("needs") not in HARDWARE:
            problems.append("%s (%s): needs must be one of %s" % (where, entry["file"], ", ".join(HARDWARE)))
            continue
        path, _sep, line = str(entry["file"]).partition(":")
        matched = [t for t in tasks if t.file == path
                   and (not line or str(t.line) == line)
                   and (not entry.get("name") or t.name == entry["name"])]
        if not matched:
            problems.append("%s: no task matches %s%s" % (
                where, entry["file"], " named %r" % entry["name"] if entry.get("name") else ""))
        for task in matched:
            task.exempt = {"needs": entry["needs"], "reason": str(entry["reason"]).strip()}
    return problems


# Report -------------------------------------------------------------------------------
def groups(tasks: List[Task]) -> Dict[str, Dict[str, int]]:
    out: Dict[str, Dict[str, int]] = {}
    for task in tasks:
        counts = out.setdefault(task.group, {"run": 0, "exempt": 0, "never": 0, "total": 0})
        counts["total"] += 1
        counts["run" if task.ran else "exempt" if task.exempt else "never"] += 1
    return dict(sorted(out.items(), key=lambda kv: (not kv[0].startswith("role"), kv[0])))


def totals(tasks: List[Task]) -> Dict[str, int]:
    return {"total": len(tasks), "run": sum(t.ran for t in tasks),
            "exempt": sum(bool(t.exempt) and not t.ran for t in tasks),
            "never": sum(not t.ran and not t.exempt for t in tasks)}


def _pct(part: int, whole: int) -> str:
    return "%d%%" % round(100.0 * part / whole) if whole else "-"


def summary_text(tasks: List[Task], scenarios: List[str]) -> str:
    t = totals(tasks)
    lines = ["%-34s %12s %7s %6s" % ("", "run / total", "exempt", "never")]
    for name, c in groups(tasks).items():
        lines.append("%-34s %5d / %-4d %7d %6d" % (name, c["run"], c["total"], c["exempt"], c["never"]))
    lines.append("coverage: %d of %d tasks run for real (%s), %d exempt (hardware/offline), %d never run; "
                 "records from: %s" % (t["run"], t["total"], _pct(t["run"], t["total"]), t["exempt"], t["never"],
                                       ", ".join(scenarios) or "none"))
    return "\n".join(lines)


def _css() -> str:
    """The validation report's style sheet (one look for both pages)."""
    try:
        from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
        _AnsibleCollectionFinder(paths=[str(ROOT / ".cache" / "collections")])._install()
        from ansible_collections.clusterdos.cluster.plugins.module_utils.validate import report
        return report._CSS  # pylint: disable=protected-access
    except Exception:  # pylint: disable=broad-exception-caught
        return "body{font-family:sans-serif;margin:24px}"


def to_html(tasks: List[Task], scenarios: List[str], generated: str) -> str:
    t = totals(tasks)
    esc = html.escape
    overall = "failed" if t["never"] else "passed"
    group_rows = []
    for name, c in groups(tasks).items():
        status = "failed" if c["never"] else "passed"
        group_rows.append('<tr class="%s"><td class="status">%s</td><td>%s</td><td>%d / %d</td><td>%d</td><td>%d</td></tr>'
                          % (status, _pct(c["run"], c["total"]), esc(name), c["run"], c["total"], c["exempt"], c["never"]))
    task_rows = []
    order = {"failed": 0, "skipped": 1, "passed": 2}
    rows = []
    for task in tasks:
        if task.ran:
            status, label = "passed", "run"
            detail = "; ".join("%s: %s" % (s, ", ".join(sorted(set(v)))) for s, v in sorted(task.runs.items()))
        elif task.exempt:
            status, label = "skipped", "exempt (%s)" % task.exempt["needs"]
            detail = task.exempt["reason"]
        else:
            status, label = "failed", "never run"
            seen = "; ".join("%s: %s" % (s, ", ".join(sorted(set(v)))) for s, v in sorted(task.other.items()))
            detail = ("seen, not for real: " + seen) if seen else ""
        rows.append((order[status], task.file, task.line, status, label, task, detail))
    for _o, _f, _l, status, label, task, detail in sorted(rows, key=lambda r: r[:3]):
        task_rows.append('<tr class="%s"><td class="status">%s</td><td>%s</td><td>%s</td><td>%s</td>'
                         '<td class="detail">%s</td></tr>' % (status, esc(label), esc(task.where), esc(task.name),
                                                              esc(task.group), esc(detail)))
    title = "clusterdOS task coverage"
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>%s</title>" % title,
        "<style>%s</style></head><body>" % _css(),
        "<h1>%s</h1>" % title,
        '<div class="meta">Generated %s from the records of: %s</div>' % (esc(generated), esc(", ".join(scenarios) or "none")),
        '<div id="summary" class="overall-%s">' % overall,
        '<span class="badge passed">%d of %d run for real (%s)</span>' % (t["run"], t["total"], _pct(t["run"], t["total"])),
        '<span class="badge skipped">%d exempt (hardware/offline)</span>' % t["exempt"],
        '<span class="badge failed">%d never run</span>' % t["never"],
        "</div>",
        "<h2>Roles and playbooks</h2>",
        '<table id="groups"><thead><tr><th>Run</th><th>Role / playbook</th><th>Run / total</th><th>Exempt</th>'
        "<th>Never run</th></tr></thead><tbody>",
        "\n".join(group_rows),
        "</tbody></table>",
        "<h2>Tasks</h2>",
        '<table id="tasks"><thead><tr><th>Status</th><th>Where</th><th>Task</th><th>Role / playbook</th>'
        "<th>Scenarios (statuses) or reason</th></tr></thead><tbody>",
        "\n".join(task_rows),
        "</tbody></table></body></html>",
        "",
    ])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--records", type=Path, default=Path(os.environ.get("CLUSTERDOS_COVERAGE_DIR") or DEFAULT_RECORDS))
    parser.add_argument("--exempt", type=Path, default=DEFAULT_EXEMPT)
    parser.add_argument("--html", type=Path, default=DEFAULT_HTML, help="HTML page to write ('' for none)")
    parser.add_argument("--json", type=Path, help="also write the per-task result as JSON here")
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--summary", action="store_true", help="print the figures only")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even when tasks are neither run nor exempt")
    args = parser.parse_args(argv)

    tasks = enumerate_tasks(args.root)
    records, bad = load_records(args.records)
    unmatched = merge(tasks, records)
    problems = apply_exempt(tasks, load_exempt(args.exempt))
    scenarios = sorted({str(r.get("scenario") or "adhoc") for r in records
                        if not str(r.get("scenario", "")).startswith("pytest:")})
    if any(str(r.get("scenario", "")).startswith("pytest:") for r in records):
        scenarios.append("pytest")

    print(summary_text(tasks, scenarios))
    if not records:
        print("coverage: no records under %s (run make test, make site or a molecule scenario first)" % args.records)
    if not args.summary:
        never = [t for t in tasks if not t.ran and not t.exempt]
        if never:
            print("\nnever run (%d):" % len(never))
            for task in never:
                print("  %s  %s" % (task.where, task.name))
        exempt = [t for t in tasks if t.exempt and not t.ran]
        if exempt:
            print("\nexempt, need hardware or downloads this machine lacks (%d):" % len(exempt))
            for task in exempt:
                print("  %s  %s  [%s] %s" % (task.where, task.name, task.exempt["needs"], task.exempt["reason"]))
        ran_exempt = [t for t in tasks if t.exempt and t.ran]
        for task in ran_exempt:
            print("coverage: %s is exempt but ran for real: remove it from %s" % (task.where, args.exempt))
    for problem in problems:
        print("coverage: %s" % problem)
    if unmatched:
        places = sorted({"%s:%s" % (r["file"], r["line"]) for r in unmatched})
        print("coverage: %d record(s) name no task at their file:line, or another task than the one there now "
              "(records older than the files): %s"
              % (len(unmatched), ", ".join(places[:10]) + (" ..." if len(places) > 10 else "")))
    if bad:
        print("coverage: %d unreadable record line(s) skipped" % bad)
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if str(args.html) not in ("", "."):
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(to_html(tasks, scenarios, generated), encoding="utf-8")
        print("coverage: HTML report %s" % args.html)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "generated": generated, "totals": totals(tasks), "groups": groups(tasks),
            "tasks": [{"file": t.file, "line": t.line, "name": t.name, "action": t.action, "handler": t.handler,
                       "runs": t.runs, "exempt": t.exempt} for t in tasks]}, indent=2, sort_keys=True) + "\n",
            encoding="utf-8")
    failing = totals(tasks)["never"] > 0 or bool(problems)
    return 0 if args.no_fail or not failing else 1


if __name__ == "__main__":
    sys.exit(main())
