"""The lab says which limit of this machine stops new hosts, and how to raise it.

The count reads this machine's real /proc; the refusal and the explanation are checked
with given figures (lowering the real limit would stop every other lab on the machine).
"""

from __future__ import annotations

import os

import pytest

from clusterdos_lab import limits
from clusterdos_lab.util import LabError


def test_counts_real_inotify_instances_of_this_process():
    # This test's own process opens two inotify instances: the count must see both.
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    before = limits.inotify_instances(uid=os.geteuid())
    fds = [libc.inotify_init(), libc.inotify_init()]
    try:
        assert all(fd >= 0 for fd in fds)
        assert limits.inotify_instances(uid=os.geteuid()) >= before + 2
    finally:
        for fd in fds:
            os.close(fd)


def test_reads_the_real_limit():
    assert limits.inotify_limit() is None or limits.inotify_limit() > 0


def test_refuses_hosts_when_root_inotify_instances_would_run_out():
    with pytest.raises(LabError) as err:
        limits.check_inotify_headroom(3, limit=128, in_use=110)
    message = str(err.value)
    assert "fs.inotify.max_user_instances = 128" in message and "about 110 in use" in message
    assert "sysctl -w fs.inotify.max_user_instances=1024" in message
    assert "/etc/sysctl.d/" in message and "exits at once with status 255" in message


def test_accepts_hosts_that_fit_and_asks_more_for_many():
    limits.check_inotify_headroom(3, limit=128, in_use=100)
    limits.check_inotify_headroom(0, limit=128, in_use=200)
    with pytest.raises(LabError, match=r"max_user_instances=1228"):
        limits.check_inotify_headroom(100, limit=1024, in_use=300)


def test_silent_exit_255_is_explained_by_the_exhausted_limit():
    text = limits.explain_exit("n1", 255, "", limit=128, in_use=125)
    assert "n1 exited right after it started (status 255)" in text
    assert "inotify instances are used up" in text and "sysctl -w fs.inotify.max_user_instances=" in text


def test_other_exits_show_the_host_output_not_a_guess():
    text = limits.explain_exit("n1", 1, "Failed to mount /sys\n", limit=1024, in_use=40)
    assert "inotify" not in text and "Failed to mount /sys" in text
