# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""ClusterD (Mesos continuation) checks, run on the first master (else the first ZooKeeper
member): the ZooKeeper ensemble serving with exactly one leader, a leading master elected
through ZooKeeper, every agent of the inventory registered and active with the expected
resources (its NVIDIA GPUs as the gpus resource), and a task run with mesos-execute
finishing. The master checks apply only when the inventory has ClusterD agents or
masters, the ZooKeeper check only when it has ZooKeeper members: otherwise each is
skipped with that reason.

Each passing check also says what it found per node in data["node_notes"] ({host: text},
such as "ZooKeeper leader" or "ClusterD agent: 8 cpus, 512 MB, 2 GPUs"); the report
writes those notes into the nodes of its topology picture.

The master's state comes from its HTTP endpoint (/master/state, which a master that is
not the leader answers by redirecting to the leader), read with the host's python3 so no
HTTP client has to be installed; the ZooKeeper URL from the package's /etc/mesos/zk."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.core import (
    Check,
    CheckFailed,
    CheckSkipped,
    Outcome,
    Runner,
)

GPU_KEY = "nvidia.com/gpu"
# Sends ZooKeeper's four-letter command srvr to each member (argv: port, addresses...) and
# prints {address: {"ok": bool, "text": answer or error}} as JSON (no netcat needed).
_SRVR = """
import json, socket, sys
port, out = int(sys.argv[1]), {}
for address in sys.argv[2:]:
    try:
        s = socket.create_connection((address, port), 5)
        s.sendall(b"srvr")
        text = b"".join(iter(lambda: s.recv(4096), b"")).decode(errors="replace")
        s.close()
        out[address] = {"ok": True, "text": text}
    except OSError as e:
        out[address] = {"ok": False, "text": str(e) or type(e).__name__}
print(json.dumps(out))
"""
# Reads a JSON endpoint with http.client (following up to three redirects, as a master
# that is not the leader sends to the leader); prints the body, or exits non-zero with why.
_FETCH = """
import http.client, ssl, sys, urllib.parse as up
url = sys.argv[1]
try:
    for _ in range(4):
        s = up.urlsplit(url)
        if s.scheme == "https":
            c = http.client.HTTPSConnection(s.netloc, timeout=20, context=ssl._create_unverified_context())
        else:
            c = http.client.HTTPConnection(s.netloc, timeout=20)
        c.request("GET", s.path + ("?" + s.query if s.query else ""))
        r = c.getresponse()
        if r.status in (301, 302, 303, 307, 308) and r.getheader("Location"):
            url = up.urljoin(url, r.getheader("Location"))
            continue
        if r.status != 200:
            sys.exit("HTTP %d from %s" % (r.status, url))
        print(r.read().decode())
        break
    else:
        sys.exit("too many redirects from " + sys.argv[1])
except (OSError, http.client.HTTPException) as e:
    sys.exit("%s: %s" % (url, e))
"""


def parse_state(text: str) -> Dict[str, Any]:
    """The master's /master/state JSON; CheckFailed when it is not JSON."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CheckFailed("the master's state is not JSON: %s" % str(exc)[:120])
    if not isinstance(data, dict):
        raise CheckFailed("the master's state is not a JSON object")
    return data


def agents_by_hostname(state: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{hostname: agent} from the state's `slaves` (the API's name for agents)."""
    return {a.get("hostname", ""): a for a in state.get("slaves") or [] if isinstance(a, dict)}


