"""Mitogen's linear strategy for the molecule scenarios, without its CPU pinning.

Mitogen (pinned in requirements-dev.txt) runs every task of a host in one Python that
lives for the whole run, instead of a new Python per task: the same modules, less CPU
(docs/testing.md, "Task executor"). Its own plugin also pins Ansible's processes to
CPUs, and every process it starts on the controller inherits a mask without the first
CPU. On CI's two cores that is one CPU, and what a task on the controller starts inherits
it too: the lab hosts started by molecule's create step ran on one CPU, and kubeadm's
preflight refused them (NumCPU: "the number of available CPUs 1 is less than the
required 2"). This plugin is Mitogen's linear strategy with its policy that pins nothing.
"""

import ansible_mitogen.affinity

# Before Mitogen's process set-up reads it: the base Policy's methods do nothing.
ansible_mitogen.affinity.policy = ansible_mitogen.affinity.Policy()

import ansible_mitogen.loaders  # noqa: E402  (after the policy is replaced)
import ansible_mitogen.strategy  # noqa: E402

Base = ansible_mitogen.loaders.strategy_loader.get("linear", class_only=True)


class StrategyModule(ansible_mitogen.strategy.StrategyMixin, Base):
    """mitogen_linear, unpinned."""
