# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""What slurmdbd must hold for the cluster (its name, QOS, accounts, users) against what it
holds, and the sacctmgr commands that add what is missing: the slurm_accounting module's
logic. An existing account whose fair share the inventory gives gets it set (sacctmgr
modify); other attributes of an existing item are left as they are (QOS attributes and
descriptions apply at creation), and nothing is removed."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.slurm_config import conf_lines

# What the plan reads from slurmdbd: the clusters and QOS (both shared by every cluster a
# slurmdbd serves), and this cluster's associations with their fair share, as
# `account|user|share` lines (an account's own association has no user). Accounts and users
# are compared by association, not by name: an account or user that another cluster of the
# same slurmdbd already has still needs its association on this one (`sacctmgr add
# account|user ... cluster=` adds just that), and so does a user the inventory puts in a
# second account.
KINDS = ("cluster", "qos", "assoc")


def show_argv(sacctmgr: str, kind: str, cluster: str = "") -> List[str]:
    """The read-only command that lists one KIND, one item per line (CLUSTER: whose associations)."""
    fields = {"cluster": ["cluster", "format=cluster"], "qos": ["qos", "format=name"],
              "assoc": ["assoc", "cluster=%s" % cluster.lower(), "format=account,user,fairshare"]}[kind]
    return [sacctmgr, "--noheader", "--parsable2", "show"] + fields


def plan(known: Mapping[str, Any], cluster: str, qos: Sequence[Mapping[str, Any]],
         accounts: Sequence[Mapping[str, Any]], users: Sequence[Mapping[str, Any]],
         sacctmgr: str = "sacctmgr") -> List[Tuple[str, List[str]]]:
    """The (label, argv) of each `sacctmgr -i add` needed, in dependency order: the cluster,
    QOS, accounts (their association on the cluster), users (their association with their
    account on the cluster); then a `sacctmgr -i modify` for each existing account whose fair
    share on the cluster is not the one it is given. KNOWN maps "cluster" and "qos" to the
    names slurmdbd lists, "assoc" to the cluster's (account, user) pairs, "" for an account's
    own, and "fairshare" to each account's share there (as sacctmgr prints it); sacctmgr
    stores cluster, QOS and account names in lower case, so those compare in lower case, user
    names as given."""
    add = [sacctmgr, "-i", "add"]
    assoc = known.get("assoc", set())
    out: List[Tuple[str, List[str]]] = []
    if cluster.lower() not in known.get("cluster", set()):
        out.append(("cluster %s" % cluster, add + ["cluster", cluster]))
    for item in qos:
        if item["name"].lower() not in known.get("qos", set()):
            out.append(("qos %s" % item["name"], add + ["qos", item["name"]] + conf_lines(item.get("attributes") or {})))
    for item in accounts:
        if (item["name"].lower(), "") not in assoc:
            out.append(("account %s" % item["name"], add + [
                "account", item["name"], "cluster=%s" % cluster,
                "description=%s" % (item.get("description") or item["name"]),
                "fairshare=%s" % item.get("fairshare", 1)]))
    for item in users:
        if (item["account"].lower(), item["name"]) not in assoc:
            out.append(("user %s" % item["name"], add + [
                "user", item["name"], "account=%s" % item["account"], "cluster=%s" % cluster]))
    shares = known.get("fairshare", {})
    for item in accounts:
        now = shares.get(item["name"].lower())
        if "fairshare" in item and now is not None and now != str(item["fairshare"]):
            out.append(("fairshare of account %s (%s, was %s)" % (item["name"], item["fairshare"], now), [
                sacctmgr, "-i", "modify", "account", "where", "name=%s" % item["name"], "cluster=%s" % cluster,
                "set", "fairshare=%s" % item["fairshare"]]))
    return out


Result = Tuple[int, str, str]


