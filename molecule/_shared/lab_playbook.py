"""ansible-playbook (and ansible) against a molecule lab, as the scenario's converge runs it.

One helper for every scenario's tests (import it after putting this directory on sys.path):
molecule's own ansible.cfg for the scenario (Mitogen's linear strategy, molecule/_shared/strategy,
docs/testing.md "Task executor"; the scenario's config_options; task coverage records), or
outside molecule the checkout's ansible.cfg with the same strategy; the checkout's collection
(.cache/collections, never a copy); plain output, failed results on stdout with the rest.
ANSIBLE_STRATEGY in the environment picks another strategy (ANSIBLE_STRATEGY=linear: Ansible's
own executor).

Before session 45 each scenario had its own copy, and four of them (kubeadm_cluster,
kubernetes_hosts, containerd, sandboxes) ran their tests' playbooks with Ansible's stock
executor, though their converge used Mitogen: a new Python on every host for every task.
validate_slurm asks for the stock executor on purpose (its STOCK_EXECUTOR).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STRATEGY_PLUGINS = ROOT / "molecule" / "_shared" / "strategy"


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for ansible-playbook or ansible on a lab: the process's own, plus the
    settings above; EXTRA last (e.g. another stdout callback)."""
    molecule_cfg = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "ansible.cfg"
    env = dict(os.environ, ANSIBLE_CONFIG=str(molecule_cfg if molecule_cfg.is_file() else ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"),
               ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               # Failed results on stdout with every other result, as Ansible prints them by
               # default (molecule's ansible.cfg sends them to stderr).
               ANSIBLE_DISPLAY_FAILED_STDERR="false")
    env.setdefault("CLUSTERDOS_COVERAGE_DIR", str(ROOT / ".cache" / "coverage"))
    env.setdefault("CLUSTERDOS_ROOT", str(ROOT))
    env.setdefault("ANSIBLE_STRATEGY_PLUGINS", str(STRATEGY_PLUGINS))
    env.setdefault("ANSIBLE_STRATEGY", "mitogen_linear")
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra or {})
    return env


def run(playbook: str | Path, *args: str, inventories: Sequence[str | Path],
        env: Mapping[str, str] | None = None, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """ansible-playbook PLAYBOOK (a name under playbooks/, or a path: one with a slash) with
    each of INVENTORIES and ARGS, from the checkout; ENV adds to the environment. The
    completed process, output captured as text, whatever its exit status."""
    path = Path(playbook) if "/" in str(playbook) else ROOT / "playbooks" / playbook
    argv = ["ansible-playbook"]
    for inventory in inventories:
        argv += ["-i", str(inventory)]
    return subprocess.run([*argv, str(path), *args], cwd=ROOT, env=environment(env), capture_output=True,
                          text=True, timeout=timeout, check=False)
