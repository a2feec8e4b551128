#!/usr/bin/env bash
# Every check of the project, in order: lint, sanity, unit tests, then every molecule
# scenario on real lab hosts. Runs them all, prints a line per stage with its time, and
# fails if any failed. `make test` and CI (.ci/run) call this.
#   SCENARIOS="base slurm_cluster" scripts/test-all.sh   only these scenarios
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
export PATH="$here/.venv/bin:$here/bin:$PATH" ANSIBLE_CONFIG="$here/ansible.cfg"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 NO_COLOR=1

scenarios="${SCENARIOS:-$(for f in molecule/*/molecule.yml; do basename "$(dirname "$f")"; done | grep -v '^_' | sort)}"
results=()
passed=0
failed=0

stage() {
  local name="$1"; shift
  local start=$SECONDS
  echo "=== $name: $*"
  if "$@"; then
    results+=("PASS $name ($((SECONDS - start))s)"); passed=$((passed + 1))
  else
    results+=("FAIL $name ($((SECONDS - start))s)"); failed=$((failed + 1))
  fi
}

stage yamllint yamllint .
stage ansible-lint ansible-lint
stage changelog antsibull-changelog lint
stage argument-specs python3 scripts/check_argument_specs.py
stage role-docs python3 scripts/role_docs.py --check
stage sanity scripts/sanity.sh
stage unit pytest -q tests/unit tests/playbooks
stage lab pytest -q tests/lab
for s in $scenarios; do
  stage "molecule:$s" molecule test -s "$s"
done

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
echo "test-all: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
