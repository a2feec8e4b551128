#!/usr/bin/env bash
# Every check of the project, in order: lint, sanity, unit tests, then every molecule
# scenario on real lab hosts. Runs them all, prints a line per stage with its time, and
# fails if any failed. `make test` and CI (.ci/run) call this.
#   SCENARIOS="base slurm_cluster" scripts/test-all.sh   only these scenarios
#   TEST_ALL_LANES=0 SCENARIOS=... scripts/test-all.sh    the scenarios alone, no stage before
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
export PATH="$here/.venv/bin:$here/bin:$PATH" ANSIBLE_CONFIG="$here/ansible.cfg"
export ANSIBLE_FORCE_COLOR=0 PY_COLORS=0 NO_COLOR=1

# Scenarios in order of what they protect most: the order their output and results are
# printed in, and the order among scenarios expected to take equally long (they start
# longest first, below). Scenarios not listed here come after these, alphabetically.
ORDER="base kubeadm_cluster kubeadm_ha slurm_cluster slurm_cluster_2 containerd kubernetes_hosts sandboxes gpu_repos validate_slurm clusterd nfs_home_softroce"
all_scenarios="$(for f in molecule/*/molecule.yml; do basename "$(dirname "$f")"; done | grep -v '^_' | sort)"
ordered="$(for s in $ORDER; do grep -qx "$s" <<<"$all_scenarios" && echo "$s"; done;
  grep -vxF -f <(tr ' ' '\n' <<<"$ORDER") <<<"$all_scenarios")"
scenarios="${SCENARIOS:-$ordered}"
# CI has a hard time limit (90 min); `make test` must end within TEST_ALL_CAP_S seconds
# (83 min) of the run's start (.ci/run sets TEST_ALL_START before setup). Issue 18's goal is
# 75 min; the cap leaves room for CI's machine, which has run 1.6 times slower than the
# development machine (docs/testing.md, "Fitting CI"). A scenario starts only
# when the time spent so far plus its expected time (.ci/scenario_times, the last CI
# run's figures) fits the cap; otherwise it is listed as NOT RUN at once, and the run
# still fails if anything that ran failed. A scenario's time limit is
# molecule/<scenario>/TIME_LIMIT_S when present, else the default, and never more than
# the time left before the cap. A NOT RUN scenario fails the run (every scenario must
# run, in CI too); TEST_ALL_REQUIRE_ALL=0 only lists it.
cap="${TEST_ALL_CAP_S:-4980}"
default_expected="${TEST_ALL_DEFAULT_EXPECTED_S:-600}"
default_limit="${TEST_ALL_SCENARIO_LIMIT_S:-1200}"
require_all="${TEST_ALL_REQUIRE_ALL:-1}"
# Two lanes side by side only where the machine gets about twice the work done with two
# CPU-bound processes: CI's "2 cores" have not always done that (its stages all took
# about 2.3 times as long once they ran in two lanes: measured 2026-12-01, the lanes'
# wall time went from 1149 s one after another to 1555 s side by side). The probe
# (scripts/machine_probe.py, which the benchmarks print too) runs the same Python loop
# alone and then twice side by side, best of two each (a few seconds); two lanes when the pair does at least 1.5 times the work of one.
# TEST_ALL_LANES and TEST_ALL_SCENARIO_LANES override what it finds (both set: no probe).
probe_speedup() {
  python3 "$here/scripts/machine_probe.py"
}
parallel_speedup=""
if [ -z "${TEST_ALL_LANES:-}" ] || [ -z "${TEST_ALL_SCENARIO_LANES:-}" ]; then
  parallel_speedup="$(probe_speedup)" || parallel_speedup=1.00
fi
start_epoch="${TEST_ALL_START:-$(date +%s)}"
times_file="$here/.ci/scenario_times"
results=()
measured=()
passed=0
failed=0
notrun=0
xfailed=0

expected_s() {
  local v
  v="$(awk -v s="$1" '$1 == s { print $2; exit }' "$times_file" 2>/dev/null)"
  echo "${v:-$default_expected}"
}
elapsed_s() { echo $(( $(date +%s) - start_epoch )); }

