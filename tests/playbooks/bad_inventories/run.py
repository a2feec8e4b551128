#!/usr/bin/env python3
"""Run playbooks/site.yml against every bad inventory here and count the refusals.

Each kind is a directory with hosts.yml (and maybe group_vars/) and expect.txt (lines
that must all appear in the output: the message names the variable, value and fix).
Every host in these inventories points at 127.0.0.1 port 1, where nothing listens, so
any contact with a host shows as UNREACHABLE: a kind counts as "refused before any
change" only when site.yml failed, no host was contacted (no host is unreachable: tasks
delegated to the controller never connect) and every expected line is in the output.

  tests/playbooks/bad_inventories/run.py                 this checkout
  tests/playbooks/bad_inventories/run.py --root DIR      another checkout (e.g. an older commit)
  tests/playbooks/bad_inventories/run.py KIND...         only these kinds
  tests/playbooks/bad_inventories/run.py --lab NAME      also the kinds under _lab/ on real hosts

Kinds that need host facts (an export directory that does not exist, a kernel module a
container cannot load) live under _lab/: each hosts.yml is added to the inventory of a
two-host lab (pf1, pf2; started with bin/clusterdos-lab and taken down after) as a second
-i source. For those, site.yml reaches the hosts (read-only fact pass), so the proof is a
snapshot of each host taken before and after: files changed under /etc, /var/lib, /usr
and /opt, and the package list. The snapshot is first shown to see a change made on
purpose, so the comparison can fail.
Exit status 0 when every kind is refused before any change.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)", re.M)


def kinds(names: list[str] | None = None) -> list[Path]:
    found = sorted(p for p in HERE.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "hosts.yml").exists())
    return [p for p in found if not names or p.name in names]


def ansible_env(root: Path) -> dict[str, str]:
    venv = ROOT / ".venv" / "bin"
    return dict(os.environ, ANSIBLE_CONFIG=str(root / "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1",
                ANSIBLE_TIMEOUT="5", ANSIBLE_SSH_RETRIES="0", ANSIBLE_RETRY_FILES_ENABLED="0",
                ANSIBLE_COLLECTIONS_PATH=str(root / ".cache" / "collections"),
                PATH=f"{venv}:{os.environ.get('PATH', '')}")


def run_kind(kind: Path, root: Path, playbook: str = "site.yml") -> dict:
    start = time.monotonic()
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(kind / "hosts.yml"),
                           str(root / "playbooks" / playbook)],
                          capture_output=True, text=True, env=ansible_env(root), check=False, timeout=600)
    out = proc.stdout + proc.stderr
    flat = " ".join(out.split())
    # Tasks delegated to the controller show in the recap under the host's name without
    # contacting it; a connection attempt shows as unreachable (nothing listens there).
    contacted = sorted({m.group(1) for m in RECAP.finditer(proc.stdout) if int(m.group(4))})
    if "UNREACHABLE!" in out:
        contacted = contacted or ["(unreachable)"]
    expect = [line.strip() for line in (kind / "expect.txt").read_text().splitlines() if line.strip()] \
        if (kind / "expect.txt").exists() else []
    missing = [e for e in expect if " ".join(e.split()) not in flat]
    if proc.returncode == 0:
        verdict = "APPLIED"          # nothing refused it
    elif contacted:
        verdict = "LATE"             # refused only after hosts were contacted (and maybe changed)
    elif missing:
        verdict = "WRONG-REASON"     # refused before contact, but not for this mistake
    else:
        verdict = "REFUSED"
    errors = [line for line in out.splitlines() if line.startswith("[ERROR]")]
    return {"kind": kind.name, "verdict": verdict, "seconds": round(time.monotonic() - start, 1), "rc": proc.returncode,
            "contacted": contacted, "missing": missing, "error": errors[0][:300] if errors else "", "output": out}


# --------------------------------------------------------------------------- lab kinds
LAB_HOSTS = ("pf1", "pf2")
# Run on a lab host through `bash -s PHASE` (the script on stdin).
SNAPSHOT = """set -e
m=/run/pf-snapshot-marker
if [ "$1" = start ]; then touch -d '-2 seconds' "$m"; exit 0; fi
find /etc /var/lib /usr /opt -xdev -newer "$m" -not -type d 2>/dev/null | sort
echo '--- packages'
dpkg-query -W -f '${Package} ${Version}\\n' | sort
"""


def _lab(*argv: str, check: bool = True, stdin: str | None = None) -> str:
    proc = subprocess.run([str(ROOT / "bin" / "clusterdos-lab"), *argv], capture_output=True, text=True, input=stdin,
                          env=ansible_env(ROOT), check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"clusterdos-lab {' '.join(argv)}: {proc.stdout}{proc.stderr}")
    return proc.stdout


def _snapshot(lab: str, host: str, phase: str) -> str:
    return _lab("ssh", "--name", lab, host, "bash", "-s", phase, stdin=SNAPSHOT)


def lab_kinds(names: list[str] | None = None) -> list[Path]:
    found = sorted(p for p in (HERE / "_lab").iterdir() if (p / "hosts.yml").exists())
    return [p for p in found if not names or p.name in names]


def run_lab_kind(kind: Path, lab: str, lab_inventory: str, root: Path = ROOT) -> dict:
    start = time.monotonic()
    before = {}
    for host in LAB_HOSTS:
        _snapshot(lab, host, "start")
        before[host] = _snapshot(lab, host, "read")
    proc = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", lab_inventory, "-i", str(kind / "hosts.yml"),
                           str(root / "playbooks" / "site.yml")],
                          capture_output=True, text=True, env=ansible_env(root), check=False, timeout=900)
    out = proc.stdout + proc.stderr
    changed = {h: sorted(set(_snapshot(lab, h, "read").splitlines()) ^ set(before[h].splitlines())) for h in LAB_HOSTS}
    changed = {h: c for h, c in changed.items() if c}
    flat = " ".join(out.split())
    expect = [line.strip() for line in (kind / "expect.txt").read_text().splitlines() if line.strip()]
    missing = [e for e in expect if " ".join(e.split()) not in flat]
    verdict = ("APPLIED" if proc.returncode == 0 else "LATE" if changed else "WRONG-REASON" if missing else "REFUSED")
    errors = [line for line in out.splitlines() if line.startswith("[ERROR]")]
    return {"kind": "lab:" + kind.name, "verdict": verdict, "seconds": round(time.monotonic() - start, 1), "rc": proc.returncode,
            "contacted": [f"{h} changed {len(c)} file(s)/package(s): {c[:3]}" for h, c in changed.items()],
            "missing": missing, "error": errors[0][:300] if errors else "", "output": out}


def lab_detector_works(lab: str) -> bool:
    """The snapshot sees a file written on purpose (else a LATE kind could pass unseen)."""
    host = LAB_HOSTS[0]
    _snapshot(lab, host, "start")
    before = _snapshot(lab, host, "read")
    _lab("ssh", "--name", lab, host, "touch", "/etc/pf-snapshot-probe")
    after = _snapshot(lab, host, "read")
    _lab("ssh", "--name", lab, host, "rm", "-f", "/etc/pf-snapshot-probe")
    return "/etc/pf-snapshot-probe" in set(after.splitlines()) - set(before.splitlines())


def run_lab(lab: str, names: list[str] | None, root: Path = ROOT) -> list[dict]:
    todo = lab_kinds(names)
    if not todo:
        return []
    _lab("up", "--name", lab, *(a for h in LAB_HOSTS for a in ("--host", f"{h}=lab")))
    try:
        inventory = _lab("inventory", "--name", lab).strip()
        if not lab_detector_works(lab):
            return [{"kind": "lab:snapshot-detector", "verdict": "BROKEN", "seconds": 0, "rc": 1, "contacted": [],
                     "missing": ["a file written under /etc was not seen"], "error": "", "output": ""}]
        return [run_lab_kind(k, lab, inventory, root) for k in todo]
    finally:
        _lab("down", "--name", lab, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kinds", nargs="*")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose playbooks run (default: this one)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-v", "--verbose", action="store_true", help="print the output of kinds not refused")
    parser.add_argument("--lab", metavar="NAME", help="also run the _lab/ kinds on a lab of this name (started and removed)")
    args = parser.parse_args()
    todo = kinds(args.kinds)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda k: run_kind(k, args.root.resolve()), todo))
    if args.lab:
        results += run_lab(args.lab, args.kinds, args.root.resolve())
    for r in results:
        detail = (f"contacted {', '.join(r['contacted'])}" if r["contacted"] else
                  f"missing {r['missing']}" if r["missing"] else "")
        print(f"{r['verdict']:<13} {r['kind']:<40} {r['seconds']:>5}s {detail}")
        # Why a kind was not refused as expected, always (CI's log is all there is to read);
        # -v prints the whole tail of the run.
        if r["verdict"] != "REFUSED":
            fatal = [line for line in r["output"].splitlines() if line.startswith(("fatal:", "failed:", "[ERROR]"))]
            print(r["output"][-4000:] if args.verbose else "\n".join(fatal[-5:])[-2000:] or r["output"][-1500:])
    refused = sum(r["verdict"] == "REFUSED" for r in results)
    on_lab = sum(r["kind"].startswith("lab:") and r["verdict"] == "REFUSED" for r in results)
    print(f"bad inventories: {len(results)} kinds, {refused} refused before any change "
          f"({refused - on_lab} with no host contacted, {on_lab} on lab hosts left unchanged), "
          f"{sum(r['verdict'] == 'LATE' for r in results)} refused only after contacting hosts, "
          f"{sum(r['verdict'] == 'APPLIED' for r in results)} applied, "
          f"{sum(r['verdict'] == 'WRONG-REASON' for r in results)} refused for another reason")
    return 0 if refused == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
