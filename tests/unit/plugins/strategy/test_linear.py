"""clusterdos.cluster.linear: ansible.builtin.linear that waits for a free worker with a back-off.

The pure functions are tested with stand-in workers (objects whose is_alive() is true for a
set number of looks) and with real processes; the strategy itself runs a real ansible-playbook on local hosts
with fewer forks than hosts, so that every task waits for worker slots.
"""

from __future__ import annotations

import json
import multiprocessing
import textwrap
import time

from ansible_collections.clusterdos.cluster.plugins.strategy import linear
from playbook_outcome import host_outcomes, local_inventory, run_json


class StandInWorker:
    """A worker slot whose process reports alive for the first `alive_for` looks."""

    def __init__(self, alive_for: int):
        self.alive_for = alive_for

    def is_alive(self) -> bool:
        self.alive_for -= 1
        return self.alive_for >= 0


def test_slot_limit_follows_the_builtin_throttle_rules():
    workers = [None] * 20
    assert linear.slot_limit(workers, 0, False) == 20
    assert linear.slot_limit(workers, 1, False) == 1
    assert linear.slot_limit(workers, "3", False) == 3
    assert linear.slot_limit(workers, 1, True) == 20, "run_once ignores throttle"
    assert linear.slot_limit(workers, 50, False) == 20, "a throttle above forks is forks"
    assert linear.slot_limit(workers, "{{ n }}", False) == 20, "a templated throttle waits for any slot"


def test_wait_returns_at_once_when_a_slot_is_empty_or_its_process_ended():
    served = []
    assert linear.wait_for_free_slot([StandInWorker(5), None], 2, lambda: served.append(1)) == 0
    assert linear.wait_for_free_slot([StandInWorker(0)], 1, lambda: served.append(1)) == 0
    assert not served


def test_wait_backs_off_and_serves_requests_with_stand_in_workers():
    pauses, served = [], []
    # Both slots busy for the first 6 looks; slot 0 is looked at once per round, slot 1 only while
    # slot 0 is alive, so slot 0's count decides.
    workers = [StandInWorker(6), StandInWorker(100)]
    n = linear.wait_for_free_slot(workers, 2, lambda: served.append(1), sleep=pauses.append)
    assert n == 6 and len(served) == 6
    assert pauses == [0.0005, 0.001, 0.002, 0.004, 0.005, 0.005]


def test_wait_looks_only_within_the_throttle():
    pauses = []
    # Slot 1 is free, but a throttle of 1 allows only slot 0, busy for 3 looks.
    n = linear.wait_for_free_slot([StandInWorker(3), None], 1, lambda: None, sleep=pauses.append)
    assert n == 3


def test_wait_on_real_processes_takes_few_pauses():
    """Two real processes of 0.4 s: the wait ends when one ends, after at most about 0.4 / 0.005
    pauses (ansible.builtin.linear would have looked some thousands of times)."""
    procs = [multiprocessing.Process(target=time.sleep, args=(0.4,)) for _ in range(2)]
    for p in procs:
        p.start()
    try:
        n = linear.wait_for_free_slot(procs, 2, lambda: None)
        assert not all(p.is_alive() for p in procs)
        assert 1 <= n <= 200, n
    finally:
        for p in procs:
            p.join()


def test_strategy_runs_a_play_in_linear_order_with_fewer_forks_than_hosts(tmp_path):
    hosts = [f"h{i}" for i in range(7)]
    log = tmp_path / "log"
    inventory = local_inventory(tmp_path / "inventory.yml", hosts)
    playbook = tmp_path / "play.yml"
    playbook.write_text(textwrap.dedent(f"""\
        - name: Linear order, throttle and run_once under clusterdos.cluster.linear
          hosts: all
          gather_facts: false
          strategy: clusterdos.cluster.linear
          tasks:
            - name: First task on every host
              ansible.builtin.shell: sleep 0.2; echo "first {{{{ inventory_hostname }}}}" >> {log}
              changed_when: false
            - name: One host at a time (a lock directory that exists means two ran at once)
              ansible.builtin.shell: mkdir {tmp_path}/lock && sleep 0.1 && echo "throttled {{{{ inventory_hostname }}}}" >> {log} && rmdir {tmp_path}/lock
              changed_when: false
              throttle: 1
            - name: Once
              ansible.builtin.shell: echo "once {{{{ inventory_hostname }}}}" >> {log}
              changed_when: false
              run_once: true
            - name: Last task on every host
              ansible.builtin.set_fact:
                done_here: true
        """))
    result = run_json(inventory, playbook, "--forks", "2", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outcome = host_outcomes(json.loads(result.stdout), hosts, "strategy play")
    # run_once's result counts on the first host only.
    assert {h: (case["failed"], case["stats"]["ok"]) for h, case in outcome.items()} == \
        {h: (False, 4 if h == "h0" else 3) for h in hosts}
    lines = log.read_text().split("\n")[:-1]
    kinds = [line.split()[0] for line in lines]
    assert kinds == ["first"] * 7 + ["throttled"] * 7 + ["once"], lines
    assert sorted(line.split()[1] for line in lines[:7]) == hosts
    assert sorted(line.split()[1] for line in lines[7:14]) == hosts