def _number(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def agent_problems(agent: Optional[Dict[str, Any]], expected_gpus: int) -> List[str]:
    """Why one agent's registration is not as the inventory expects (empty when it is)."""
    if agent is None:
        return ["not registered"]
    problems = []
    if not agent.get("active", False):
        problems.append("registered but not active")
    resources = agent.get("resources") or {}
    for name in ("cpus", "mem"):
        if _number(resources.get(name)) <= 0:
            problems.append("offers no %s" % name)
    gpus = int(_number(resources.get("gpus")))
    if gpus != expected_gpus:
        problems.append("offers %d GPU%s, the inventory expects %d" % (gpus, "" if gpus == 1 else "s", expected_gpus))
    return problems


def zookeeper_mode(answer: str) -> str:
    """The member's mode from its srvr answer: leader, follower, standalone, observer, or
    "not serving" (no quorum) / "no answer" (srvr not allowed, or nothing said)."""
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    if "not currently serving" in answer:
        return "not serving"
    if "not in the whitelist" in answer or "not executed" in answer:
        return "srvr not allowed (4lw.commands.whitelist)"
    return "no answer"


class ClusterdContext:
    def __init__(self, run: Runner, nodes: List[Dict[str, Any]], host: str = "", agent_group: str = "clusterd_agent",
                 master_group: str = "clusterd_master", zookeeper_group: str = "zookeeper", port: int = 5050,
                 zookeeper_port: int = 2181, zk_file: str = "/etc/mesos/zk",
                 execute_resources: str = "cpus:0.1;mem:32", timeout: int = 120) -> None:
        self.run = run
        self.agents = [n for n in nodes if agent_group in (n.get("roles") or [])]
        self.masters = [n for n in nodes if master_group in (n.get("roles") or [])]
        self.zookeeper = [n for n in nodes if zookeeper_group in (n.get("roles") or [])]
        self.zookeeper_group = zookeeper_group
        self.zookeeper_port = zookeeper_port
        me = next((n for n in nodes if n.get("name") == host), {})
        self.address = me.get("address") or "127.0.0.1"
        self.port = port
        self.zk_file = zk_file
        self.execute_resources = execute_resources
        self.timeout = timeout
        self._state: Optional[Dict[str, Any]] = None

    def applies(self) -> None:
        if not self.agents and not self.masters:
            raise CheckSkipped("no ClusterD masters or agents in the inventory")

    def state(self) -> Dict[str, Any]:
        if self._state is None:
            url = "http://%s:%d/master/state" % (self.address, self.port)
            res = self.run(["python3", "-c", _FETCH, url], timeout=60)
            if res.rc != 0:
                raise CheckFailed("the master at %s:%d does not answer: %s" % (self.address, self.port, res.reason()))
            self._state = parse_state(res.out)
        return self._state

    def zk_url(self) -> str:
        res = self.run(["cat", self.zk_file], timeout=30)
        url = res.out.strip()
        if res.rc != 0 or not url.startswith("zk://"):
            raise CheckFailed("no ZooKeeper URL in %s on this master: %s" % (self.zk_file, res.reason()))
        return url


def check_zookeeper(ctx: ClusterdContext) -> Outcome:
    """Every member of the ZooKeeper group answers srvr on its cluster address, exactly one
    leads (a lone member: standalone) and the others follow."""
    if not ctx.zookeeper:
        raise CheckSkipped("no ZooKeeper members in the inventory (group %s)" % ctx.zookeeper_group)
    addresses = [n.get("address") or n["name"] for n in ctx.zookeeper]
    res = ctx.run(["python3", "-c", _SRVR, str(ctx.zookeeper_port)] + addresses, timeout=60)
    try:
        answers = json.loads(res.out) if res.rc == 0 else None
    except ValueError:
        answers = None
    if not isinstance(answers, dict):
        raise CheckFailed("could not ask the ZooKeeper members from this host: %s" % res.reason())
    modes, problems = {}, []
    for node, address in zip(ctx.zookeeper, addresses):
        answer = answers.get(address) or {}
        if not answer.get("ok"):
            modes[node["name"]] = "down"
            why = str(answer.get("text") or "not asked")[:120]
            problems.append("%s: no answer on %s:%d (%s)" % (node["name"], address, ctx.zookeeper_port, why))
            continue
        modes[node["name"]] = zookeeper_mode(str(answer.get("text") or ""))
        if modes[node["name"]] not in ("leader", "follower", "standalone", "observer"):
            problems.append("%s: %s" % (node["name"], modes[node["name"]]))
    leaders = sorted(n for n, m in modes.items() if m in ("leader", "standalone"))
    if len(ctx.zookeeper) > 1 and "standalone" in modes.values():
        problems.append("%s run%s standalone in an ensemble of %d (zoo.cfg has no server.N lines?)" % (
            ", ".join(n for n, m in sorted(modes.items()) if m == "standalone"),
            "s" if list(modes.values()).count("standalone") == 1 else "", len(ctx.zookeeper)))
    if not leaders:
        problems.append("no leader (exactly one must lead)")
    elif len(leaders) > 1:
        problems.append("%s leaders (exactly one must lead)" % ", ".join(leaders))
    if problems:
        raise CheckFailed("ZooKeeper ensemble not serving as expected: %s" % "; ".join(problems))
    notes = {name: "ZooKeeper %s" % mode for name, mode in modes.items()}
    return Outcome("ensemble of %d: %s" % (len(modes), ", ".join("%s %s" % (n, m) for n, m in sorted(modes.items()))),
                   data={"zookeeper": modes, "node_notes": notes})


def _leader_name(ctx: ClusterdContext, state: Dict[str, Any]) -> str:
    """The inventory name of the leading master (its --hostname is the inventory name; the
    leader's PID master@IP:PORT names its address)."""
    info = state.get("leader_info") or {}
    names = {n["name"] for n in ctx.masters}
    if info.get("hostname") in names:
        return info["hostname"]
    pid = str(state.get("leader") or "")
    address = pid.split("@", 1)[-1].rsplit(":", 1)[0]
    return next((n["name"] for n in ctx.masters if address and n.get("address") == address), "")


def check_leader(ctx: ClusterdContext) -> Outcome:
    ctx.applies()
    state = ctx.state()
    leader = state.get("leader") or ""
    if not leader:
        raise CheckFailed("no leading master: the masters have not elected one through ZooKeeper (quorum lost, or "
                          "ZooKeeper unreachable); see /var/log/mesos on the masters")
    info = state.get("leader_info") or {}
    where = info.get("hostname") or leader
    name = _leader_name(ctx, state)
    notes = {n["name"]: "ClusterD master" + (" (leading)" if n["name"] == name else "") for n in ctx.masters}
    return Outcome("leader %s (cluster %s, version %s)" % (where, state.get("cluster") or "-", state.get("version") or "-"),
                   data={"leader": name or where, "node_notes": notes})


def check_agents(ctx: ClusterdContext) -> Outcome:
    ctx.applies()
    if not ctx.agents:
        raise CheckSkipped("no ClusterD agents in the inventory")
    registered = agents_by_hostname(ctx.state())
    problems, seen = [], {}
    for node in ctx.agents:
        expected = int((node.get("gpus") or {}).get(GPU_KEY, 0))
        agent = registered.get(node["name"])
        issues = agent_problems(agent, expected)
        if issues:
            problems.append("%s: %s" % (node["name"], ", ".join(issues)))
        elif agent is not None:
            res = agent.get("resources") or {}
            seen[node["name"]] = {"cpus": _number(res.get("cpus")), "mem": _number(res.get("mem")),
                                  "gpus": int(_number(res.get("gpus")))}
    if problems:
        raise CheckFailed("agents not as expected: %s" % "; ".join(problems))
    notes = {n: "ClusterD agent: %g cpus, %g MB%s" % (r["cpus"], r["mem"], ", %d GPUs" % r["gpus"] if r["gpus"] else "")
             for n, r in seen.items()}
    return Outcome("%d agent%s registered and active: %s" % (
        len(seen), "" if len(seen) == 1 else "s",
        ", ".join("%s (%g cpus, %g MB, %d GPU)" % (n, r["cpus"], r["mem"], r["gpus"]) for n, r in sorted(seen.items()))),
        data={"agents": seen, "node_notes": notes})


def check_execute(ctx: ClusterdContext) -> str:
    ctx.applies()
    if not ctx.agents:
        raise CheckSkipped("no ClusterD agents in the inventory to run a task on")
    url = ctx.zk_url()
    argv = ["mesos-execute", "--master=%s" % url, "--name=clusterdos-validate",
            "--command=echo clusterdos-validate", "--resources=%s" % ctx.execute_resources]
    res = ctx.run(argv, timeout=ctx.timeout + 60)
    text = res.out + res.err
    if res.rc != 0 or "TASK_FINISHED" not in text:
        last = [line for line in text.splitlines() if "TASK_" in line][-1:] or [res.reason()]
        raise CheckFailed("mesos-execute did not finish its task: %s" % last[0].strip())
    return "mesos-execute ran a task to TASK_FINISHED through %s" % url


CHECKS = [
    Check("clusterd.zookeeper", "The ZooKeeper ensemble serves with exactly one leader", check_zookeeper),
    Check("clusterd.leader", "A leading ClusterD master is elected through ZooKeeper", check_leader),
    Check("clusterd.agents", "Every ClusterD agent is registered and active with its resources (GPUs where present)",
          check_agents),
    Check("clusterd.execute", "A task run with mesos-execute finishes", check_execute, mutates=True),
]
