# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Ansible's linear strategy, waiting for a free worker with a back-off instead of polling."""

from __future__ import annotations

DOCUMENTATION = r"""
name: linear
short_description: Ansible's linear strategy, without polling hard for a free worker
version_added: 0.1.0
description:
  - Runs a play exactly as C(ansible.builtin.linear) does (each task on every host before the next task),
    with one difference in how it waits when every worker is busy.
  - When a play has more hosts than C(forks), C(ansible.builtin.linear) looks for a free worker slot every
    0.1 ms until a worker ends. In a C(base.yml) run on 50 hosts with 20 forks that polling took about 2 s
    of the controller's CPU per host, more than all the workers' own CPU time, and it grows with the
    number of hosts beyond C(forks) (docs/performance.md, "Controller cost per host").
  - This strategy sleeps between looks instead, from 0.5 ms doubling to at most 5 ms, and keeps answering
    the workers' requests while it waits. A worker slot that frees is taken within 5 ms.
  - Set it with C(strategy = clusterdos.cluster.linear) in C(ansible.cfg) (this repository's does), the
    E(ANSIBLE_STRATEGY) environment variable, or a play's C(strategy) keyword.
  - A task's C(throttle) is honoured as C(ansible.builtin.linear) honours it; a C(throttle) given as a
    template waits for any free slot first, then for a slot within the throttle as the built-in does.
  - Code that recognises Ansible's strategy by its short name C(linear) sees another strategy, as it does
    for the name C(ansible.builtin.linear); the C(ansible.posix.json) callback then lists each task once per
    host instead of once for all hosts, and the task debugger's redo of a failed C(run_once) task restores
    only that host.
author:
  - clusterdOS developers (@clusterdos)
"""

import time

from ansible.plugins.strategy.linear import StrategyModule as BuiltinLinear

# The first and the longest pause between two looks at the worker slots, in seconds.
FIRST_PAUSE = 0.0005
LONGEST_PAUSE = 0.005


def slot_limit(workers: list, throttle, run_once: bool) -> int:
    """How many of the first worker slots a task may use: all of them, or its throttle where that is a
    number between 1 and their count and the task is not run_once (as ansible.builtin.linear decides)."""
    limit = len(workers)
    try:
        throttle = int(throttle)
    except (TypeError, ValueError):
        return limit
    if 0 < throttle <= limit and not run_once:
        return throttle
    return limit


def wait_for_free_slot(workers: list, limit: int, serve, sleep=time.sleep,
                       first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> int:
    """Return once one of workers[:limit] is empty or its process has ended.

    serve() is called before each pause (the strategy's queue of worker requests, which a worker may
    be waiting on); the pauses double from first to longest. Returns the number of pauses taken.
    """
    pauses = 0
    pause = first
    while limit > 0 and all(w is not None and w.is_alive() for w in workers[:limit]):
        serve()
        sleep(pause)
        pauses += 1
        pause = min(pause * 2, longest)
    return pauses


class StrategyModule(BuiltinLinear):
    """ansible.builtin.linear with a paced wait for a free worker slot."""

    def _queue_task(self, host, task, task_vars, play_context):
        limit = slot_limit(self._workers, task.throttle, bool(task.run_once)) \
            if self.ALLOW_BASE_THROTTLING else len(self._workers)
        wait_for_free_slot(self._workers, limit, self._process_rpc_queue)
        return super()._queue_task(host, task, task_vars, play_context)