def known_names(run: Callable[[List[str]], Result], sacctmgr: str,
                run_all: Optional[Callable[[List[List[str]]], List[Result]]] = None,
                cluster: str = "") -> Dict[str, Any]:
    """What slurmdbd holds, kind by kind (KINDS; CLUSTER's associations); RUN(argv) -> (rc,
    stdout, stderr), one listing after another, or RUN_ALL([argv, ...]) -> [(rc, stdout,
    stderr), ...] for all of them at once (the module runs them side by side: three sacctmgr
    round trips to slurmdbd in the time of one). Raises RuntimeError with sacctmgr's own
    message when slurmdbd cannot be asked."""
    argvs = [show_argv(sacctmgr, kind, cluster) for kind in KINDS]
    results = run_all(argvs) if run_all is not None else [run(argv) for argv in argvs]
    known: Dict[str, Any] = {}
    for kind, argv, (rc, out, err) in zip(KINDS, argvs, results):
        if rc != 0:
            raise RuntimeError("%s failed (rc %s): %s" % (" ".join(argv), rc, (err or out).strip()))
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        if kind == "assoc":
            rows = [(line.split("|") + ["", ""])[:3] for line in lines]
            known[kind] = {(account.lower(), user) for account, user, _share in rows}
            known["fairshare"] = {account.lower(): share for account, user, share in rows if not user and share}
        else:
            known[kind] = {name.lower() for name in lines}
    return known


def ensure(run: Callable[[List[str]], Result], params: Mapping[str, Any], check_mode: bool,
           installed: bool = True, run_all: Optional[Callable[[List[List[str]]], List[Result]]] = None) -> Dict[str, Any]:
    """List (with RUN_ALL where given, see known_names), plan and (unless CHECK_MODE) add;
    returns the module's result. Where sacctmgr is not INSTALLED yet (check mode on a fresh
    host) everything is planned."""
    sacctmgr = params["sacctmgr"]
    known = known_names(run, sacctmgr, run_all, params["cluster"]) if installed else {}
    steps = plan(known, params["cluster"], params["qos"], params["accounts"], params["users"], sacctmgr)
    added = [label for label, argv in steps if argv[2] == "add"]
    modified = [label for label, argv in steps if argv[2] == "modify"]
    if not check_mode:
        for label, argv in steps:
            rc, out, err = run(argv)
            if rc != 0:
                what = ("adding %s to slurmdbd" if argv[2] == "add" else "setting the %s in slurmdbd") % label
                raise RuntimeError("%s failed (rc %s): %s" % (what, rc, (err or out).strip()))
    return {"changed": bool(steps), "added": added, "modified": modified,
            "diff": {"before": "", "after": "".join("%s\n" % label for label, _argv in steps)} if steps else {}}


def errors(qos: Any, accounts: Any, users: Any) -> List[str]:
    """What is wrong with slurm_accounting_qos, _accounts and _users, one message each
    (empty when nothing): the preflight's check, before any host changes."""
    out: List[str] = []
    shapes = (("slurm_accounting_qos", qos, "{name, attributes}", ()),
              ("slurm_accounting_accounts", accounts, "{name, description, fairshare}", ()),
              ("slurm_accounting_users", users, "{name, account}", ("account",)))
    for var, items, shape, required in shapes:
        if not isinstance(items, list):
            out.append("%s is %r: give a list of %s." % (var, items, shape))
            continue
        for index, item in enumerate(items):
            where = "%s[%d]" % (var, index)
            if not isinstance(item, Mapping):
                out.append("%s is %r: give %s." % (where, item, shape))
                continue
            for key in ("name",) + required:
                value = item.get(key)
                if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
                    out.append("%s: '%s' is %r: give a name without spaces (%s)." % (where, key, value, shape))
            if var == "slurm_accounting_qos" and not isinstance(item.get("attributes", {}) or {}, Mapping):
                out.append("%s: 'attributes' is %r: give a mapping of QOS settings, e.g. {Priority: 100}."
                           % (where, item.get("attributes")))
            if var == "slurm_accounting_accounts" and "fairshare" in item:
                share = item["fairshare"]
                if isinstance(share, bool) or not isinstance(share, int) or share < 0:
                    out.append("%s: 'fairshare' is %r: give a whole number of shares (0 or more)." % (where, share))
    return out
