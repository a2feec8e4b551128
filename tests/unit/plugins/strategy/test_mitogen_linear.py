"""molecule/_shared/strategy/mitogen_linear: Mitogen's linear strategy as the scenarios run it.

A real ansible-playbook on local hosts through Mitogen runs tasks of collection modules in
forked workers; a sitecustomize counts, in every process, each walk of the collection paths
(ansible.collections.list.list_collection_dirs). Mitogen's own planner walked them once per
collection-module task; the strategy walks them once per run, in the process the workers are
forked from, and the modules still load from the collections.
"""

from __future__ import annotations

import json
import os
import textwrap

from playbook_outcome import ROOT, host_outcomes, local_inventory, run_json

STRATEGY = ROOT / "molecule" / "_shared" / "strategy"

# Only in ansible-playbook (its workers are forks of it); not in the Pythons Mitogen starts.
COUNTER = """\
import os
import sys

if sys.argv and sys.argv[0].endswith("ansible-playbook"):
    import ansible.collections.list as listing

    _walk = listing.list_collection_dirs

    def _counted(*args, **kwargs):
        with open(os.environ["WALK_LOG"], "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\\n")
        return _walk(*args, **kwargs)

    listing.list_collection_dirs = _counted
"""


def test_collection_paths_walked_once_per_run_and_collection_modules_still_run(tmp_path, monkeypatch):
    hosts = ["h0", "h1"]
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(COUNTER)
    walks = tmp_path / "walks"
    inventory = local_inventory(tmp_path / "inventory.yml", hosts)
    playbook = tmp_path / "play.yml"
    # Two tasks of collection modules (community.general's, this collection's), each on both
    # hosts: four workers that each load a module from a collection.
    playbook.write_text(textwrap.dedent(f"""\
        - name: Collection modules under mitogen_linear
          hosts: all
          gather_facts: false
          tasks:
            - name: A module of another collection
              community.general.ini_file:
                path: "{tmp_path}/{{{{ inventory_hostname }}}}.ini"
                section: s
                option: o
                value: v
                mode: "0600"
            - name: This collection's module
              clusterdos.cluster.text_files:
                files:
                  - path: "{tmp_path}/{{{{ inventory_hostname }}}}.txt"
                    content: "written through Mitogen\\n"
        """))
    monkeypatch.setenv("ANSIBLE_STRATEGY_PLUGINS", str(STRATEGY))
    monkeypatch.setenv("ANSIBLE_STRATEGY", "mitogen_linear")
    monkeypatch.setenv("WALK_LOG", str(walks))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")])))
    result = run_json(inventory, playbook, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outcome = host_outcomes(json.loads(result.stdout), hosts, "mitogen_linear play")
    assert {h: case["failed"] for h, case in outcome.items()} == {h: False for h in hosts}
    for host in hosts:
        assert (tmp_path / f"{host}.ini").read_text().strip().splitlines() == ["[s]", "o = v"]
        assert (tmp_path / f"{host}.txt").read_text() == "written through Mitogen\n"
    # One walk, by the ansible-playbook process itself (the workers' parent); Mitogen's own
    # planner made one in each worker that ran a collection module (4 here).
    pids = walks.read_text().split()
    assert len(pids) == 1, pids


def test_the_planner_reads_the_list_made_once():
    import ansible_mitogen.planner  # pylint: disable=import-outside-toplevel
    import importlib.util  # pylint: disable=import-outside-toplevel

    spec = importlib.util.spec_from_file_location("mitogen_linear_under_test", STRATEGY / "mitogen_linear.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert ansible_mitogen.planner._load_collections is module._load_collections  # pylint: disable=protected-access
    module._COLLECTION_DIRS[:] = ["/a/ansible_collections", "/b/ansible_collections"]  # pylint: disable=protected-access

    class Invocation:  # what the planner hands _load_collections: a set of extra import paths
        def __init__(self):
            self._extra_sys_paths: set = set()

    invocation = Invocation()
    module._load_collections(invocation)  # pylint: disable=protected-access
    assert invocation._extra_sys_paths == {"/a/ansible_collections", "/b/ansible_collections"}  # pylint: disable=protected-access
