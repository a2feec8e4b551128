# clusterdOS developer entry points. Run as root (the lab creates bridges, firewall
# rules and privileged hosts). `make site` and `make test` are the README's commands.
SHELL := /bin/bash
VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
LAB ?= site
LAYOUT ?= site
# The task_coverage callback's records (ansible.cfg and the molecule base config write here).
COVERAGE_DIR := $(CURDIR)/.cache/coverage
# Every scenario under molecule/ (one directory each, _shared excluded).
SCENARIOS ?= $(sort $(filter-out _shared,$(notdir $(patsubst %/,%,$(dir $(wildcard molecule/*/molecule.yml))))))

.PHONY: help setup lint sanity unit molecule test site lab-up lab-down bench changelog coverage

help:
	@echo "make site     - set up, start the lab ($(LAYOUT) layout) and run playbooks/site.yml on it"
	@echo "make test     - every check: lint, sanity, unit tests, molecule scenarios ($(SCENARIOS))"
	@echo "make lab-down - remove the lab started by make site"
	@echo "make coverage - which tasks ran for real in the last make test (fails if one neither ran nor is exempt)"

setup:
	scripts/setup-dev.sh

lint: setup
	yamllint .
	ansible-lint
	antsibull-changelog lint
	python3 scripts/check_argument_specs.py
	python3 scripts/role_docs.py --check

sanity: setup
	scripts/sanity.sh

unit: setup
	pytest -q tests/unit

molecule: setup
	@set -e; for s in $(SCENARIOS); do echo "=== molecule test -s $$s"; molecule test -s $$s; done

# Task coverage records start empty: make coverage reads those of this run only.
test: setup
	rm -rf $(COVERAGE_DIR)
	scripts/test-all.sh

lab-up: setup
	clusterdos-lab up --name $(LAB) --layout $(LAYOUT)

site: export CLUSTERDOS_COVERAGE_SCENARIO := site
site: lab-up
	ansible-playbook -i "$$(clusterdos-lab inventory --name $(LAB))" playbooks/site.yml

lab-down:
	clusterdos-lab down --name $(LAB)

# base.yml's controller cost per host on 1, 10 and 50 lab hosts with the collection's strategy
# (ansible.cfg's; 50 hosts need fs.inotify.max_user_instances raised, which the lab says), then
# each Slurm converge benchmark with Ansible's stock executor and with Mitogen's (the molecule
# scenarios' executor; docs/testing.md), and adding a Slurm compute node to 4, 8 and 14 hosts
# and through add_node.yml in one run; then, with PEER_ROLE=DIR (an installed galaxyproject.slurm,
# `ansible-galaxy role install -p DIR/.. galaxyproject.slurm`), our first converge and no-op side
# by side with that role's (benchmarks/slurm_peer.py, issue 18 item 1).
PEER_ROLE ?=
bench: setup
	python3 benchmarks/lab_and_base.py --hosts 1 10 50 --memory 256
	python3 benchmarks/engine_scaling.py --lab
	python3 benchmarks/slurm.py
	python3 benchmarks/slurm.py --executor mitogen
	python3 benchmarks/slurm.py --site
	python3 benchmarks/slurm_add_node.py --executor collection --compute 2
	python3 benchmarks/slurm_add_node.py --executor collection --compute 6
	python3 benchmarks/slurm_add_node.py --executor collection --compute 12
	python3 benchmarks/slurm_add_node.py --executor collection --one-run
	python3 benchmarks/slurm_add_node.py --executor mitogen
	python3 benchmarks/kubeadm_cluster.py
	@if [ -n "$(PEER_ROLE)" ]; then python3 benchmarks/slurm_peer.py --executor collection --peer-role "$(PEER_ROLE)"; \
	else echo "bench: PEER_ROLE not set, the side-by-side with galaxyproject.slurm skipped (see benchmarks/slurm_peer.py)"; fi

# Per role and playbook: tasks run for real / total, the tasks never run, an HTML page
# (reports/coverage.html); fails when a task neither ran nor is listed in
# tests/coverage_exempt.yml. See docs/testing.md.
coverage:
	python3 scripts/coverage.py --records $(COVERAGE_DIR)
