#!/usr/bin/env python3
"""How much work this machine does now, by the same Python loop run alone and then twice
side by side (best of two each; a few seconds). One probe for scripts/test-all.sh (two
lanes only where the pair does about twice the work of one) and for the benchmarks
(benchmarks/slurm_lab.py prints it before each lab starts: this machine's speed drifts
between runs, docs/performance.md, session 20).

    python3 scripts/machine_probe.py    prints the pair's work over one's (2.00: two whole cores)
"""

from __future__ import annotations

import multiprocessing
import time


def work(_: int) -> int:
    total = 0
    for i in range(6_000_000):
        total += i * i
    return total


def timed(n: int) -> float:
    """Seconds for n copies of the loop side by side."""
    with multiprocessing.Pool(n) as pool:
        start = time.perf_counter()
        pool.map(work, range(n))
        return time.perf_counter() - start


def probe() -> tuple[float, float]:
    """(seconds for the loop alone, the work two side by side did over one's), best of two each."""
    one = min(timed(1) for _ in range(2))
    two = min(timed(2) for _ in range(2))
    return one, 2 * one / two


if __name__ == "__main__":
    print(f"{probe()[1]:.2f}")