# Before the scenarios, two lanes of stages run side by side where the probe above found
# two cores' worth of work: each lane is one process at a time, mostly one core (lint,
# ansible-playbook runs, pytest). Lane A: the static checks, the playbook harness tests, the AWX stand-in
# tests, the node entry points on a real API server (kube_nodes), the bad inventories and
# the lab; lane B: the other unit tests and the real API server (the split balances the
# lanes' expected times in .ci/scenario_times; `unit` takes every directory of tests/unit
# except awx and kube_nodes, so a new one is never left out).
# A stage's output goes to reports/stages/NAME.log and is printed, whole, in the order
# below once both lanes are done. TEST_ALL_LANES=1 runs them one after another, 0 not at all.
lane_a=(yamllint ansible-lint changelog argument-specs role-docs sanity unit-playbooks unit-awx unit-kube-nodes bad-inventories lab)
lane_b=(unit apiserver)
[ "${TEST_ALL_LANES:-}" != 0 ] || { lane_a=(); lane_b=(); }
stage_cmd() {
  case "$1" in
    yamllint) yamllint . ;;
    ansible-lint) ansible-lint ;;
    changelog) antsibull-changelog lint ;;
    argument-specs) python3 scripts/check_argument_specs.py ;;
    role-docs) python3 scripts/role_docs.py --check ;;
    sanity) scripts/sanity.sh ;;
    unit-playbooks) pytest -q tests/playbooks ;;
    unit-awx) pytest -q tests/unit/awx ;;
    unit) pytest -q tests/unit --ignore=tests/unit/awx --ignore=tests/unit/kube_nodes ;;
    unit-kube-nodes) pytest -q tests/unit/kube_nodes ;;
    bad-inventories) python3 tests/playbooks/bad_inventories/run.py --lab pf-bad ;;
    apiserver) pytest -q tests/apiserver ;;
    lab) pytest -q tests/lab ;;
    *) echo "test-all: no stage named $1"; return 1 ;;
  esac
}
stage_dir="$here/reports/stages"
rm -rf "$stage_dir"; mkdir -p "$stage_dir"
run_lane() {
  local name t0
  for name in "$@"; do
    t0=$SECONDS
    if stage_cmd "$name" > "$stage_dir/$name.log" 2>&1; then echo PASS > "$stage_dir/$name.rc"; else echo FAIL > "$stage_dir/$name.rc"; fi
    echo "$((SECONDS - t0))" > "$stage_dir/$name.s"
  done
}

# The lanes, from the probe above: two where the pair did at least 1.5 times the work of
# one; one otherwise, unless one lane cannot fit the cap while two still do more than one
# (at least 1.1 times the work): then one lane would only leave scenarios NOT RUN, which
# fails the run. TEST_ALL_LANES and TEST_ALL_SCENARIO_LANES override the choice.
auto_lanes=""
if [ -n "$parallel_speedup" ]; then
  auto_lanes="$(awk -v s="$parallel_speedup" 'BEGIN { print (s >= 1.5) ? 2 : 1 }')"
  why="two CPU-bound processes side by side did ${parallel_speedup}x the work of one"
  if [ "$auto_lanes" = 1 ]; then
    serial=0
    for n in "${lane_a[@]}" "${lane_b[@]}" $scenarios; do serial=$((serial + $(expected_s "$n"))); done
    if [ $((serial + $(elapsed_s))) -gt "$cap" ] && awk -v s="$parallel_speedup" 'BEGIN { exit !(s >= 1.1) }'; then
      auto_lanes=2
      why="$why, and one lane would take about ${serial}s, past the ${cap}s cap"
    fi
  fi
  echo "=== parallel probe: $why: ${auto_lanes} lane(s) unless TEST_ALL_LANES / TEST_ALL_SCENARIO_LANES say otherwise"
fi
lanes_setting="${TEST_ALL_LANES:-$auto_lanes}"
scenario_lanes="${TEST_ALL_SCENARIO_LANES:-$auto_lanes}"

# The plan: what the stages are expected to take against the cap.
plan_a=0; plan_b=0; plan_s=0
for n in "${lane_a[@]}"; do plan_a=$((plan_a + $(expected_s "$n"))); done
for n in "${lane_b[@]}"; do plan_b=$((plan_b + $(expected_s "$n"))); done
for n in $scenarios; do plan_s=$((plan_s + $(expected_s "$n"))); done
planned=$(( (plan_a > plan_b ? plan_a : plan_b) + (plan_s + scenario_lanes - 1) / scenario_lanes ))
echo "=== plan: about ${planned}s expected (.ci/scenario_times; lanes ${plan_a}s and ${plan_b}s side by side, scenarios ${plan_s}s in ${scenario_lanes} lanes) against a cap of ${cap}s; $(elapsed_s)s spent before the tests"

lanes_t0=$SECONDS
echo "=== lanes: A (${lane_a[*]}) and B (${lane_b[*]}); logs in reports/stages/"
if [ "$lanes_setting" = 0 ]; then
  :
elif [ "$lanes_setting" = 1 ]; then
  run_lane "${lane_a[@]}" "${lane_b[@]}"
else
  run_lane "${lane_a[@]}" & pid_a=$!
  run_lane "${lane_b[@]}" & pid_b=$!
  wait "$pid_a" "$pid_b"
