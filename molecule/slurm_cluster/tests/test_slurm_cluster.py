"""Verify Slurm on real lab hosts: daemons, munge, real jobs, accounting, a run with one
compute host stopped, and adding a compute node while a job runs.

Tests run in file order (pytest's default) and build on each other: the last one grows
the lab by one host. Two scenarios share them, each on its own lab (conftest.py).
Expectations come from the scenario (host names and groups in molecule.yml), never from
the files the roles wrote.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import testinfra
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared"))
import lab_playbook  # noqa: E402  (molecule/_shared, put on the path above)

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]
# The lab molecule made for the scenario running these tests: slurm_cluster, or
# slurm_cluster_2 (the same hosts on a second lab; conftest.py says which tests each runs).
LAB = "mol-" + os.environ.get("MOLECULE_SCENARIO_NAME", SCENARIO.name).replace("_", "-")
LAB_CLI = str(ROOT / "bin" / "clusterdos-lab")
PLATFORMS = yaml.safe_load((SCENARIO / "molecule.yml").read_text())["platforms"]
GROUPS = {p["name"]: p["groups"] for p in PLATFORMS}
COMPUTE = sorted(n for n, g in GROUPS.items() if "slurm_compute" in g)
CONTROLLER = next(n for n, g in GROUPS.items() if "slurm_controller" in g)
LOGIN = next(n for n, g in GROUPS.items() if "slurm_login" in g)
NEW_NODE = "slurm-c3"
SECOND_NEW_NODE = "slurm-c4"
THIRD_NEW_NODE = "slurm-c5"
# Where the controller keeps the hardware each compute node reported (the slurm role's facts step).
SAVED_HARDWARE = "/var/lib/clusterdos/slurm/nodes_hardware.yml"

testinfra_hosts = [f"ansible://{LOGIN}"]

MPI_HELLO = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, len; char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(name, &len);
    printf("hello rank %d of %d on %s\n", rank, size, name);
    MPI_Finalize();
    return 0;
}
"""


def lab_inventory() -> str:
    return subprocess.run([LAB_CLI, "inventory", "--name", LAB], check=True, capture_output=True, text=True).stdout.strip()


def lab_host(name: str):
    return testinfra.get_host(f"ansible://{name}", ansible_inventory=lab_inventory())


def playbook(name: str | Path, *extra: str, inventory: str | None = None) -> subprocess.CompletedProcess[str]:
    """ansible-playbook on the lab with the scenario's inventory, as the converge runs it
    (molecule/_shared/lab_playbook.py: Mitogen, the checkout's collection): a playbook of the
    collection by name, or the path of another; INVENTORY replaces the lab's."""
    return lab_playbook.run(name, *extra, inventories=[inventory or lab_inventory(), SCENARIO / "inventory"])


def recap(out: str) -> dict[str, dict[str, int]]:
    rows = re.findall(r"^(\S+)\s+: (ok=.*)$", out, re.M)
    return {name: {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)} for name, fields in rows}


def refused(name: str | Path, *extra: str, inventory: str | None = None) -> tuple[subprocess.CompletedProcess[str], str]:
    """A playbook run that must stop in its checks with nothing changed on any host: the run
    and its output on one line (a message wraps where Ansible prints it)."""
    run = playbook(name, *extra, inventory=inventory)
    assert run.returncode != 0, run.stdout[-4000:]
    assert sum(s["changed"] for s in recap(run.stdout).values()) == 0, recap(run.stdout)
    return run, " ".join(run.stdout.split())


def task_outputs(out: str, task: str) -> list[str]:
    """What a task printed each time it ran in an ansible-playbook run (from its TASK header to the next)."""
    return [t for t in out.split("\nTASK [") if t.startswith(task + "]")]


def task_output(out: str, task: str) -> str:
    """What one task printed in an ansible-playbook run, where it ran once."""
    sections = task_outputs(out, task)
    assert len(sections) == 1, f"task {task!r} ran {len(sections)} times:\n{out[-4000:]}"
    return sections[0]


# The converge_stamp task where each host compares itself with its record (a round trip).
COMPARE = "TASK [clusterdos.cluster.converge_stamp : Compare each host with its last converge (read-only)]"

# Every job slurmdbd holds for the cluster, one `ID|STATE` line each.
SACCT_JOBS = "sacct --noheader --parsable2 --allocations --starttime 2020-01-01 --format JobID,State"


# The running slurmd's command line (its arguments, space-separated).
SLURMD_ARGS = "tr '\\0' ' ' < /proc/$(systemctl show --property=MainPID --value slurmd)/cmdline"


def recorded_jobs(host) -> set[str]:
    """The IDs of the jobs slurmdbd holds for the cluster."""
    return {line.split("|")[0] for line in host.check_output(SACCT_JOBS).splitlines()}


def wait_for(probe, what: str, tries: int = 60, delay: float = 2.0):
    """Poll until probe() returns a truthy value (a bound on waiting, not a timed assertion)."""
    for _ in range(tries):
        value = probe()
        if value:
            return value
        time.sleep(delay)
    pytest.fail(f"gave up waiting for {what}")


def booted(name: str) -> bool:
    """The host answers over SSH and systemd has finished starting it."""
    try:
        state = lab_host(name).run("systemctl is-system-running --wait").stdout.strip()
    except RuntimeError:  # testinfra raises when ssh itself fails (sshd not up yet)
        return False
    return state in ("running", "degraded")


def node_states(host) -> dict[str, str]:
    out = host.check_output("sinfo --noheader --Node --format '%N %T'")
    return {n: s.rstrip("*~#!%$@^-") for n, s in (line.split() for line in out.splitlines())}


def job_state(host, job: str) -> str:
    """A job's state as squeue reports it (PENDING, RUNNING, ...)."""
    return host.check_output(f"squeue --noheader --jobs={job} --format=%T")


def running_config(host, key: str) -> str:
    """A setting of the running slurmctld (`scontrol show config`), not of the file."""
    return dict(re.findall(r"^(\w+)\s+= (.*)$", host.check_output("scontrol show config"), re.M)).get(key, "")


# The scenario's own slurm_config (group_vars), which a test's -e slurm_config replaces whole.
LAB_SLURM_CONFIG = yaml.safe_load((SCENARIO / "inventory" / "group_vars" / "all.yml").read_text())["slurm_config"]


def test_munge_key_is_shared_and_private():
    digests = set()
    for name in GROUPS:
        h = lab_host(name)
        key = h.file("/etc/munge/munge.key")
        assert (key.user, key.group, key.mode) == ("munge", "munge", 0o400), name
        assert key.size >= 32, name
        digests.add(h.check_output("sha256sum /etc/munge/munge.key").split()[0])
        assert h.service("munge").is_running, name
    assert len(digests) == 1, "every host must hold the same munge key"


def test_daemons_run_where_they_belong():
    ctl = lab_host(CONTROLLER)
    for unit in ("slurmctld", "slurmdbd", "mariadb"):
        assert ctl.service(unit).is_running and ctl.service(unit).is_enabled, unit
    for name in COMPUTE:
        assert lab_host(name).service("slurmd").is_running, name
    assert not lab_host(LOGIN).service("slurmd").is_running


def test_sinfo_shows_both_compute_nodes_idle(host):
    assert node_states(host) == {n: "idle" for n in COMPUTE}
    assert host.check_output("sinfo --noheader --format %P") == "batch*"


def test_srun_runs_on_both_nodes(host):
    out = host.check_output("srun --nodes=2 --ntasks-per-node=1 hostname")
    assert sorted(out.split()) == COMPUTE


def test_cluster_registered_with_accounting(host):
    assert host.check_output("sacctmgr --noheader --parsable2 show cluster format=cluster") == "lab"
    qos = host.check_output("sacctmgr --noheader --parsable2 show qos format=name").split()
    assert {"normal", "high"} <= set(qos)
    # slurm_accounting_users (group_vars): the user's association with its account.
    accounts = host.check_output("sacctmgr --noheader --parsable2 show assoc where user=nobody format=account").split()
    assert accounts == ["default"]


def test_mpi_job_across_two_nodes_completes_in_sacct(host):
    """An OpenMPI program built on the login host, shipped in the job script, broadcast to
    the job's nodes with sbcast and started by srun through PMIx."""
    host.run_expect([0], "mkdir -p /root/mpi")
    host.run_expect([0], f"cat > /root/mpi/hello.c <<'EOF'\n{MPI_HELLO}\nEOF")
    host.run_expect([0], "mpicc -o /root/mpi/hello /root/mpi/hello.c")
    blob = host.check_output("base64 -w0 /root/mpi/hello")
    assert base64.b64decode(blob)[:4] == b"\x7fELF"
    script = "\n".join([
        "#!/bin/bash",
        "#SBATCH --job-name=mpi-hello",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --output=/tmp/mpi-hello-%j.out",
        "set -euo pipefail",
        'src="/tmp/mpi-hello-src-$SLURM_JOB_ID"',
        f"echo '{blob}' | base64 -d > \"$src\"",
        'chmod +x "$src"',
        'sbcast --force "$src" "/tmp/mpi-hello-$SLURM_JOB_ID"',
        'srun --mpi=pmix "/tmp/mpi-hello-$SLURM_JOB_ID"',
    ])
    host.run_expect([0], f"cat > /root/mpi/job.sh <<'EOF'\n{script}\nEOF")
    submitted = host.run("cd /root/mpi && sbatch --parsable --wait job.sh")
    assert submitted.rc == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    batch_host = re.search(r"BatchHost=(\S+)", host.check_output(f"scontrol show job {job}")).group(1)
    output = lab_host(batch_host).file(f"/tmp/mpi-hello-{job}.out").content_string
    ranks = dict(re.findall(r"hello rank (\d+) of 2 on (\S+)", output))
    assert sorted(ranks.values()) == COMPUTE, output
    state = wait_for(lambda: host.check_output(f"sacct --noheader --parsable2 --allocations --jobs {job} --format State,ExitCode")
                     or None, f"job {job} in sacct")
    assert state == "COMPLETED|0:0"


def test_the_login_hosts_build_tools_installed_in_the_background(host):
    """The converge installed the login host's build tools (login_background in
    roles/slurm/vars/main.yml) as a background job while the daemons' plays ran, and the
    login play waited for it: one job's result on the login host (Ansible keeps each in
    ~/.ansible_async) has apt set up every one of those packages, and did not fail; dpkg
    lists them installed. Installed in the one transaction instead, there is no such job."""
    background = yaml.safe_load((ROOT / "roles" / "slurm" / "vars" / "main.yml").read_text())[
        "__slurm_os_values"]["Debian"]["login_background"]
    results = []
    for name in host.check_output("ls -1 /root/.ansible_async 2>/dev/null || true").split():
        try:
            results.append(json.loads(host.file(f"/root/.ansible_async/{name}").content_string))
        except ValueError:
            continue

    def set_up(result: dict, package: str) -> bool:
        return re.search(rf"^Setting up {re.escape(package)}(:\S+)? \(", result.get("stdout") or "", re.M) is not None
    jobs = [r for r in results if all(set_up(r, p) for p in background)]
    assert len(jobs) == 1, f"{len(jobs)} background jobs set up {background} on {LOGIN}: {[r.get('stdout', '')[-300:] for r in results]}"
    assert jobs[0].get("changed") and not jobs[0].get("failed"), jobs[0]
    installed = host.check_output("dpkg-query --show --showformat '${Package} ${db:Status-Status}\\n' " + " ".join(background))
    assert sorted(installed.splitlines()) == sorted(f"{p} installed" for p in background)


