"""Mitogen's linear strategy for the molecule scenarios, without its CPU pinning.

Mitogen (pinned in requirements-dev.txt) runs every task of a host in one Python that
lives for the whole run, instead of a new Python per task: the same modules, less CPU
(docs/testing.md, "Task executor"). Its own plugin also pins Ansible's processes to
CPUs, and every process it starts on the controller inherits a mask without the first
CPU. On CI's two cores that is one CPU, and what a task on the controller starts inherits
it too: the lab hosts started by molecule's create step ran on one CPU, and kubeadm's
preflight refused them (NumCPU: "the number of available CPUs 1 is less than the
required 2"). This plugin is Mitogen's linear strategy with its policy that pins nothing.

It also lists the installed collections once per run instead of once per task. Mitogen's
planner (`_load_collections`) walks every collection path before a collection's module
first runs in a process, importing each collection's package (its meta/runtime.yml
parsed), and remembers nothing across tasks: each task runs in a new forked worker. With
the `ansible` package's collections installed that walk was 13% of the controller's CPU
in a Slurm converge (py-spy, docs/testing.md, "Task executor"). The list is made here, in
the process the workers are forked from, before the first task, and the planner reads it.
"""

import ansible_mitogen.affinity

# Before Mitogen's process set-up reads it: the base Policy's methods do nothing.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

import ansible.collections.list  # noqa: E402
import ansible_mitogen.loaders  # noqa: E402  (after the policy is replaced)
import ansible_mitogen.planner  # noqa: E402
import ansible_mitogen.strategy  # noqa: E402

_COLLECTION_DIRS: list = []


def _load_collections(invocation):
    """Mitogen's _load_collections with the run's list of collection paths made once."""
    invocation._extra_sys_paths.update(_COLLECTION_DIRS)  # pylint: disable=protected-access


ansible_mitogen.planner._load_collections = _load_collections  # pylint: disable=protected-access

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):
    """mitogen_linear, unpinned, listing the collections once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if not _COLLECTION_DIRS:
            _COLLECTION_DIRS.extend(
                path.decode("utf-8") for path in ansible.collections.list.list_collection_dirs())