fi
for name in "${lane_a[@]}" "${lane_b[@]}"; do
  verdict="$(cat "$stage_dir/$name.rc" 2>/dev/null || echo FAIL)"; took="$(cat "$stage_dir/$name.s" 2>/dev/null || echo 0)"
  echo "=== $name ($verdict, ${took}s)"
  cat "$stage_dir/$name.log"
  results+=("$verdict $name (${took}s)")
  if [ "$verdict" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  measured+=("$(printf '%-22s %-8s measured %s' "$name" "$took" "$(date -u +%F)")")
done
echo "=== lanes done in $((SECONDS - lanes_t0))s"
measured+=("$(printf '# %-20s %-8s (both lanes, wall time)' lanes "$((SECONDS - lanes_t0))")")

# The scenarios run in $scenario_lanes lane(s) (the probe above: two where two cores do
# twice the work; a scenario keeps about one core busy, benchmarks/stage_cpu.py). Each
# lane takes the next scenario from one queue when its last one ends. With two lanes the
# queue holds the longest expected first (ties in ORDER's order), so that no long
# scenario is left to run alone at the end; with one, ORDER's order.
# A scenario starts only when its expected time fits what is left of the cap; otherwise
# it is NOT RUN at once. Its time limit is molecule/<scenario>/TIME_LIMIT_S when present,
# else the default, and never more than what is left of the cap. Its output goes to
# reports/stages/molecule-<scenario>.log and is printed whole, in ORDER's order, once all
# have ended.
queue="$stage_dir/scenario-queue"
if [ "$scenario_lanes" -gt 1 ]; then
  for s in $scenarios; do printf '%s %s\n' "$(expected_s "$s")" "$s"; done | sort -s -k1,1nr | awk '{print $2}' > "$queue"
else
  # One lane: ORDER's order, so that what protects most runs first when time runs short.
  printf '%s\n' $scenarios > "$queue"
fi
# A scenario with a file molecule/<scenario>/LANE_GROUP (its first line names the group,
# the rest says why) never runs beside another scenario of the same group: a lane skips
# it in the queue while one of its group runs, and waits when only such ones are left.
scenario_group() { [ ! -f "molecule/$1/LANE_GROUP" ] || head -n1 "molecule/$1/LANE_GROUP"; }
next_scenario() {
  ( flock 8
    while read -r s; do
      [ -n "$s" ] || continue
      g="$(scenario_group "$s")"
      if [ -n "$g" ] && [ -e "$stage_dir/group-$g.running" ]; then continue; fi
      grep -vx -- "$s" "$queue" > "$queue.new"; mv "$queue.new" "$queue"
      [ -z "$g" ] || echo "$s" > "$stage_dir/group-$g.running"
      echo "$s"; exit 0
    done < "$queue"
    if [ -s "$queue" ]; then echo WAIT; fi
  ) 8>"$queue.lock"
}
# scenario_result NAME KIND TEXT: KIND is pass, fail, notrun or xfail.
scenario_result() { echo "$2" > "$stage_dir/molecule-$1.kind"; echo "$3" > "$stage_dir/molecule-$1.result"; }
run_scenario() {
  local s="$1" lane="$2" expected left limit capped=0 t0 rc took log="$stage_dir/molecule-$1.log"
  expected="$(expected_s "$s")"
  left=$(( cap - $(elapsed_s) ))
  if [ "$expected" -gt "$left" ]; then
    scenario_result "$s" notrun "NOT RUN molecule:$s (expected ${expected}s, ${left}s left of the ${cap}s cap)"
    echo "=== molecule:$s NOT RUN (expected ${expected}s, ${left}s left of the cap)"
    return
  fi
  limit="$default_limit"
  if [ -f "molecule/$s/TIME_LIMIT_S" ]; then limit="$(head -n1 "molecule/$s/TIME_LIMIT_S")"; fi
  [ "$limit" -le "$left" ] || { limit="$left"; capped=1; }
  echo "=== molecule:$s started in lane $lane at $(elapsed_s)s (expected ${expected}s, limit ${limit}s)"
  t0=$SECONDS
  timeout --kill-after=30 "$limit" molecule test -s "$s" > "$log" 2>&1; rc=$?
  took=$((SECONDS - t0))
  echo "$(printf '%-22s %-8s measured %s' "$s" "$took" "$(date -u +%F)")" > "$stage_dir/molecule-$s.measured"
  if [ -f "molecule/$s/EXPERIMENTAL" ]; then
    # Not yet passed end to end on this machine (its first line says why): a failure is
    # reported as XFAIL, not hidden.
    if [ "$rc" -eq 0 ]; then
      scenario_result "$s" pass "PASS molecule:$s (${took}s, experimental: remove molecule/$s/EXPERIMENTAL)"
    else
      scenario_result "$s" xfail "XFAIL molecule:$s (${took}s): $(head -n1 "molecule/$s/EXPERIMENTAL")"
    fi
  elif [ "$rc" -eq 0 ]; then
    scenario_result "$s" pass "PASS molecule:$s (${took}s)"
  elif [ "$capped" = 1 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
    # Its limit was cut to what was left of the cap: stopped by the cap, it did not
    # finish for lack of time, like a NOT RUN scenario; any other failure is a failure.
    molecule destroy -s "$s" >/dev/null 2>&1 || true
    scenario_result "$s" notrun "NOT RUN molecule:$s (stopped by the ${cap}s cap after ${took}s)"
  else
    scenario_result "$s" fail "FAIL molecule:$s (${took}s)"
  fi
  echo "=== molecule:$s ended in lane $lane: $(cat "$stage_dir/molecule-$s.result")"
}
scenario_lane() {
  local s g
  while s="$(next_scenario)" && [ -n "$s" ]; do
    if [ "$s" = WAIT ]; then sleep 5; continue; fi
    run_scenario "$s" "$1"
    g="$(scenario_group "$s")"
    [ -z "$g" ] || rm -f "$stage_dir/group-$g.running"
  done
}
scenarios_t0=$SECONDS
echo "=== scenarios in $scenario_lanes lane(s), in this order: $(tr '\n' ' ' < "$queue")"
pids=()
for lane in $(seq 1 "$scenario_lanes"); do scenario_lane "$lane" & pids+=($!); done
[ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}"
for s in $scenarios; do
  [ -f "$stage_dir/molecule-$s.kind" ] || scenario_result "$s" fail "FAIL molecule:$s (no result: its lane ended early)"
  if [ -f "$stage_dir/molecule-$s.log" ]; then echo "=== molecule:$s"; cat "$stage_dir/molecule-$s.log"; fi
  results+=("$(cat "$stage_dir/molecule-$s.result")")
  case "$(cat "$stage_dir/molecule-$s.kind")" in
    pass) passed=$((passed + 1)) ;; fail) failed=$((failed + 1)) ;;
    notrun) notrun=$((notrun + 1)) ;; xfail) xfailed=$((xfailed + 1)) ;;
  esac
  [ ! -f "$stage_dir/molecule-$s.measured" ] || measured+=("$(cat "$stage_dir/molecule-$s.measured")")