def test_the_dbd_entry_point_alone_installs_its_own_packages(host):
    """The slurm role's `dbd` entry point applied alone (tests/slurmdbd_alone.yml, as a site's
    own playbook may; no `install` entry point before it) installs what it needs itself: with
    slurmdbd and the MySQL library of its database tasks removed, it puts both back, and
    slurmdbd serves the same accounting database again."""
    ctl = lab_host(CONTROLLER)
    # Polled: on a loaded machine slurmdbd has been seen to answer `sacct -j` for the last
    # job before the job appears in a time-window listing (observed in two runs at load 6+).
    jobs = wait_for(lambda: (lambda out: out if "COMPLETED" in out else None)(host.check_output(SACCT_JOBS)),
                    "the completed jobs in a time-window listing of sacct", tries=30)
    removed = ("slurmdbd", "python3-pymysql")
    ctl.run_expect([0], "DEBIAN_FRONTEND=noninteractive apt-get remove --yes " + " ".join(removed))
    assert not any(ctl.package(p).is_installed for p in removed)
    assert not ctl.service("slurmdbd").is_running
    run = playbook(SCENARIO / "tests" / "slurmdbd_alone.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Install every package of this host's Slurm daemons" not in run.stdout
    for task in ("Install MariaDB", "Install Slurm packages"):
        assert f"changed: [{CONTROLLER}]" in task_output(run.stdout, f"clusterdos.cluster.slurm : {task}"), run.stdout[-4000:]
    assert all(ctl.package(p).is_installed for p in removed)
    assert ctl.service("slurmdbd").is_running and ctl.service("slurmdbd").is_enabled
    # The same database: the cluster's registration and the jobs run so far.
    assert host.check_output("sacctmgr --noheader --parsable2 show cluster format=cluster") == "lab"
    after = host.check_output(SACCT_JOBS)
    assert set(jobs.splitlines()) <= set(after.splitlines())


def test_a_re_run_takes_the_fast_path_and_a_drifted_host_converges_again(host):
    """The fast path (roles/converge_stamp), as users get it by default: converge.yml
    (base.yml + slurm.yml) again skips both stages after the preflight and the facts, and
    changes nothing; both answers come from the records the run's first read probed (no host
    compares again). A managed file edited by hand on one compute node makes slurm.yml
    converge the stage again, naming what changed, and put the file back; the run after that
    takes the fast path again. A run limited to munge's tags runs munge's own package step
    and records nothing. (Molecule's own converge and idempotence steps ran with the fast
    path off, so they proved the roles idempotent.)"""
    node = COMPUTE[0]
    conf = "/etc/slurm/slurm.conf"
    # Molecule's converge recorded the stages; the tests above ran jobs and put slurmdbd's
    # packages back, which drift nothing the roles declare. So this run takes the fast path.
    fast = playbook(SCENARIO / "converge.yml")
    assert fast.returncode == 0, fast.stdout[-4000:] + fast.stderr[-2000:]
    stats = recap(fast.stdout)
    assert sum(s["changed"] for s in stats.values()) == 0, stats
    assert "Stage base skipped: every host (4)" in fast.stdout, fast.stdout[-4000:]
    assert "Stage slurm skipped: every host (4)" in fast.stdout, fast.stdout[-4000:]
    # No task of the base role, and none of the Slurm daemons' entry points, ran.
    assert "TASK [clusterdos.cluster.base :" not in fast.stdout
    assert "Enable and start slurmd" not in fast.stdout and "TASK [clusterdos.cluster.munge :" not in fast.stdout
    # The preflight, the facts and the checks: under a third of a full converge's 298 task headers.
    assert len(re.findall(r"^TASK \[", fast.stdout, re.M)) < 100
    # Both stages answered from the records the run's first read probed: no host compared
    # again (base converged nothing before Slurm's compare).
    compares = fast.stdout.split(COMPARE)[1:]
    assert len(compares) == 2 and all("ok: [" not in c.split("\nTASK [")[0] for c in compares), fast.stdout[-6000:]

    compute = lab_host(node)
    before = compute.check_output(f"sha256sum {conf}")
    compute.run_expect([0], f"echo '# edited by hand' >> {conf}")
    repair = playbook("slurm.yml")
    assert repair.returncode == 0, repair.stdout[-4000:] + repair.stderr[-2000:]
    assert f"Stage slurm converges: {node}: /etc/slurm changed since the last converge" \
        in " ".join(repair.stdout.split()), repair.stdout[-4000:]
    # slurm.yml alone: found in the first read's probes, no host compared again.
    assert "ok: [" not in task_output(repair.stdout, COMPARE[len("TASK ["):-1])
    stats = recap(repair.stdout)
    assert stats[node]["changed"] > 0 and all(stats[n]["changed"] == 0 for n in GROUPS if n != node), stats
    assert compute.check_output(f"sha256sum {conf}") == before
    wait_for(lambda: node_states(host).get(node) == "idle", f"{node} idle")
    again = playbook("slurm.yml")
    assert again.returncode == 0 and "Stage slurm skipped: every host (4)" in again.stdout, again.stdout[-4000:]
    assert sum(s["changed"] for s in recap(again.stdout).values()) == 0

    # Only munge, every task (the fast path off): munge's own package step runs where the
    # Slurm package play did not, changes nothing, and a run limited by tags records nothing.
    record = lab_host(CONTROLLER).check_output("sha256sum /var/lib/clusterdos/converged/slurm.json")
    tagged = playbook("slurm.yml", "--tags", "munge", "-e", '{"clusterdos_fast_path": false}')
    assert tagged.returncode == 0, tagged.stdout[-4000:] + tagged.stderr[-2000:]
    installed = task_output(tagged.stdout, "clusterdos.cluster.munge : Install munge")
    assert all(f"ok: [{n}]" in installed for n in GROUPS), installed
    assert sum(s["changed"] for s in recap(tagged.stdout).values()) == 0, recap(tagged.stdout)
    assert lab_host(CONTROLLER).check_output("sha256sum /var/lib/clusterdos/converged/slurm.json") == record


def test_a_binary_key_made_on_the_source_host_becomes_every_hosts_key(host):
    """After the role generated the cluster key, the key on its source host (the controller)
    is replaced by a binary one, as munge's own package makes when it is reinstalled there
    (`mungekey --create`, not text), without restarting munged. slurm.yml converges the stage,
    naming the key, and every host gets the same bytes (read on the source host, carried as
    base64); munged restarts everywhere, the source host included (its key's digest changed),
    so the role's credential check passes and jobs run. Before, the install failed on every
    host with a UTF-8 encoding error, and the source host's munged kept the old key."""
    ctl = lab_host(CONTROLLER)
    ctl.run_expect([0], "mungekey --create --force --keyfile /etc/munge/munge.key"
                        " && chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key")
    new = ctl.check_output("sha256sum /etc/munge/munge.key").split()[0]
    assert ctl.run("iconv -f utf-8 -t utf-8 /etc/munge/munge.key").rc != 0, "the test key must not be text"
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{CONTROLLER}: /etc/munge/munge.key changed since the last converge" in " ".join(run.stdout.split())
    for name in GROUPS:
        h = lab_host(name)
        assert h.check_output("sha256sum /etc/munge/munge.key").split()[0] == new, name
        assert h.service("munge").is_running, name
    wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE


def test_another_source_host_keeps_the_cluster_key(host):
    """munge_key_source_group naming another group (as when the controller that held the key
    is removed from the inventory and another host comes first): that host holds a copy of
    the generated key with the role's marker, so it reads the key back instead of generating
    a new one for every host. The stage converges (an input changed) and changes nothing;
    so does the run back to the scenario's source group (which also puts the stage's record
    back as the next tests expect it)."""
    keys = {n: lab_host(n).check_output("sha256sum /etc/munge/munge.key") for n in GROUPS}
    for extra in (["-e", "munge_key_source_group=slurm_compute"], []):
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert "Stage slurm converges" in run.stdout, run.stdout[-4000:]
        generate = task_output(run.stdout, "clusterdos.cluster.munge : Generate the cluster key once on the source host, and read it")
        source = COMPUTE[0] if extra else CONTROLLER
        assert re.search(rf"^ok: \[(?:\S+ -> )?{source}\]", generate, re.M), generate
        assert sum(s["changed"] for s in recap(run.stdout).values()) == 0, recap(run.stdout)
        assert {n: lab_host(n).check_output("sha256sum /etc/munge/munge.key") for n in GROUPS} == keys
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE


def test_the_sites_own_key_replaces_the_generated_one_and_stays(host):
    """munge_key set (the site's key, from a vault): every host gets exactly its bytes and
    munged restarts everywhere, so the role's credential check and jobs pass. Emptied again,
    the source host's key (now the site's) stays the cluster's: nothing changes."""
    site_key = "lab-only-site-munge-key-" + "0123456789abcdef" * 3
    digest = subprocess.run(["sha256sum"], input=site_key.encode(), capture_output=True, check=True).stdout.split()[0].decode()
    pids = {n: lab_host(n).check_output("systemctl show -p MainPID --value munge") for n in GROUPS}
    run = playbook("slurm.yml", "-e", json.dumps({"munge_key": site_key}))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    for name in GROUPS:
        h = lab_host(name)
        assert h.check_output("sha256sum /etc/munge/munge.key").split()[0] == digest, name
        assert h.check_output("systemctl show -p MainPID --value munge") != pids[name], f"munged did not restart on {name}"
    wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
    back = playbook("slurm.yml")
    assert back.returncode == 0, back.stdout[-4000:] + back.stderr[-2000:]
    assert sum(s["changed"] for s in recap(back.stdout).values()) == 0, recap(back.stdout)
    assert all(lab_host(n).check_output("sha256sum /etc/munge/munge.key").split()[0] == digest for n in GROUPS)


def test_a_key_made_world_readable_is_drift_and_converges_back(host):
    """munge.key chmod 0644 by hand on one compute node (same bytes): the converge record
    keeps each managed file's mode and owner with its checksum, so slurm.yml does not take
    the fast path but converges the stage, naming the key, and puts 0400 munge:munge back.
    Before, the record held checksums alone and the stage was skipped, the key left readable
    by every user."""
    node = COMPUTE[-1]
    compute = lab_host(node)
    compute.run_expect([0], "chmod 0644 /etc/munge/munge.key")
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert f"{node}: /etc/munge/munge.key changed since the last converge" in " ".join(run.stdout.split()), run.stdout[-4000:]
    key = compute.file("/etc/munge/munge.key")
    assert (key.mode, key.user, key.group) == (0o400, "munge", "munge")


def test_daemons_disabled_while_running_are_drift_and_enabled_again(host):
    """`systemctl disable munge slurmd` on one compute node, both left running: the node would
    come back from its next boot without them. The record's service probe reads each unit's
    boot state with its active state, so slurm.yml does not take the fast path but converges
    the stage, naming both, and enables them again. Before, only the active state was read
    and the stage was skipped as "as its last converge left it"."""
    node = COMPUTE[0]
    compute = lab_host(node)
    compute.run_expect([0], "systemctl disable munge slurmd")
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    flat = " ".join(run.stdout.split())
    for unit in ("munge", "slurmd"):
        assert f"service {unit} is disabled: it would not start at boot" in flat, run.stdout[-4000:]
        assert compute.service(unit).is_enabled and compute.service(unit).is_running
    assert set(host.check_output(f"srun -w {node} hostname").split()) == {node}


def test_accounts_qos_and_a_users_default_account_follow_the_inventory(host):
    """The default account given fairshare 5 and another description, the high QOS another
    Priority and a MaxWall, and the user nobody moved to a new account first, in the
    inventory: before, the account and the QOS existed and slurmdbd kept what they were
    created with, and nobody's jobs still went to `default` without -A, the run reporting
    nothing (for the fair share until session 31, for the rest until session 38). Now a dry
    run names each change with the value slurmdbd held and changes nothing; the run sets them
    (the user's association under `default` keeps its own share and stays); a dry run with
    the fast path off then finds nothing to change, since sacctmgr's own forms (01:30:00, a
    lower-case description) compare equal to the inventory's; back to the defaults the same
    way (-1 lifts the MaxWall; the new account stays: nothing is removed)."""
    shares = "sacctmgr --noheader --parsable2 show assoc cluster=lab account=default format=user,fairshare"
    shown = ("sacctmgr --noheader --parsable2 show qos high format=priority,maxwall && "
             "sacctmgr --noheader --parsable2 show account default format=description && "
             "sacctmgr --noheader --parsable2 show user nobody format=defaultaccount && "
             "sacctmgr --noheader --parsable2 show assoc cluster=lab account=default user= format=qos,defaultqos")
    high_job = "su -s /bin/sh nobody -c 'cd /tmp && srun --qos=high -N1 true'"

    def now() -> dict[str, str]:
        return dict(line.split("|", 1) for line in host.check_output(shares).splitlines())

    def settings(share: int, priority: int, maxwall: int | str, description: str, accounts: list[str]) -> list[str]:
        qos = {"qos": ["normal", "high"] if len(accounts) > 1 else ["normal"], "default_qos": "normal"}
        return ["-e", json.dumps({
            "slurm_accounting_accounts": [{"name": "default", "description": description, "fairshare": share, **qos}]
            + [{"name": name, **qos} for name in accounts if name != "default"],
            "slurm_accounting_users": [{"name": "nobody", "account": name} for name in accounts],
            "slurm_accounting_qos": [{"name": "normal"}, {"name": "high", "attributes": {"Priority": priority,
                                                                                        "MaxWall": maxwall}}]})]

    changed = settings(5, 200, "1:30:00", "Research and development", ["research", "default"])
    defaults = ["100|", "default account", "default", "normal|"]
    before = now()
    assert before[""] == "1", before
    assert host.check_output(shown).splitlines() == defaults
    dry = playbook("slurm.yml", "--check", "--diff", *changed)
    assert dry.returncode == 0, dry.stdout[-4000:] + dry.stderr[-2000:]
    for label in ("fairshare of account default (5, was 1)",
                  "attributes of qos high (MaxWall=1:30:00 Priority=200; MaxWall was unset, Priority was 100)",
                  "description of account default ('Research and development', was 'default account')",
                  "account research", "default account of user nobody (research, was default)",
                  "qos of account default (high,normal, default normal, was normal, default none)"):
        assert label in dry.stdout, dry.stdout[-4000:]
    assert now() == before and host.check_output(shown).splitlines() == defaults
    assert "Invalid qos specification" in host.run(high_job).stderr
    for share, extra, expected in ((5, changed, ["200|01:30:00", "research and development", "research", "high,normal|normal"]),
                                   (1, settings(1, 100, -1, "Default account", ["default"]),
                                    defaults[:-1] + ["normal|normal"])):
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert now() == dict(before, **{"": str(share)}), now()
        assert host.check_output(shown).splitlines() == expected
        if share == 5:
            host.run_expect([0], high_job)
            again = playbook("slurm.yml", "--check", *extra, "-e", json.dumps({"clusterdos_fast_path": False}))
            assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
            assert set(re.findall(r" changed=(\d+) ", again.stdout)) == {"0"}, again.stdout[-4000:]


def test_a_partition_dropped_with_jobs_in_it_stops_the_run(host):
    """A partition taken out of slurm_partitions while it holds jobs: the new slurm.conf drops
    it and its jobs (on a lab, before: a running job ended NODE_FAIL, a held one left the
    queue). Now slurm.yml and site.yml stop in their host checks, naming the controller,
    the partition and the job count, with nothing changed; once the job is cancelled the
    partition goes."""
    batch = {"name": "batch", "groups": ["slurm_compute"], "default": True, "config": {"MaxTime": "INFINITE"}}
    debug = {"name": "debug", "hosts": [COMPUTE[0]], "config": {"MaxTime": "30"}}
    added = playbook("slurm.yml", "-e", json.dumps({"slurm_partitions": [batch, debug]}))
    assert added.returncode == 0, added.stdout[-4000:] + added.stderr[-2000:]
    partitions = "sinfo --noheader --format=%R"
    assert sorted(host.check_output(partitions).split()) == ["batch", "debug"]
    job = host.check_output("sbatch --parsable --partition=debug --hold --wrap 'sleep 100'").strip()
    try:
        for book in ("slurm.yml", "site.yml"):
            run, flat = refused(book)
            assert (f"{CONTROLLER}: slurmctld has 1 job(s) not finished in partition(s) debug, which slurm_partitions "
                    "no longer gives") in flat, run.stdout[-4000:]
            assert "Nothing was changed." in flat
        assert sorted(host.check_output(partitions).split()) == ["batch", "debug"]
        assert job_state(host, job) == "PENDING"
    finally:
        host.run(f"scancel {job}")
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert host.check_output(partitions).split() == ["batch"]


def test_a_compute_node_dropped_with_jobs_on_it_stops_the_run(host, tmp_path):
    """A compute node taken out of the inventory while a job runs on it and a held job asks for
    it by name: the new slurm.conf drops the node (on a lab, before: slurm.yml passed, the
    running job ended NODE_FAIL with its process left running on the node, the held job left
    the queue). Now slurm.yml and site.yml stop in their host checks, naming the controller,
    the node and the job count, with nothing changed. Once the jobs are gone the node goes,
    and given again it comes back and runs jobs."""
    node = COMPUTE[-1]
    lab = yaml.safe_load(Path(lab_inventory()).read_text())
    del lab["all"]["hosts"][node]
    del lab["all"]["children"]["slurm_compute"]["hosts"][node]
    without = tmp_path / "without-node.yml"
    without.write_text(yaml.safe_dump(lab))
    running = host.check_output(f"sbatch --parsable --nodelist={node} --wrap 'sleep 300'").strip()
    held = host.check_output(f"sbatch --parsable --nodelist={node} --hold --wrap 'sleep 1'").strip()
    try:
        wait_for(lambda: job_state(host, running) == "RUNNING", f"job {running} running on {node}")
        for book in ("slurm.yml", "site.yml"):
            run, flat = refused(book, inventory=str(without))
            assert (f"{CONTROLLER}: slurmctld has 2 job(s) running on or asking for compute node(s) {node}, which the "
                    "slurm_compute group no longer holds") in flat, run.stdout[-4000:]
            assert "Nothing was changed." in flat
        assert job_state(host, running) == "RUNNING"
        assert job_state(host, held) == "PENDING"
    finally:
        host.run(f"scancel {running} {held}")
    wait_for(lambda: not host.check_output("squeue --noheader --all --format=%i"), "no job left")
    run = playbook("slurm.yml", inventory=str(without))
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert sorted(node_states(host)) == [n for n in COMPUTE if n != node]
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "every compute node idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE


def test_a_compute_node_moved_to_the_login_group_stops_its_slurmd(host, tmp_path):
    """A compute node repurposed as a login host (moved from slurm_compute to slurm_login,
    no job on it): before (on a lab), slurm.yml passed and left slurmd running and enabled
    there, for a node slurm.conf no longer had (started again at every boot). Now the run stops
    and disables it, a second run changes nothing, and moved back the node's slurmd is
    started and enabled again and the node runs jobs."""
    node = COMPUTE[-1]
    lab = yaml.safe_load(Path(lab_inventory()).read_text())
    del lab["all"]["children"]["slurm_compute"]["hosts"][node]
    lab["all"]["children"]["slurm_login"]["hosts"][node] = None
    moved = tmp_path / "moved-to-login.yml"
    moved.write_text(yaml.safe_dump(lab))
    slurmd = lab_host(node).service("slurmd")
    try:
        for attempt in ("move", "again"):
            run = playbook("slurm.yml", *(["-e", "clusterdos_fast_path=false"] if attempt == "again" else []),
                           inventory=str(moved))
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
            assert not slurmd.is_running and not slurmd.is_enabled
            assert sorted(node_states(host)) == [n for n in COMPUTE if n != node]
        assert all(r["changed"] == 0 for r in recap(run.stdout).values()), recap(run.stdout)
    finally:
        run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert slurmd.is_running and slurmd.is_enabled
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "every compute node idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE


def test_accounting_turned_off_stops_slurmdbd_and_on_again_keeps_the_history(host, tmp_path):
    """Accounting turned off the way the inventory checks say (no host in slurm_dbd), then with
    slurm_accounting_enabled: false and the group kept: before (on a lab), slurm.yml passed
    either way and left slurmdbd running and enabled on the controller, serving a database
    nothing recorded to (and started again at boot). Now the run stops and disables it, MariaDB
    and the database stay, jobs run, and a second run changes nothing; turned on again,
    slurmdbd runs and is enabled, sacct still shows the jobs recorded before, and a new job is
    recorded."""
    ctl = lab_host(CONTROLLER)
    lab = yaml.safe_load(Path(lab_inventory()).read_text())
    del lab["all"]["children"]["slurm_dbd"]
    no_dbd = tmp_path / "no-dbd-host.yml"
    no_dbd.write_text(yaml.safe_dump(lab))
    history = recorded_jobs(host)
    assert history, "the earlier tests' jobs are in sacct"
    slurmdbd, mariadb = ctl.service("slurmdbd"), ctl.service("mariadb")
    ways = {"no slurm_dbd host": ([], str(no_dbd)),
            "slurm_accounting_enabled: false": (["-e", '{"slurm_accounting_enabled": false}'], None)}
    try:
        for way, (extra, inventory) in ways.items():
            for attempt in ("off", "again"):
                run = playbook("slurm.yml", *extra, *(["-e", "clusterdos_fast_path=false"] if attempt == "again" else []),
                               inventory=inventory)
                assert run.returncode == 0, way + run.stdout[-4000:] + run.stderr[-2000:]
                assert not slurmdbd.is_running and not slurmdbd.is_enabled, way
                assert mariadb.is_running, way
                assert running_config(host, "AccountingStorageType") == "accounting_storage/none", way
            assert all(r["changed"] == 0 for r in recap(run.stdout).values()), (way, recap(run.stdout))
            assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
    finally:
        run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert slurmdbd.is_running and slurmdbd.is_enabled
    assert running_config(host, "AccountingStorageType") == "accounting_storage/slurmdbd"
    assert history <= recorded_jobs(host)
    job = host.check_output(f"sbatch --parsable --wait -N{len(COMPUTE)} --wrap 'srun hostname'").strip()
    wait_for(lambda: job in recorded_jobs(host), f"job {job} in sacct")


def test_a_changed_slurm_user_keeps_the_held_job_and_the_accounting(host):
    """slurm_config's SlurmUser changed to root and back, with a held job. Before (on a lab):
    slurmdbd.conf was given slurm.conf's SlurmUser as its owner, which slurmdbd refuses
    ("slurmdbd.conf not owned by SlurmUser root!=slurm"), so the run failed with accounting
    down; and back to slurm, slurmctld could not read the state it had written as root
    ("Could not open job state file ... Permission denied ... Jobs may be lost"): the held job
    was gone and the run passed. Now each run passes, slurmctld runs as the new user with its
    state files its own, the held job is kept, slurmdbd.conf stays its own SlurmUser's, and
    jobs run and are recorded."""
    ctl = lab_host(CONTROLLER)
    held = host.check_output("sbatch --parsable --hold --wrap 'sleep 1'").strip()
    try:
        for user in ("root", "slurm"):
            run = playbook("slurm.yml", "-e", json.dumps({"slurm_config": {**LAB_SLURM_CONFIG, "SlurmUser": user}}))
            assert run.returncode == 0, user + run.stdout[-4000:] + run.stderr[-2000:]
            assert ctl.check_output("ps -o user= -C slurmctld").strip() == user
            assert running_config(host, "SlurmUser").startswith(f"{user}(")
            assert ctl.check_output(f"find /var/lib/slurm/slurmctld ! -user {user} -print -quit") == ""
            assert ctl.check_output("stat -c %U /etc/slurm/slurmdbd.conf") == "slurm"
            assert job_state(host, held) == "PENDING", user
            before = recorded_jobs(host)
            assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
            wait_for(lambda: recorded_jobs(host) - before, f"a job recorded with SlurmUser {user}")
    finally:
        host.run(f"scancel {held}")
        run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_log_files_in_new_directories_are_written_there(host):
    """Each daemon's log file moved to a directory that does not exist yet. Before (on a lab):
    the run passed, slurmctld and slurmdbd logged "Unable to open logfile" to the journal
    alone, and slurmd went on writing to its old file after the reconfigure. Now the run makes
    each directory, owned by the user the daemon runs as, slurmd restarts on its new
    SlurmdLogFile, and each daemon writes its new file; and back.
    Each new file is rotated where it is: the run installs logrotate and writes each daemon's
    file in /etc/logrotate.d for it (Debian's, when the package ships one, names only
    /var/log/slurm; logrotate was not installed at all). A forced rotation leaves the old log
    as .1 and the daemon, signalled, writes a new file (unsignalled it would keep writing .1)."""
    ctl, node = lab_host(CONTROLLER), lab_host(COMPUTE[0])
    moved = {"slurm_config": {**LAB_SLURM_CONFIG, "SlurmctldLogFile": "/var/log/slurm-ctld/slurmctld.log",
                              "SlurmdLogFile": "/var/log/slurm-d/slurmd.log"},
             "slurm_dbd_config": {"LogFile": "/var/log/slurm-dbd/slurmdbd.log"}}
    logs = {ctl: [("/var/log/slurm-ctld/slurmctld.log", "slurm", "slurmctld"), ("/var/log/slurm-dbd/slurmdbd.log", "slurm", "slurmdbd")],
            node: [("/var/log/slurm-d/slurmd.log", "root", "slurmd")]}
    try:
        run = playbook("slurm.yml", "-e", json.dumps(moved))
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
        for lab, files in logs.items():
            for path, owner, daemon in files:
                assert lab.check_output(f"stat -c %U {path.rsplit('/', 1)[0]}") == owner, path
                assert lab.file(path).size > 0, path
                fds = f"ls -l /proc/$(pidof {daemon})/fd"
                assert path in lab.check_output(fds), (daemon, path)
                assert f"{path} {{" in lab.file(f"/etc/logrotate.d/{daemon}").content_string, (daemon, path)
                lab.run_expect([0], f"logrotate --force /etc/logrotate.d/{daemon}")
                assert lab.file(f"{path}.1").exists, path
                wait_for(lambda: f"{path}.1" not in (open_files := lab.check_output(fds)) and path in open_files,  # noqa: B023
                         f"{daemon} writing a new {path}")
        assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
        for lab, files in logs.items():
            for path, owner, daemon in files:
                if daemon != "slurmdbd":  # it logs nothing at this level for a job
                    assert lab.file(path).size > 0, path
                assert lab.check_output(f"stat -c %U {path}") == owner, path
    finally:
        run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "/var/log/slurm/slurmd.log" in node.check_output("ls -l /proc/$(pidof slurmd)/fd")


def test_switching_to_configless_and_back_leaves_nothing_stale(host):
    """The running cluster switched to configless and back, with a job running: the compute
    nodes lose their copies of slurm.conf, cgroup.conf and gres.conf (the controller and the
    login host keep theirs) and run slurmd with --conf-server and its drop-in; switched back,
    the copies return, the drop-in goes, systemd has reloaded it and slurmd runs without
    --conf-server. Each way a second run changes nothing and the job keeps running. Before, the
    copies stayed on configless nodes (stale after the next change, read by every command run
    there outside a job) and the drop-in stayed after the switch back."""
    running = host.check_output(f"sbatch --parsable --nodelist={COMPUTE[0]} --wrap 'sleep 300'").strip()
    copies = "ls /etc/slurm/slurm.conf /etc/slurm/cgroup.conf /etc/slurm/gres.conf 2>/dev/null | wc -l"
    dropin = "/etc/systemd/system/slurmd.service.d/10-clusterdos-configless.conf"
    try:
        wait_for(lambda: job_state(host, running) == "RUNNING",
                 f"job {running} running")
        for configless in (True, False):
            for attempt in ("switch", "again"):
                run = playbook("slurm.yml", "-e", f"slurm_configless={str(configless).lower()}")
                assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
                if attempt == "again":
                    assert all(r["changed"] == 0 for r in recap(run.stdout).values()), recap(run.stdout)
            for name in COMPUTE:
                node = lab_host(name)
                assert node.check_output(copies) == ("0" if configless else "3"), name
                assert node.file(dropin).exists is configless, name
                assert node.check_output("systemctl show --property=NeedDaemonReload --value slurmd") == "no"
                assert ("--conf-server" in node.check_output(SLURMD_ARGS)) is configless, name
            for name in (CONTROLLER, LOGIN):
                assert lab_host(name).check_output(copies) == "3", name
            wait_for(lambda: set(node_states(host).values()) <= {"idle", "mixed", "allocated"}, "every node up")
            assert job_state(host, running) == "RUNNING"
            assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
    finally:
        host.run(f"scancel {running}")


def test_new_daemon_ports_in_a_configless_cluster_reach_every_slurmd_and_slurmdbd(host):
    """A configless cluster given another SlurmctldPort and DbdPort, with a job running. Before
    (on a lab), slurmd was started with --conf-server naming the controller alone, so it fetched
    its files from Slurm's default port and stopped on every compute node ("failed to fetch
    remote configs"), the partition down; and slurm.conf left AccountingStoragePort to Slurm's
    default, so slurmdbd moved while slurmctld and every client went on calling the old port
    (accounting down, the run failed in its registration). Now --conf-server carries the port
    and slurm.conf takes slurmdbd's from slurmdbd.conf: the run passes, every slurmd asks the
    new port, the job keeps running, a job spans both nodes and is recorded through the new
    port; back to the lab's settings, the same."""
    running = host.check_output(f"sbatch --parsable --nodelist={COMPUTE[0]} --wrap 'sleep 300'").strip()
    moved = {"slurm_configless": True, "slurm_config": {**LAB_SLURM_CONFIG, "SlurmctldPort": 6900},
             "slurm_dbd_config": {"DbdPort": 6820}}
    try:
        wait_for(lambda: job_state(host, running) == "RUNNING", f"job {running} running")
        for ctld_port, dbd_port, extra in ((6900, 6820, ["-e", json.dumps(moved)]), (6817, 6819, [])):
            run = playbook("slurm.yml", *extra)
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
            for name in COMPUTE:
                args = lab_host(name).check_output(SLURMD_ARGS)
                assert (f"--conf-server {CONTROLLER}:{ctld_port}" in args) is bool(extra), (name, args)
            assert f"AccountingStoragePort={dbd_port}" in host.file("/etc/slurm/slurm.conf").content_string
            assert lab_host(CONTROLLER).socket(f"tcp://0.0.0.0:{dbd_port}").is_listening
            wait_for(lambda: set(node_states(host).values()) <= {"idle", "mixed", "allocated"}, "every node up")
            assert job_state(host, running) == "RUNNING"
            before = recorded_jobs(host)
            assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
            wait_for(lambda: recorded_jobs(host) - before, f"the job recorded through port {dbd_port}", tries=15)
    finally:
        host.run(f"scancel {running}")


def test_a_moved_slurmd_spool_dir_stops_while_a_job_runs_on_the_node(host):
    """SlurmdSpoolDir changed while a job runs on a compute node: slurmd restarted on the new
    directory no longer finds the job's slurmstepd, whose socket is in the old one. On a lab,
    before, the run passed, and scancel then marked the job CANCELLED while its processes went
    on running on the node, which Slurm showed idle. Now the run stops in its host checks,
    naming the node, the job and the old directory, with nothing changed (the other node not
    named); with the job ended the run moves the directory (a job step's socket is there),
    and back."""
    name = COMPUTE[0]
    node = lab_host(name)
    old = running_config(host, "SlurmdSpoolDir")
    new = "/var/spool/slurmd-moved"
    moved = ["-e", json.dumps({"slurm_config": {**LAB_SLURM_CONFIG, "SlurmdSpoolDir": new}})]
    job = host.check_output(f"sbatch --parsable --nodelist={name} --wrap 'sleep 300'").strip()
    try:
        wait_for(lambda: job_state(host, job) == "RUNNING", f"job {job} running")
        conf = node.check_output("sha256sum /etc/slurm/slurm.conf")
        pid = node.check_output("systemctl show -p MainPID --value slurmd")
        run, flat = refused("slurm.yml", *moved)
        assert (f"{name}: SlurmdSpoolDir (slurm_config) is {new}, but the steps of job {job} running here have their "
                f"sockets in {old}: slurmd restarted on the new directory would lose them") in flat, run.stdout[-4000:]
        assert f"set SlurmdSpoolDir back to {old}." in flat and f"{COMPUTE[1]}: SlurmdSpoolDir" not in flat
        assert node.check_output("sha256sum /etc/slurm/slurm.conf") == conf
        assert node.check_output("systemctl show -p MainPID --value slurmd") == pid
    finally:
        host.run(f"scancel {job}")
    wait_for(lambda: not node.run(f"pgrep -f 'slurmstepd: \\[{job}\\.'").succeeded, f"job {job}'s steps gone")
    for where, extra in ((new, moved), (old, [])):
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert re.search(rf"^{name}_\d+\.\d+$", host.check_output(f"srun --nodelist={name} ls {where}"), re.M), where


def test_a_moved_state_save_location_stops_until_the_state_is_copied(host):
    """slurm_state_save_location changed on the running cluster, with a running and a held job:
    restarted on the new, empty directory slurmctld would forget both (on a lab, before: the
    running job was cancelled, the held one vanished, the run passed). Now slurm.yml stops in
    its host checks, naming the controller, both places and the fix, with nothing changed. The
    fix as the message gives it (slurmctld stopped, the state copied) moves it with both jobs
    kept, and the same way back."""
    ctl = lab_host(CONTROLLER)
    default, moved = "/var/lib/slurm/slurmctld", "/var/lib/slurm/moved-state"
    running = host.check_output(f"sbatch --parsable --nodelist={COMPUTE[0]} --wrap 'sleep 300'").strip()
    held = host.check_output("sbatch --parsable --hold --wrap 'sleep 1'").strip()
    try:
        wait_for(lambda: job_state(host, running) == "RUNNING", f"job {running} running")
        run, flat = refused("slurm.yml", "-e", f"slurm_state_save_location={moved}")
        assert (f"{CONTROLLER}: slurm_state_save_location is {moved}, but slurmctld keeps its state in {default}: "
                f"restarted on {moved}, which holds no state, it would lose its jobs") in flat, run.stdout[-4000:]
        assert f"Stop slurmctld, copy the state over (cp -a {default}/. {moved}/" in flat
        assert running_config(host, "StateSaveLocation") == default
        for source, target, extra in ((default, moved, ["-e", f"slurm_state_save_location={moved}"]), (moved, default, [])):
            ctl.run_expect([0], f"systemctl stop slurmctld && cp -a {source}/. {target}/")
            run = playbook("slurm.yml", *extra)
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
            assert running_config(host, "StateSaveLocation") == target
            assert job_state(host, running) == "RUNNING"
            assert job_state(host, held) == "PENDING"
    finally:
        host.run(f"scancel {running} {held}")
        ctl.run(f"rm -rf {moved}")


def test_moving_slurmctld_and_slurmdbd_stops_until_their_state_and_database_are_copied(host, tmp_path):
    """The controller and slurmdbd groups naming the login host instead, with a running and a
    held job: on a lab, before, slurm.yml passed, the new slurmctld started with no state (the
    running job killed, the held one gone) and the new slurmdbd on an empty database (sacct
    showed no history), while the old daemons went on running. Now slurm.yml and site.yml stop
    in their host checks, naming the old host, the running daemons and what the new host
    lacks; with the daemons stopped they still stop until the state and the database are
    copied, and copied while only stopped (not disabled) on the old host, which no play reaches
    then (they would start again at its next boot). Copied and disabled as the messages say,
    the move keeps both jobs and the accounting history, and moving back the same way keeps
    them again; the login host, still a Slurm host, has the daemons the admin only stopped
    disabled by the run."""
    ctl, login = lab_host(CONTROLLER), lab_host(LOGIN)
    state, dump = "/var/lib/slurm/slurmctld", "/root/slurm_acct_db.sql"
    lab = yaml.safe_load(Path(lab_inventory()).read_text())
    for group in ("slurm_controller", "slurm_dbd"):
        lab["all"]["children"][group]["hosts"] = {LOGIN: {}}
    moved = tmp_path / "moved.yml"
    moved.write_text(yaml.safe_dump(lab))
    history = recorded_jobs(host)
    assert history, "the earlier tests' jobs are in sacct"
    running = host.check_output(f"sbatch --parsable --nodelist={COMPUTE[0]} --wrap 'sleep 600'").strip()
    held = host.check_output("sbatch --parsable --hold --wrap 'sleep 1'").strip()

    def copy(source, target):
        """The fix as the refusal gives it: slurmctld's state and the accounting database, from
        SOURCE (its daemons stopped) to TARGET."""
        out = source.check_output(f"tar -C {state} -czf - . | base64 -w0")
        target.run_expect([0], f"install -d -o slurm -g slurm -m 0750 {state} && echo {out} | base64 -d | tar -C {state} -xzpf -")
        source.run_expect([0], f"mysqldump --single-transaction --databases slurm_acct_db > {dump}")
        target.run_expect([0], "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mariadb-server"
                               " && systemctl enable --now mariadb")
        sql = source.check_output(f"gzip -c {dump} | base64 -w0")
        target.run_expect([0], f"echo {sql} | base64 -d | gunzip | mysql")

    try:
        wait_for(lambda: job_state(host, running) == "RUNNING", f"job {running} running")
        for book in ("slurm.yml", "site.yml"):
            run, flat = refused(book, inventory=str(moved))
            assert (f"{CONTROLLER} runs slurmctld, but slurm_controller no longer holds it ({LOGIN}): left running, it "
                    "would go on as a second controller with the old configuration, and its state (jobs, node states, "
                    f"reservations in {state}) is not on {LOGIN}") in flat, run.stdout[-4000:]
            assert (f"{CONTROLLER} runs slurmdbd, but slurm_dbd no longer holds it ({LOGIN}): left running, it would go "
                    f"on serving the old accounting database, and its accounting database slurm_acct_db") in flat
            assert "Nothing was changed." in flat
        ctl.run_expect([0], "systemctl stop slurmctld slurmdbd")
        run, flat = refused("slurm.yml", inventory=str(moved))
        assert f"slurmctld's state is on {CONTROLLER}, which slurm_controller no longer holds" in flat, run.stdout[-4000:]
        assert f"The accounting database slurm_acct_db is on {CONTROLLER}, which slurm_dbd no longer holds" in flat
        copy(ctl, login)
        # Copied, but only stopped on the old host, which is in no Slurm group now: no play
        # reaches it, and both daemons would start again at its next boot.
        run, flat = refused("slurm.yml", inventory=str(moved))
        for daemon, group in (("slurmctld", "slurm_controller"), ("slurmdbd", "slurm_dbd")):
            assert (f"{daemon} is stopped but enabled on {CONTROLLER}, which {group} no longer holds and which is in no "
                    f"Slurm group") in flat, run.stdout[-4000:]
        assert "state is on" not in flat and "database slurm_acct_db is on" not in flat
        ctl.run_expect([0], "systemctl disable slurmctld slurmdbd")
        run = playbook("slurm.yml", inventory=str(moved))
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert login.service("slurmctld").is_running and login.service("slurmdbd").is_running
        assert job_state(host, running) == "RUNNING" and job_state(host, held) == "PENDING"
        assert history <= recorded_jobs(host)
        # And back, the same way, the daemons only stopped on the login host: still a Slurm host
        # (slurm_login), it is in the plays, and the run disables them there.
        login.run_expect([0], "systemctl stop slurmctld slurmdbd")
        copy(login, ctl)
        run = playbook("slurm.yml")
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert ctl.service("slurmctld").is_running and ctl.service("slurmdbd").is_running
        assert not login.service("slurmctld").is_enabled and not login.service("slurmdbd").is_enabled
        assert not login.service("slurmctld").is_running and not login.service("slurmdbd").is_running
        assert job_state(host, running) == "RUNNING" and job_state(host, held) == "PENDING"
        assert history <= recorded_jobs(host)
    finally:
        login.run("systemctl disable --now slurmctld slurmdbd mariadb")
        ctl.run("systemctl enable --now slurmdbd slurmctld")
        host.run(f"scancel {running} {held}")


def test_a_backup_controller_without_shared_state_stops_the_run(host, tmp_path):
    """The login host added as a backup controller while slurm_state_save_location is on each
    host's own disk (the lab hosts have no shared file system): a backup taking over would
    start with none of the primary's jobs. slurm.yml and site.yml stop in their host checks,
    naming the file system each controller has there, with nothing changed. (That a shared
    location passes is unit-tested: the lab cannot mount one.)"""
    lab = yaml.safe_load(Path(lab_inventory()).read_text())
    lab["all"]["children"]["slurm_controller"]["hosts"] = {CONTROLLER: {}, LOGIN: {}}
    backup = tmp_path / "backup.yml"
    backup.write_text(yaml.safe_dump(lab))
    for book in ("slurm.yml", "site.yml"):
        run, flat = refused(book, inventory=str(backup))
        assert (f"{CONTROLLER}: slurm_controller has a backup controller ({LOGIN}), but slurm_state_save_location "
                f"/var/lib/slurm/slurmctld is on a local file system on {CONTROLLER} (") in flat, run.stdout[-4000:]
        assert "a backup taking over would start with none of the primary's jobs" in flat
    assert not lab_host(LOGIN).service("slurmctld").is_running
    assert f"SlurmctldHost={LOGIN}" not in lab_host(COMPUTE[0]).file("/etc/slurm/slurm.conf").content_string


def test_a_renamed_accounting_database_stops_until_it_is_copied(host):
    """slurm_db_name changed on the running cluster: on a lab, before, slurm.yml passed and
    slurmdbd restarted on a new, empty database (sacct went from 10 jobs to none). Now the run
    stops in the host checks, naming both databases and the fix; copied as the message says,
    the rename keeps every recorded job, and the old name back works as before."""
    ctl = lab_host(CONTROLLER)
    history = recorded_jobs(host)
    assert history, "the earlier tests' jobs are in sacct"
    run, flat = refused("slurm.yml", "-e", "slurm_db_name=renamed_acct_db")
    assert (f"{CONTROLLER}: slurm_db_name is renamed_acct_db, but slurmdbd on {CONTROLLER} keeps the accounting in "
            "database slurm_acct_db: restarted on renamed_acct_db, which does not exist there") in flat, run.stdout[-4000:]
    try:
        ctl.run_expect([0], "mysql -e 'CREATE DATABASE renamed_acct_db' && mysqldump --single-transaction slurm_acct_db"
                            " | mysql renamed_acct_db")
        for extra in (["-e", "slurm_db_name=renamed_acct_db"], []):
            run = playbook("slurm.yml", *extra)
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
            wait_for(lambda: history <= recorded_jobs(host), "every recorded job in sacct")
        assert "StorageLoc=slurm_acct_db" in ctl.file("/etc/slurm/slurmdbd.conf").content_string
    finally:
        ctl.run("mysql -e 'DROP DATABASE IF EXISTS renamed_acct_db'")


def test_a_changed_database_user_takes_the_database_from_the_old_one(host):
    """slurm_db_user changed on the running cluster: the new MariaDB user gets the accounting
    database, slurmdbd uses it (a job is recorded) and the user slurmdbd.conf named before
    loses its grant on the database (before, it kept ALL on it after the run, with its
    password); a second run changes nothing. Changed back the same way."""
    ctl = lab_host(CONTROLLER)
    # The users holding a grant on the accounting database (MariaDB's mysql.db, one row a user).
    holders = "mysql --batch --skip-column-names -e \"SELECT User FROM mysql.db WHERE Db = 'slurm_acct_db'\""
    assert ctl.check_output(holders).split() == ["slurm"]
    for user, extra in (("slurm_acct", ["-e", "slurm_db_user=slurm_acct"]), ("slurm", [])):
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert ctl.check_output(holders).split() == [user]
        assert f"StorageUser={user}" in ctl.file("/etc/slurm/slurmdbd.conf").content_string.splitlines()
        before = recorded_jobs(host)
        host.check_output("srun --nodes=1 true")
        wait_for(lambda: recorded_jobs(host) - before, f"a job recorded through {user}", tries=15)
        if extra:
            again = playbook("slurm.yml", *extra)
            assert again.returncode == 0, again.stdout[-4000:]
            assert sum(s["changed"] for s in recap(again.stdout).values()) == 0, recap(again.stdout)
    # The user made for the change is left (it may serve other databases), without the grant.
    assert ctl.check_output("mysql --batch --skip-column-names -e "
                            "\"SELECT COUNT(*) FROM mysql.user WHERE User = 'slurm_acct'\"") == "1"


def test_a_power_cut_brings_the_cluster_back_by_itself_with_its_history(host):
    """Every host restarted at once (`podman restart`: systemd stops each container and boots
    it again), as after a power cut. Nothing the role set up may depend on a converge to come
    back: munge, MariaDB, slurmdbd (after MariaDB: its unit orders itself after it),
    slurmctld and slurmd start enabled, the compute nodes return idle (ReturnToService=2), a
    job runs on both and is recorded beside the jobs from before, and the next slurm.yml
    takes the fast path with nothing changed. Held on a lab in session 38 (no change needed):
    a guard against, say, a directory made under /run (emptied at boot) or a unit left
    disabled."""
    before = recorded_jobs(host)
    assert before
    containers = [f"cdl-{LAB}-{name}" for name in GROUPS]
    subprocess.run(["podman", "restart", "-t", "10", *containers], check=True, capture_output=True)
    for name in GROUPS:
        wait_for(lambda name=name: booted(name), f"{name} booted")
    ctl = lab_host(CONTROLLER)
    assert ctl.check_output("systemctl is-active munge mariadb slurmdbd slurmctld").split() == ["active"] * 4
    for node in COMPUTE:
        assert lab_host(node).check_output("systemctl is-active munge slurmd").split() == ["active"] * 2
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
    wait_for(lambda: (now := recorded_jobs(host)) >= before and len(now - before) == 1, "the new job recorded")
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert {name: row["changed"] for name, row in recap(run.stdout).items()} == dict.fromkeys(
        recap(run.stdout), 0), run.stdout[-4000:]


def test_a_daemon_that_stops_at_once_fails_the_run_at_once_with_its_own_error(host):
    """A slurmdbd.conf value slurmdbd refuses (the key is right, so the host checks pass):
    before, the run waited 60 s for slurmdbd's port and said only "Timeout when waiting for
    127.0.0.1:6819". Now the wait sees the unit failed and stops at once, quoting slurmdbd's own
    log ("Invalid DebugLevel"); slurmctld goes on, and a run with the value fixed brings
    slurmdbd back with the accounting as it was."""
    ctl = lab_host(CONTROLLER)
    run = playbook("slurm.yml", "-e", json.dumps({"slurm_dbd_config": {"DebugLevel": "verbosee"}}))
    assert run.returncode != 0, run.stdout[-4000:]
    assert "slurmdbd failed to start; its last log lines:" in run.stdout, run.stdout[-4000:]
    assert "fatal: Invalid DebugLevel verbosee" in run.stdout
    assert "Timeout when waiting" not in run.stdout
    assert ctl.service("slurmctld").is_running
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert ctl.service("slurmdbd").is_running
    assert host.check_output(SACCT_JOBS)


def test_a_port_another_program_holds_or_a_user_only_the_controller_has_stops_the_run(host):
    """Two values that hold on the controller and not on a compute node. SlurmdPort moved to a
    port a web server holds on one node: before (on a lab), the run passed, slurmd stopped there
    ("Unable to bind listen port") and sinfo went on showing the node idle. SlurmdUser naming a
    user only the controller has (mysql, MariaDB's): slurm.conf parsed there, the run wrote it
    everywhere, slurmd stopped on both compute nodes and the run passed them. Now slurm.yml and
    site.yml stop in their host checks (each Slurm host looks for another program on its
    daemons' ports, and parses the slurm.conf the run would write), naming the host, the
    program or Slurm's own error, with nothing changed."""
    node = lab_host(COMPUTE[0])
    conf = node.check_output("sha256sum /etc/slurm/slurm.conf")
    node.check_output("systemd-run --unit clusterdos-test-squat python3 -m http.server 7000")
    try:
        wait_for(lambda: node.socket("tcp://0.0.0.0:7000").is_listening, "the web server on port 7000")
        for book in ("slurm.yml", "site.yml"):
            run, flat = refused(book, "-e", json.dumps({"slurm_config": {**LAB_SLURM_CONFIG, "SlurmdPort": 7000}}))
            assert (f"On {COMPUTE[0]}, SlurmdPort 7000 is taken by another program, python3 (pid ") in flat, run.stdout[-4000:]
            assert "slurmd could not listen on it and would stop at its next start." in flat
            assert "Nothing was changed." in flat
    finally:
        node.run("systemctl stop clusterdos-test-squat")
    run, flat = refused("slurm.yml", "-e", json.dumps({"slurm_config": {**LAB_SLURM_CONFIG, "SlurmdUser": "mysql"}}))
    # The compute nodes (the login host has MariaDB, so a mysql user, once an earlier test moved
    # slurmdbd there).
    for name in COMPUTE:
        assert (f"{name}: Slurm cannot read the files this run would write (slurm.conf: error: Invalid user for "
                "SlurmdUser mysql") in flat, run.stdout[-4000:]
    assert f"{CONTROLLER}: Slurm cannot read" not in flat
    assert node.check_output("sha256sum /etc/slurm/slurm.conf") == conf
    assert node_states(host) == {n: "idle" for n in COMPUTE}
    assert all(lab_host(n).service("slurmd").is_running for n in COMPUTE)


def test_a_slurmd_that_stops_at_once_fails_its_node_at_once_with_its_own_error(host):
    """A slurmd that stops right after systemd started it, past the host checks. Stand-in for
    the cause: a unit drop-in starts another program on SlurmdPort just before slurmd (a port
    taken between the checks and the start; the checks refuse a port taken before). Before,
    the run waited for slurmctld to list the node up, which it still did from the node's last
    state, and passed with slurmd failed. Now the node's own wait sees the unit failed and
    fails that node at once, quoting slurmd's log ("Unable to bind listen port"); the other
    node goes on, and a run once the port is free brings slurmd back."""
    name = COMPUTE[0]
    node = lab_host(name)
    dropin = "/etc/systemd/system/slurmd.service.d/99-clusterdos-test-squat.conf"
    node.check_output(f"mkdir -p {dropin.rsplit('/', 1)[0]} && printf '%s\\n' '[Service]' "
                      "'ExecStartPre=/usr/bin/systemd-run --unit clusterdos-test-squat python3 -m http.server 6818' "
                      f"'ExecStartPre=/bin/sleep 1' > {dropin} && systemctl daemon-reload && systemctl stop slurmd")
    try:
        run = playbook("slurm.yml")
        assert run.returncode != 0, run.stdout[-4000:]
        assert recap(run.stdout)[name]["failed"] == 1 and all(recap(run.stdout)[n]["failed"] == 0 for n in COMPUTE[1:])
        out = task_output(run.stdout.replace("RUNNING HANDLER [", "TASK ["),
                          "clusterdos.cluster.slurm : Wait for slurmd after its start or restart")
        assert "slurmd failed to start; its last log lines:" in out, out
        assert "error: Unable to bind listen port (6818): Address already in use" in out
    finally:
        node.run(f"systemctl stop clusterdos-test-squat; rm -f {dropin}; systemctl daemon-reload")
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert node.service("slurmd").is_running
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")


def test_a_mariadb_option_the_server_refuses_stops_the_run_and_a_boolean_is_read_as_set(host):
    """slurm_mariadb_config is the slurmdbd host's MariaDB drop-in. A misspelt option: before (on
    a lab), the run wrote the drop-in, MariaDB failed to restart on it and stayed down, and
    accounting with it. Now slurm.yml stops in its host checks, where the installed server
    reads the options first, quoting MariaDB; the drop-in unchanged and MariaDB running. A
    boolean given as YAML true was written YES, which MariaDB does not read as one (it set the
    option OFF with a warning, and the run passed): now it is written ON, the running server
    has it on, and slurmdbd still answers."""
    ctl = lab_host(CONTROLLER)
    dropin = "/etc/mysql/mariadb.conf.d/90-clusterdos-slurmdbd.cnf"
    lab = yaml.safe_load((SCENARIO / "inventory" / "group_vars" / "all.yml").read_text())["slurm_mariadb_config"]
    before = ctl.check_output(f"sha256sum {dropin}")
    run, flat = refused("slurm.yml", "-e", json.dumps({"slurm_mariadb_config": {**lab, "innodb_flush_log_at_trx_comit": 2}}))
    assert (f"{CONTROLLER}: MariaDB cannot read the files this run would write (MariaDB: mariadbd: unknown variable "
            "'innodb_flush_log_at_trx_comit=2')") in flat, run.stdout[-4000:]
    assert "Nothing was changed." in flat
    assert ctl.check_output(f"sha256sum {dropin}") == before
    assert ctl.service("mariadb").is_running
    try:
        run = playbook("slurm.yml", "-e", json.dumps({"slurm_mariadb_config": {**lab, "skip_name_resolve": True}}))
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert "skip_name_resolve=ON" in ctl.file(dropin).content_string
        assert ctl.check_output("mysql --skip-column-names --execute 'SELECT @@skip_name_resolve'") == "1"
        assert host.check_output(SACCT_JOBS)
    finally:
        run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert ctl.check_output(f"sha256sum {dropin}") == before
    assert ctl.check_output("mysql --skip-column-names --execute 'SELECT @@skip_name_resolve'") == "0"


def test_a_node_line_asking_more_than_the_host_has_stops_the_run(host):
    """slurm_node_config asking for more memory than the compute nodes have: slurmd registers
    what it finds and slurmctld marks the node INVAL (on a lab, before: the run wrote slurm.conf,
    waited 80 s for the nodes and failed, both INVAL, then drained). Now slurm.yml and
    site.yml stop in their host checks, naming each node, the value and the fix, with nothing
    changed and both nodes idle."""
    extra = ["-e", json.dumps({"slurm_node_config": {"RealMemory": 999999}})]
    for book in ("slurm.yml", "site.yml"):
        run, flat = refused(book, *extra)
        for node in COMPUTE:
            assert f"{node}: slurm_node_config sets RealMemory=999999, but the host has " in flat, run.stdout[-4000:]
        assert "slurmctld would mark the node INVAL (Low RealMemory)" in flat and "Nothing was changed." in flat
    assert "999999" not in lab_host(CONTROLLER).file("/etc/slurm/slurm.conf").content_string
    assert node_states(host) == {n: "idle" for n in COMPUTE}


def test_a_misspelt_slurm_conf_key_stops_the_run(host):
    """A key slurm.conf does not have, in a partition's config and in slurm_node_config: before
    (on a lab, with one in slurm_config), the run wrote slurm.conf on the controller and failed
    in its next Slurm command, after which every Slurm command there stopped with "Unable to
    process configuration file" and slurmctld would not have started again. Now slurm.yml and
    site.yml stop in their host checks, where the installed Slurm parses the file the run
    would write, naming the controller and Slurm's own error, with nothing changed. A misspelt
    plugin name parses (scontrol loads no plugin): on a lab, before, SchedulerType=sched/backfil
    was written, slurmctld failed to start and the cluster was down; now it is looked for in
    the plugin directory and refused the same way."""
    ctl = lab_host(CONTROLLER)
    conf = ctl.check_output("sha256sum /etc/slurm/slurm.conf")
    partition = {"name": "batch", "groups": ["slurm_compute"], "default": True,
                 "config": {"MaxTime": "INFINITE", "MaxNodez": 2}}
    for book, extra, key in (("slurm.yml", {"slurm_partitions": [partition]}, "MaxNodez"),
                             ("site.yml", {"slurm_node_config": {"Weigth": 5}}, "Weigth")):
        run, flat = refused(book, "-e", json.dumps(extra))
        assert f"{CONTROLLER}: Slurm cannot read the files this run would write (slurm.conf: " in flat, run.stdout[-4000:]
        assert f"Parsing error at unrecognized key: {key};" in flat and "Nothing was changed." in flat
    run, flat = refused("slurm.yml", "-e", json.dumps({"slurm_config": {**LAB_SLURM_CONFIG, "SchedulerType": "sched/backfil"}}))
    assert (f"{CONTROLLER}: Slurm cannot read the files this run would write (slurm.conf: SchedulerType=sched/backfil "
            "names a plugin the installed Slurm does not have (no sched_backfil.so in ") in flat, run.stdout[-4000:]
    # cgroup.conf and slurmdbd.conf have no parse-only command: before, a misspelt key made the
    # reconfigure fail and slurmctld stop, or left slurmdbd failed. Their keys are looked for
    # among the installed parser's own.
    run, flat = refused("site.yml", "-e", json.dumps({"slurm_cgroup_config": {"ConstrainRAMSpac": True},
                                                      "slurm_dbd_config": {"PurgeJobAfterr": "12month"}}))
    assert (f"{CONTROLLER}: Slurm cannot read the files this run would write (slurmdbd.conf: unknown key PurgeJobAfterr "
            "(not a key the installed Slurm has); cgroup.conf: unknown key ConstrainRAMSpac") in flat, run.stdout[-4000:]
    assert "slurm_cgroup_config or slurm_dbd_config is misspelt" in flat
    assert ctl.check_output("sha256sum /etc/slurm/slurm.conf") == conf
    assert ctl.service("slurmctld").is_running
    assert node_states(host) == {n: "idle" for n in COMPUTE}


def test_a_drained_node_stays_drained_and_the_converge_passes(host):
    """A compute node an administrator drained (maintenance): a converge of the Slurm stage
    (forced: clusterdos_fast_path=false) counts it up, since its slurmd answers, and leaves it
    drained with its reason. Before, the wait for the node to be up accepted only idle, mixed,
    allocated and completing: every converge failed the drained node after a minute."""
    node = COMPUTE[0]
    host.run_expect([0], f"scontrol update nodename={node} state=drain reason='disk swap'")
    try:
        run = playbook("slurm.yml", "-e", "clusterdos_fast_path=false")
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert all(r["failed"] == 0 for r in recap(run.stdout).values()), recap(run.stdout)
        wait = task_output(run.stdout, "clusterdos.cluster.slurm : Wait until the controller sees this node up")
        assert f"ok: [{node} -> {CONTROLLER}" in wait and "FAILED - RETRYING" not in wait, wait
        assert host.check_output(f"sinfo --noheader --Node --nodes {node} --format '%T|%E'") == "drained|disk swap"
    finally:
        host.run_expect([0], f"scontrol update nodename={node} state=resume")
    wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")
    assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE


def test_a_run_limited_to_one_node_writes_the_clusters_slurm_conf(host, tmp_path):
    """`slurm.yml --limit <node>,localhost`, the usual repair of one node (its slurmd stopped
    here): the node gets the same slurm.conf as the controller, the other compute node's line
    taken from the hardware the primary controller saved (read there although the limit leaves
    it out), and slurmd runs again. Before, the other node got a guessed line (one CPU, no
    memory) in this node's copy. A compute node outside the limit that has no saved record
    (one the inventory gained) stops the run with nothing changed."""
    node = COMPUTE[-1]
    ctl = lab_host(CONTROLLER)
    compute = lab_host(node)
    conf = ctl.check_output("sha256sum /etc/slurm/slurm.conf").split()[0]
    compute.run_expect([0], "systemctl stop slurmd")
    run = playbook("slurm.yml", "--limit", f"{node},localhost")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert compute.check_output("sha256sum /etc/slurm/slurm.conf").split()[0] == conf
    assert compute.service("slurmd").is_running
    wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")

    extra = tmp_path / "more.yml"
    extra.write_text(yaml.safe_dump({"slurm_compute": {"hosts": {"slurm-c9": {
        "ansible_host": "10.213.225.99", "clusterdos_node_ip": "10.213.225.99"}}}}))
    run, flat = refused("slurm.yml", "-i", str(extra), "--limit", f"{node},localhost")
    assert ("slurm.conf lists every compute node, and this run (--limit) leaves out slurm-c9, whose hardware it does not "
            f"probe and the primary controller {CONTROLLER} has no record of") in flat, run.stdout[-4000:]
    assert compute.check_output("sha256sum /etc/slurm/slurm.conf").split()[0] == conf


def test_a_later_sysctl_file_that_overrides_the_roles_stops_base(host):
    """A site file that systemd applies after the base role's drop-in sets one of its keys to
    another value (here net.ipv4.ip_forward = 0 in 99-site.conf, applied as a boot would):
    base.yml notices the drifted running value, converges, and stops on that host before
    setting it, naming the file, the key and both values. Before, it set the running value
    back and the next boot undid it, every time. With the file gone, base sets it again."""
    node = COMPUTE[0]
    compute = lab_host(node)
    site = "/etc/sysctl.d/99-site.conf"
    compute.run_expect([0], f"echo 'net.ipv4.ip_forward = 0' > {site} && sysctl -q -p {site}")
    try:
        run = playbook("base.yml")
        assert run.returncode != 0, run.stdout[-4000:]
        flat = " ".join(run.stdout.split())
        assert (f"{node}: {site} sets net.ipv4.ip_forward = 0, and systemd applies it after /etc/sysctl.d/90-clusterdos.conf "
                "(net.ipv4.ip_forward = 1): the host would boot with 0.") in flat, run.stdout[-4000:]
        assert recap(run.stdout)[node]["failed"] == 1 and compute.sysctl("net.ipv4.ip_forward") == 0
    finally:
        compute.run_expect([0], f"rm -f {site}")
    again = playbook("base.yml")
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert compute.sysctl("net.ipv4.ip_forward") == 1


def test_a_new_cluster_name_stops_before_any_change_and_a_rename_gets_the_accounts(host):
    """slurm_cluster_name changed on a running cluster: slurmctld's state holds the old name
    and slurmctld would refuse to start under the new one (CLUSTER NAME MISMATCH). Before, the
    run rewrote slurm.conf, registered the new name, restarted slurmctld into that refusal and
    failed after a 60 s wait on its port, the cluster down. Now slurm.yml and site.yml both
    stop in their host checks, naming the controller, both names and the fix, and nothing on
    any host changes. Then the documented rename (slurmctld stopped, its clustername file
    removed): the new cluster gets the scenario's account and user associations, although
    slurmdbd already knows both from the old cluster (before, they were skipped by name and
    the renamed cluster had only root's). Renamed back the same way at the end."""
    ctl = lab_host(CONTROLLER)
    state = "/var/lib/slurm/slurmctld"
    conf = ctl.check_output("sha256sum /etc/slurm/slurm.conf")
    pid = ctl.check_output("systemctl show -p MainPID --value slurmctld")
    renamed = ["-e", "slurm_cluster_name=renamed"]
    for book in ("slurm.yml", "site.yml"):
        run, flat = refused(book, *renamed)
        assert (f"{CONTROLLER}: slurm_cluster_name is 'renamed', but slurmctld's state in {state} belongs to cluster 'lab'"
                in flat), run.stdout[-4000:]
        assert f"Set slurm_cluster_name back to 'lab'; or, to rename the cluster" in flat and "Nothing was changed." in flat
        assert "TASK [clusterdos.cluster.base :" not in run.stdout and "TASK [clusterdos.cluster.munge :" not in run.stdout
    assert ctl.check_output("sha256sum /etc/slurm/slurm.conf") == conf
    assert ctl.check_output("systemctl show -p MainPID --value slurmctld") == pid
    clusters = "sacctmgr --noheader --parsable2 show cluster format=cluster"
    assert host.check_output(clusters).split() == ["lab"]

    for name, extra in (("renamed", renamed), ("lab", [])):
        ctl.run_expect([0], f"systemctl stop slurmctld && rm {state}/clustername")
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert ctl.check_output(f"cat {state}/clustername") == name
        assocs = host.check_output(f"sacctmgr --noheader --parsable2 show assoc cluster={name} format=account,user").split()
        assert {"default|", "default|nobody"} <= set(assocs), assocs
        wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")
        assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname").split()) == COMPUTE
    assert set(host.check_output(clusters).split()) == {"lab", "renamed"}


def test_a_compute_node_whose_hostname_is_not_its_inventory_name_stops_the_run(host):
    """Slurm knows each daemon host by its inventory name (NodeName here), and slurmd looks
    for its NodeName under the host's own name. A compute node renamed (`hostname`) since
    the last converge: before, the run restarted nothing, reported success, and slurmd, once
    restarted, stopped with "Unable to determine this slurmd's NodeName" (jobs then failed
    until slurmctld marked the node down). Now slurm.yml and site.yml both stop before any
    change, naming host, inventory name, the host's own name and the fix; slurmd keeps
    running. A hostname whose short form is the inventory name (an FQDN) passes, and slurmd
    restarted under it runs jobs."""
    node = COMPUTE[0]
    compute = lab_host(node)
    pid = compute.check_output("systemctl show -p MainPID --value slurmd")
    compute.run_expect([0], "hostname renamed-node")
    try:
        for book in ("slurm.yml", "site.yml"):
            run, flat = refused(book)
            assert (f"{node}: Slurm knows this host by its inventory name '{node}' (NodeName), but the host calls itself "
                    "'renamed-node': slurmd would not start there. Nothing was changed.") in flat, run.stdout[-4000:]
            assert f"or set its hostname to '{node}'" in flat
            assert "TASK [clusterdos.cluster.munge :" not in run.stdout
        assert compute.check_output("systemctl show -p MainPID --value slurmd") == pid
    finally:
        compute.run_expect([0], f"hostname {node}")

    compute.run_expect([0], f"hostname {node}.lab.example && systemctl restart slurmd")
    try:
        run = playbook("slurm.yml")
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")
        assert sorted(host.check_output(f"srun -N{len(COMPUTE)} hostname -s").split()) == COMPUTE
    finally:
        compute.run_expect([0], f"hostname {node} && systemctl restart slurmd")
    # Recorded again under the node's own name (the record holds the hostname): the next
    # tests start from a converge the fast path matches.
    run = playbook("slurm.yml")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    wait_for(lambda: set(node_states(host).values()) == {"idle"}, "every compute node idle")


def test_site_yml_compares_base_and_slurm_once_and_slurm_again_after_base_converged(host, tmp_path):
    """site.yml (every stage, validation included) on the converged lab: its host preflight
    compares base's and Slurm's records on the controller, from what the run's first read of
    each host probed (no round trip of its own: the hosts' compare task is skipped), and skips
    both.
    Then a base-managed file edited by hand on one compute node: base
    converges (naming the file) and puts it back; Slurm's "skip" from the preflight does not
    stand while base converges first, so the Slurm stage compares again in its own play,
    after base, and is skipped there (playbooks/tasks/stage_compare.yml, `after: [base]`).
    Base's input checks run once per host, in the host preflight, not again in its play."""
    report = ["-e", json.dumps({"validate_report_dir": str(tmp_path / "report")})]
    compare = COMPARE
    # The lab was converged by converge.yml (base.yml + slurm.yml): site.yml's first run may
    # converge the stages that one does not run (shared storage, validation's report), but
    # base and Slurm are as their records say.
    fast = playbook("site.yml", *report)
    assert fast.returncode == 0, fast.stdout[-4000:] + fast.stderr[-2000:]
    assert "Stage base skipped: every host (4)" in fast.stdout and "Stage slurm skipped: every host (4)" in fast.stdout, \
        fast.stdout[-4000:]
    assert fast.stdout.count(compare) == 1, fast.stdout[-6000:]
    on_hosts = task_output(fast.stdout, compare[len("TASK ["):-1])
    assert "skipping: [" in on_hosts and "ok: [" not in on_hosts, on_hosts
    read = task_output(fast.stdout, "clusterdos.cluster.hardware_facts : Read the host's facts, GPUs, RDMA devices and converge "
                                    "records, check the declared GPUs")
    assert all(f"ok: [{n}]" in read for n in GROUPS), read
    assert "TASK [clusterdos.cluster.base :" not in fast.stdout and "TASK [clusterdos.cluster.munge :" not in fast.stdout
    assert "Enable and start slurmd" not in fast.stdout

    node = COMPUTE[0]
    sysctl_file = "/etc/sysctl.d/90-clusterdos.conf"
    compute = lab_host(node)
    before = compute.check_output(f"sha256sum {sysctl_file}")
    compute.run_expect([0], f"echo '# edited by hand' >> {sysctl_file}")
    # What base puts back on a host this test does not edit (named below when it changes).
    hosts_before = lab_host(CONTROLLER).file("/etc/hosts").content_string
    repair = playbook("site.yml", *report)
    assert repair.returncode == 0, repair.stdout[-4000:] + repair.stderr[-2000:]
    flat = " ".join(repair.stdout.split())
    assert f"Stage base converges: {node}: {sysctl_file} changed since the last converge" in flat, repair.stdout[-6000:]
    assert "Stage slurm undecided: every host is as its last converge left it, but base converges first" in flat, \
        repair.stdout[-6000:]
    # Compared again in the Slurm stage's own play, after base, on the hosts themselves (what
    # the first read probed predates base's converge): still as it was left.
    assert repair.stdout.count(compare) == 2 and "Stage slurm skipped: every host (4)" in repair.stdout, \
        repair.stdout[-6000:]
    again = repair.stdout.split(compare)[2].split("\nTASK [")[0]
    assert all(f"ok: [{n}]" in again for n in GROUPS), again
    assert "Enable and start slurmd" not in repair.stdout and "TASK [clusterdos.cluster.munge :" not in repair.stdout
    # Base converges on every host (a stage converges whole), and changes only what drifted:
    # the edited node's drop-in. (Until base sorted its /etc/hosts block, the other hosts'
    # block was rewritten too: molecule's inventory lists the hosts in another order than the
    # lab's, which the fast path's digest rightly ignores.)
    changed = [(section.split("]", 1)[0], host)
               for section in re.split(r"\n(?:TASK|RUNNING HANDLER) \[", repair.stdout)[1:]
               for host in re.findall(r"^changed: \[([^\]]+)\]", section, re.M)]
    drop_in = "clusterdos.cluster.base : Write the apt proxy, kernel modules, sysctls, chrony's files and /etc/hosts (one call)"
    assert (drop_in, node) in changed, changed
    assert all(t.startswith("clusterdos.cluster.base :") for t, h in changed if h != "localhost"), changed
    others = [(t, h) for t, h in changed if h not in (node, "localhost")]
    assert not others, (others, hosts_before, lab_host(CONTROLLER).file("/etc/hosts").content_string)
    assert compute.check_output(f"sha256sum {sysctl_file}") == before
    # Base's input checks ran once per host: in the host preflight, not again in base's play.
    checks = task_outputs(repair.stdout, "clusterdos.cluster.base : Check the OS prerequisites' inputs")
    assert len(checks) == 2, repair.stdout[-6000:]
    assert all(f"ok: [{n}]" in checks[0] for n in GROUPS), checks[0]
    assert "ok: [" not in checks[1] and all(f"skipping: [{n}]" in checks[1] for n in GROUPS), checks[1]


def test_a_stopped_compute_host_leaves_the_rest_of_the_partition_up(host):
    """slurm.yml with one compute host stopped (podman stop): the host is left out, the other
    compute node still gets its slurmd (stopped beforehand, so the run must start it) and the
    partition keeps it up; slurm.conf, slurmctld, the munge key and accounting stay as they
    were. Started again, a re-run completes it and changes nothing else."""
    down, survivor = COMPUTE[1], COMPUTE[0]
    ctl = lab_host(CONTROLLER)
    conf = ctl.check_output("sha256sum /etc/slurm/slurm.conf")
    ctld_pid = ctl.check_output("systemctl show --property MainPID --value slurmctld")
    keys = {n: lab_host(n).check_output("sha256sum /etc/munge/munge.key") for n in GROUPS}
    jobs = host.check_output(SACCT_JOBS)
    lab_host(survivor).run_expect([0], "systemctl stop slurmd")
    container = f"cdl-{LAB}-{down}"
    subprocess.run(["podman", "stop", "-t", "5", container], check=True, capture_output=True)
    try:
        run = playbook("slurm.yml")
        stats = recap(run.stdout)
        # The stopped host fails the run (rc 2) and is the only host that failed.
        assert run.returncode == 2, run.stdout[-4000:] + run.stderr[-2000:]
        assert stats[down]["failed"] == 1, stats
        assert all(stats[n]["failed"] == 0 and stats[n]["unreachable"] == 0 for n in GROUPS if n != down), stats
        assert f"{down} did not answer" in run.stdout and f"Left out of the rest of this run: {down}" in run.stdout
        # Every play ran to its end for the others: slurmd and the login hosts' check.
        started = task_outputs(run.stdout, "clusterdos.cluster.slurm : Enable and start slurmd")
        assert len(started) == 1 and f"changed: [{survivor}]" in started[0], run.stdout[-4000:]
        assert lab_host(survivor).service("slurmd").is_running
        states = wait_for(lambda: (s := node_states(host)).get(survivor) == "idle" and s, f"{survivor} idle")
        assert sorted(states) == COMPUTE
        assert host.check_output(f"srun --partition=batch --nodelist={survivor} hostname") == survivor
        # Nothing the cluster holds changed: its configuration (the stopped node's record
        # kept), slurmctld (not restarted), the munge key, the accounting records.
        assert ctl.check_output("sha256sum /etc/slurm/slurm.conf") == conf
        assert ctl.check_output("systemctl show --property MainPID --value slurmctld") == ctld_pid
        for name in GROUPS:
            if name != down:
                assert lab_host(name).check_output("sha256sum /etc/munge/munge.key") == keys[name], name
        after = host.check_output(SACCT_JOBS)
        assert set(jobs.splitlines()) <= set(after.splitlines())
    finally:
        subprocess.run(["podman", "start", container], check=True, capture_output=True)

    wait_for(lambda: booted(down), f"{down} to boot")
    rerun = playbook("slurm.yml")
    stats = recap(rerun.stdout)
    assert rerun.returncode == 0, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    assert all(s["failed"] == 0 and s["unreachable"] == 0 for s in stats.values()), stats
    assert sum(s["changed"] for s in stats.values()) == 0, stats
    assert lab_host(down).check_output("sha256sum /etc/munge/munge.key") == keys[down]
    assert ctl.check_output("sha256sum /etc/slurm/slurm.conf") == conf
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")
    assert sorted(host.check_output("srun --nodes=2 --ntasks-per-node=1 hostname").split()) == COMPUTE


def test_a_change_only_a_restart_applies_restarts_the_running_daemons(host):
    """A first converge starts slurmdbd, slurmctld and slurmd from stopped and does not
    restart them again for the files written before that start; a daemon that is running
    does restart when a change needs it. Here a restart-only slurm.conf key and a
    slurmdbd.conf setting change, then change back: each run restarts slurmdbd, slurmctld
    and every slurmd, the running slurmctld reports the new value, and the cluster runs jobs
    after each. The key is SchedulerType, which `scontrol reconfigure` refuses ("requires
    restart of the slurmctld daemon"): before it was among the restart-only keys, the run
    failed in the reconfigure with slurm.conf written, the next run failed the same way,
    and with every file then written no later run restarted slurmctld: the old scheduler
    stayed."""
    ctl = lab_host(CONTROLLER)

    def pids() -> dict[str, str]:
        out = {d: ctl.check_output(f"systemctl show --property MainPID --value {d}") for d in ("slurmdbd", "slurmctld")}
        return out | {n: lab_host(n).check_output("systemctl show --property MainPID --value slurmd") for n in COMPUTE}

    changed = {"slurm_config": dict(LAB_SLURM_CONFIG, SchedulerType="sched/builtin"), "slurm_dbd_config": {"DebugLevel": "verbose"}}
    for extra, scheduler in ((["-e", json.dumps(changed)], "sched/builtin"), ([], "sched/backfill")):
        before = pids()
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        for task, hosts in (("Restart slurmdbd", [CONTROLLER]), ("Restart slurmctld", [CONTROLLER]), ("Restart slurmd", COMPUTE)):
            section = [t for t in run.stdout.split("\nRUNNING HANDLER [") if t.startswith(f"clusterdos.cluster.slurm : {task}]")]
            assert section and sorted(re.findall(r"^changed: \[(\S+)\]", section[0], re.M)) == sorted(hosts), \
                run.stdout[-6000:]
        after = pids()
        assert all(after[k] != before[k] and after[k] != "0" for k in before), (before, after)
        assert running_config(ctl, "SchedulerType") == scheduler
        wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")
        assert sorted(host.check_output("srun --nodes=2 --ntasks-per-node=1 hostname").split()) == COMPUTE
    assert "SchedulerType=sched/backfill" in ctl.file("/etc/slurm/slurm.conf").content_string


def test_a_run_failing_after_its_writes_still_applies_them(host):
    """A restart-only key changed in the same run as a QOS slurmdbd rejects: the controller's
    play wrote slurm.conf, then failed in the accounting step. Before, its handlers did not run
    (slurmctld kept the old scheduler), and the next valid run failed in the compute play's
    reconfigure ("requires restart") (found on the lab); a run after that would find every
    file written and restart nothing, as session 31 found for the same refusal. Now the Slurm plays force their handlers: the failed run restarts slurmctld on
    what it wrote, and the next run passes."""
    ctl = lab_host(CONTROLLER)
    changed = {"slurm_config": dict(LAB_SLURM_CONFIG, SchedulerType="sched/builtin")}
    bad_qos = dict(changed, slurm_accounting_qos=[{"name": "normal"}, {"name": "broken", "attributes": {"MaxWall": "soon"}}])
    run = playbook("slurm.yml", "-e", json.dumps(bad_qos))
    assert run.returncode != 0 and "adding qos broken to slurmdbd failed" in run.stdout, run.stdout[-4000:]
    assert "RUNNING HANDLER [clusterdos.cluster.slurm : Restart slurmctld]" in run.stdout
    assert running_config(ctl, "SchedulerType") == "sched/builtin"
    for extra, expected in ((["-e", json.dumps(changed)], "sched/builtin"), ([], "sched/backfill")):
        run = playbook("slurm.yml", *extra)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert running_config(ctl, "SchedulerType") == expected
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")


def test_a_restart_only_key_the_role_does_not_list_still_restarts_slurmctld(host):
    """A key `scontrol reconfigure` refuses ("requires restart of the slurmctld daemon") that
    the role's restart-only list does not hold, as a key a later Slurm release made
    restart-only would be. Simulated by running with __slurm_restart_keys without
    SchedulerType (the running slurmctld and its refusal are real): the first run only
    changes the fingerprint (a restart), the second changes SchedulerType, which only
    reconfigures; slurmctld refuses, and the role restarts it instead of failing the run
    with the file written (before: rc 2, and no later run applied it). Then the default list
    and value again."""
    ctl = lab_host(CONTROLLER)
    defaults = yaml.safe_load((ROOT / "roles" / "slurm" / "vars" / "main.yml").read_text())["__slurm_restart_keys"]
    shorter = [k for k in defaults if k != "SchedulerType"]
    steps = (({"__slurm_restart_keys": shorter}, "sched/backfill", False),
             ({"__slurm_restart_keys": shorter, "slurm_config": dict(LAB_SLURM_CONFIG, SchedulerType="sched/builtin")},
              "sched/builtin", True),
             ({}, "sched/backfill", False))
    for extra, expected, refused_then_restarted in steps:
        # The converge record does not cover the role's internal list: the stage converges in full.
        run = playbook("slurm.yml", "-e", json.dumps(dict(extra, clusterdos_fast_path=False)))
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        fallback = [t for t in run.stdout.split("\nRUNNING HANDLER [") if t.startswith(
            "clusterdos.cluster.slurm : Restart slurmctld where the reconfigure said only a restart applies the change]")]
        restarted = [t for t in fallback if f"changed: [{CONTROLLER}" in t.split("\n\n")[0]]
        assert len(restarted) == (1 if refused_then_restarted else 0), fallback
        assert running_config(ctl, "SchedulerType") == expected
    wait_for(lambda: node_states(host) == {n: "idle" for n in COMPUTE}, "both compute nodes idle")


def test_add_compute_node_while_a_job_runs(host):
    """base.yml on a new host, then slurm_add_node.yml adds it as a third node: the running
    job and the other slurmd live on, every Slurm host resolves the new one, and only the
    new host is probed for hardware, with one exception: a compute node missing from the
    hardware saved on the controller (removed here) is gathered in full at once and saved
    again as it was. The other running compute node's record is saved without its OS
    family (a record from before the family was kept): it is not probed, only asked for its
    OS facts, and its record is saved again with the family. (A record with the family
    spares that too.) A second node added after it finds every running compute
    node's record complete: those nodes' facts come from it, they run nothing before their
    files are written, and their records and slurmd come out as they were. Then an add with
    nothing to add changes nothing, one with slurmctld stopped is refused before any
    change, and add_node.yml adds a third node in one run (and changes nothing run again)."""
    job = host.check_output(f"sbatch --parsable --nodelist={COMPUTE[0]} --nodes=1 --job-name=long --wrap 'sleep 900'")
    wait_for(lambda: host.check_output(f"squeue --noheader --jobs {job} --format %T") == "RUNNING", f"job {job} to run")
    pids = {n: lab_host(n).check_output("systemctl show --property MainPID --value slurmd") for n in COMPUTE}
    ctl, unsaved = lab_host(CONTROLLER), COMPUTE[1]
    saved = yaml.safe_load(ctl.file(SAVED_HARDWARE).content_string)
    assert sorted(saved) == COMPUTE
    ctl.run_expect([0], f"sed -i '/^{unsaved}: /d' {SAVED_HARDWARE}")
    old_record = COMPUTE[0]
    assert '"os_family": "Debian"' in [line for line in ctl.file(SAVED_HARDWARE).content_string.splitlines()
                                       if line.startswith(f"{old_record}: ")][0]
    ctl.run_expect([0], f"""sed -i -E '/^{old_record}: /s/"os_family": "[^"]*", //' {SAVED_HARDWARE}""")
    try:
        hosts = [f"--host={n}={','.join(g)}" for n, g in GROUPS.items()] + [f"--host={NEW_NODE}=slurm_compute"]
        subprocess.run([LAB_CLI, "up", "--name", LAB, *hosts], check=True, capture_output=True, text=True)
        # base.yml on the new host alone (the package proxy, its /etc/hosts); slurm_add_node.yml
        # puts it in the other Slurm hosts' /etc/hosts itself.
        for name, limit in (("base.yml", ["--limit", f"{NEW_NODE},localhost"]), ("slurm_add_node.yml", [])):
            run = playbook(name, *limit)
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        for name in GROUPS:
            assert re.search(rf"^\S+\s+{NEW_NODE}$", lab_host(name).file("/etc/hosts").content_string, re.M), name
        # The hosts already running Slurm are not probed for hardware: only the new one is,
        # and the one whose saved hardware was removed (in full, and for GPUs and RDMA);
        # the one whose record lacks its OS family is asked for its OS facts alone (its
        # hardware kept from the record, below, and not probed for GPUs).
        gather = "clusterdos.cluster.slurm : Gather facts unless this run already has them"
        asked = sorted(re.findall(r"^ok: \[(\S+)\]", task_output(run.stdout, gather), re.M))
        assert asked == sorted([CONTROLLER, LOGIN, NEW_NODE, old_record, unsaved]), run.stdout[-4000:]
        discovery = task_output(run.stdout, "Read facts and hardware unless this run already has them")
        included = re.search(r"^included: .* for (.+)$", discovery, re.M)
        assert included and sorted(included.group(1).split(", ")) == sorted([unsaved, NEW_NODE]), run.stdout[-4000:]
        now = yaml.safe_load(ctl.file(SAVED_HARDWARE).content_string)
        assert sorted(now) == sorted(COMPUTE + [NEW_NODE]) and {n: now[n] for n in COMPUTE} == saved, now

        assert host.check_output(f"squeue --noheader --jobs {job} --format '%T %N'") == f"RUNNING {COMPUTE[0]}"
        for name, pid in pids.items():
            assert lab_host(name).check_output("systemctl show --property MainPID --value slurmd") == pid, name
        states = wait_for(lambda: (s := node_states(host)).get(NEW_NODE) == "idle" and s, f"{NEW_NODE} idle")
        assert sorted(states) == sorted(COMPUTE + [NEW_NODE])
        assert states[COMPUTE[0]] in ("mixed", "allocated") and states[COMPUTE[1]] == "idle"
        assert host.check_output(f"srun --nodelist={NEW_NODE} hostname") == NEW_NODE

        # Adding a second node, every running node's record now complete (saved again above,
        # with the OS family): the running compute nodes' facts come from their record, set by
        # the primary controller in one task, and they are in no play before the one that
        # writes their files. Their records and slurmd come out as they were.
        # slurmd's start time as slurmctld saw it register (a restart would change it).
        def slurmd_started(node: str) -> str:
            return re.search(r"SlurmdStartTime=(\S+)", host.check_output(f"scontrol show node {node}")).group(1)

        started = {n: slurmd_started(n) for n in COMPUTE + [NEW_NODE]}
        hosts.append(f"--host={SECOND_NEW_NODE}=slurm_compute")
        subprocess.run([LAB_CLI, "up", "--name", LAB, *hosts], check=True, capture_output=True, text=True)
        for name, limit in (("base.yml", ["--limit", f"{SECOND_NEW_NODE},localhost"]), ("slurm_add_node.yml", [])):
            run = playbook(name, *limit)
            assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        recorded = task_output(run.stdout, "clusterdos.cluster.slurm : Group the running compute nodes whose facts came from their record")
        assert sorted(re.findall(r"\(item=([^)]+)\)", recorded)) == sorted(COMPUTE + [NEW_NODE]), run.stdout[-4000:]
        marker = "clusterdos.cluster.slurm : Mark the host's facts step (its own variables from here)"
        in_facts_play = sorted(re.findall(r"^ok: \[(\S+)\]", task_output(run.stdout, marker), re.M))
        assert in_facts_play == sorted([CONTROLLER, LOGIN, SECOND_NEW_NODE]), run.stdout[-4000:]
        again = yaml.safe_load(ctl.file(SAVED_HARDWARE).content_string)
        assert sorted(again) == sorted(COMPUTE + [NEW_NODE, SECOND_NEW_NODE]), again
        assert {n: again[n] for n in now} == now, again
        wait_for(lambda: node_states(host).get(SECOND_NEW_NODE) == "idle", f"{SECOND_NEW_NODE} idle")
        assert {n: slurmd_started(n) for n in started} == started

        # slurm_add_node.yml again, with no node to add: it passes and changes nothing, and no
        # host is checked or asked for anything past the primary's question to slurmctld (the
        # running hosts' OS values come from facts this mode does not gather: the checks
        # failed on them before).
        noop = playbook("slurm_add_node.yml")
        assert noop.returncode == 0, noop.stdout[-4000:] + noop.stderr[-2000:]
        stats = recap(noop.stdout)
        assert sum(s["changed"] for s in stats.values()) == 0, stats
        assert not task_outputs(noop.stdout, "clusterdos.cluster.slurm : Read the Slurm daemons, state and accounting database here, "
                                "and check the files this run would write"), noop.stdout[-4000:]
        assert {n for n, s in stats.items() if s["ok"]} == {"localhost", CONTROLLER}, stats
        assert {n: slurmd_started(n) for n in started} == started

        # With slurmctld stopped the add stops at its first question, naming the host and
        # the fix, with nothing changed (before, every compute node counted as new and
        # converged again, then waited in vain for slurmctld to see it up).
        ctl.run_expect([0], "systemctl stop slurmctld")
        try:
            _, said = refused("slurm_add_node.yml")
            assert f"slurmctld did not answer `sinfo` on {CONTROLLER}" in said and "systemctl start slurmctld" in said, said[-3000:]
        finally:
            ctl.run_expect([0], "systemctl start slurmctld")
        wait_for(lambda: node_states(host).get(SECOND_NEW_NODE) == "idle", f"{SECOND_NEW_NODE} idle again")
        assert host.check_output(f"squeue --noheader --jobs {job} --format '%T %N'") == f"RUNNING {COMPUTE[0]}"

        # The one-command path for a third node: add_node.yml runs base, every stage the
        # node's groups call for and the Slurm add in one run; again, it changes nothing.
        hosts.append(f"--host={THIRD_NEW_NODE}=slurm_compute")
        subprocess.run([LAB_CLI, "up", "--name", LAB, *hosts], check=True, capture_output=True, text=True)
        run = playbook("add_node.yml", "-e", f"node={THIRD_NEW_NODE}")
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        wait_for(lambda: node_states(host).get(THIRD_NEW_NODE) == "idle", f"{THIRD_NEW_NODE} idle")
        assert host.check_output(f"srun --nodelist={THIRD_NEW_NODE} hostname") == THIRD_NEW_NODE
        assert host.check_output(f"squeue --noheader --jobs {job} --format '%T %N'") == f"RUNNING {COMPUTE[0]}"
        again = playbook("add_node.yml", "-e", f"node={THIRD_NEW_NODE}")
        assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
        assert sum(s["changed"] for s in recap(again.stdout).values()) == 0, recap(again.stdout)
    finally:
        host.run(f"scancel {job}")