done
echo "=== scenarios done in $((SECONDS - scenarios_t0))s"
measured+=("$(printf '# %-20s %-8s (%s lane(s), wall time)' scenarios "$((SECONDS - scenarios_t0))" "$scenario_lanes")")

# Task coverage of this run (docs/testing.md): the figure is printed, never gates the run;
# `make coverage` is the strict gate.
echo
echo "=== task coverage (records in .cache/coverage; details: make coverage, reports/coverage.html)"
python3 scripts/coverage.py --summary --no-fail || echo "test-all: coverage summary could not be computed"

# Why each failed stage failed, last: the lines of its log that say so (failed tasks,
# pytest failures, molecule's step), so that the tail of the run carries the reason.
for r in "${results[@]}"; do
  case "$r" in FAIL\ *) ;; *) continue ;; esac
  name="${r#FAIL }"; name="${name%% (*}"
  log="$stage_dir/${name//:/-}.log"
  echo
  echo "=== why $name failed (from reports/stages/$(basename "$log"))"
  if [ -f "$log" ]; then
    grep -E 'fatal: \[|FAILED|^E  |failed=[1-9]|unreachable=[1-9]|ERROR|Error:|AssertionError|Timeout|timed out|"msg":' "$log" | tail -n 25 | cut -c1-400
    echo "--- last lines:"; tail -n 8 "$log" | cut -c1-400
  else
    echo "(no log)"
  fi
done

echo
echo "=== summary"
printf '%s\n' "${results[@]}"
[ "$notrun" -eq 0 ] || echo "test-all: $notrun scenario(s) not run for lack of time (run them with SCENARIOS=...)"
[ "$xfailed" -eq 0 ] || echo "test-all: $xfailed experimental scenario(s) failed (XFAIL, see above)"
echo "test-all: $passed passed, $failed failed, $notrun not run; $(elapsed_s)s since the run began (cap ${cap}s)"
# This run's times in .ci/scenario_times' format (copy the CI run's lines there).
mkdir -p reports
printf '%s\n' "${measured[@]}" > reports/test-times.txt
echo "test-all: stage times written to reports/test-times.txt"
if [ "$notrun" -gt 0 ] && [ "$require_all" = 1 ]; then
  echo "test-all: FAIL: TEST_ALL_REQUIRE_ALL=1 and $notrun scenario(s) did not run"
  failed=$((failed + 1))
fi
[ "$failed" -eq 0 ]
