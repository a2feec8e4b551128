# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""What slurmdbd must hold for the cluster (its name, QOS, accounts, users) against what it
holds, and the sacctmgr commands that add what is missing: the slurm_accounting module's
logic. An existing QOS whose attributes, an existing account whose fair share, QOS or
description, or an existing user whose default account the inventory gives otherwise than
slurmdbd holds gets them set (sacctmgr modify, only what differs); what the inventory
leaves out keeps what slurmdbd holds, and nothing is removed."""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.clusterdos.cluster.plugins.module_utils.slurm_config import conf_lines

# What the plan reads from slurmdbd: the clusters and QOS (both shared by every cluster a
# slurmdbd serves), and this cluster's associations with their fair share, as
# `account|user|share` lines (an account's own association has no user). Accounts and users
# are compared by association, not by name: an account or user that another cluster of the
# same slurmdbd already has still needs its association on this one (`sacctmgr add
# account|user ... cluster=` adds just that), and so does a user the inventory puts in a
# second account. The QOS listing also prints each attribute key the inventory gives (sacctmgr
# shows a QOS setting under the name it is set by), the account listing each description,
# the user listing each user's default account on the cluster.
KINDS = ("cluster", "qos", "assoc", "account", "user")

# QOS settings sacctmgr takes but cannot show (RawUsage resets usage; it is no setting to
# keep): applied when the QOS is created, never compared.
QOS_SET_ONLY = frozenset(("rawusage",))
# How sacctmgr shows a duration: [days-]hours:minutes:seconds. The inventory may give any of
# Slurm's time forms; a bare number is minutes, except for GraceTime (seconds). MaxWall and
# GrpWall are kept in whole minutes (5:30 is shown as 00:06:00).
QOS_SECONDS = frozenset(("gracetime",))
QOS_MINUTES = frozenset(("maxwall", "maxwalldurationperjob", "grpwall", "preemptexempttime"))
QOS_WHOLE_MINUTES = frozenset(("maxwall", "maxwalldurationperjob", "grpwall"))
QOS_LISTS = frozenset(("flags", "preempt"))
UNSET = ("", "-1", "unlimited", "infinite", "none")


def qos_keys(qos: Sequence[Mapping[str, Any]]) -> List[str]:
    """The attribute keys the inventory gives any QOS (the first spelling of each, in order),
    less those sacctmgr cannot show: the QOS listing's extra fields."""
    keys: Dict[str, str] = {}
    for item in qos:
        for key in (item.get("attributes") or {}):
            if str(key).lower() not in QOS_SET_ONLY:
                keys.setdefault(str(key).lower(), str(key))
    return list(keys.values())


def show_argv(sacctmgr: str, kind: str, cluster: str = "", keys: Sequence[str] = ()) -> List[str]:
    """The read-only command that lists one KIND, one item per line (CLUSTER: whose
    associations; KEYS: the QOS attributes to print after each QOS's name)."""
    fields = {"cluster": ["cluster", "format=cluster"], "qos": ["qos", ",".join(["format=name"] + list(keys))],
              "assoc": ["assoc", "cluster=%s" % cluster.lower(), "format=account,user,fairshare,qos,defaultqos"],
              "account": ["account", "format=account,description"],
              "user": ["user", "withassoc", "where", "cluster=%s" % cluster.lower(), "format=user,defaultaccount"]}[kind]
    return [sacctmgr, "--noheader", "--parsable2", "show"] + fields


def _seconds(text: str, bare: int) -> Optional[float]:
    """Slurm's time forms (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) in seconds; BARE: what a bare
    number counts (60 for minutes, 1 for seconds). None where TEXT is none of them."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not match:
        return None
    days, first, second, third = match.groups()
    if days is not None:
        parts = [int(first), int(second or 0), int(third or 0)]
        return int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
    if third is not None:
        return int(first) * 3600 + int(second) * 60 + int(third)
    if second is not None:
        return int(first) * 60 + int(second)
    return int(first) * bare


def _names(text: str) -> frozenset:
    """A comma-separated list (flags, QOS names) as a set, without case or blanks."""
    return frozenset(p.strip() for p in text.lower().split(",") if p.strip())


def _tres(text: str) -> Dict[str, str]:
    """A TRES list (cpu=4,mem=4G,gres/gpu=2) as {name: value}, memory in MB, -1 entries left out."""
    out: Dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.lower().split(","))):
        name, value = (part.split("=", 1) + [""])[:2]
        size = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgtp]?)b?", value)
        if name.startswith("mem") and size:
            scale = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 ** 2, "p": 1024 ** 3}[size.group(2)]
            value = "%g" % (float(size.group(1)) * scale)
        if value not in UNSET:
            out[name] = value
    return out


def qos_value_same(key: str, given: Any, shown: str) -> bool:
    """Whether a QOS attribute as the inventory gives it (GIVEN) is what sacctmgr shows
    (SHOWN) in its own form: durations as seconds, TRES lists by name and value (memory in
    MB), flag and QOS lists as sets, numbers as numbers, text without case (sacctmgr stores
    descriptions in lower case); -1, UNLIMITED and INFINITE are shown as nothing."""
    key = key.lower()
    given_text = ("%s" % given).strip() if given is not None else ""
    shown = shown.strip()
    if given_text.lower() in UNSET or shown.lower() in UNSET:
        return given_text.lower() in UNSET and shown.lower() in UNSET
    if key in QOS_SECONDS or key in QOS_MINUTES:
        want = _seconds(given_text, 1 if key in QOS_SECONDS else 60)
        have = _seconds(shown, 60)
        if want is not None and key in QOS_WHOLE_MINUTES:
            want = -(-want // 60) * 60
        return want is not None and want == have
    if "tres" in key:
        return _tres(given_text) == _tres(shown)
    if key in QOS_LISTS:
        return _names(given_text) == _names(shown)
    try:
        return float(given_text) == float(shown)
    except ValueError:
        return given_text.lower() == shown.lower()


def plan(known: Mapping[str, Any], cluster: str, qos: Sequence[Mapping[str, Any]],
         accounts: Sequence[Mapping[str, Any]], users: Sequence[Mapping[str, Any]],
         sacctmgr: str = "sacctmgr") -> List[Tuple[str, List[str]]]:
    """The (label, argv) of each `sacctmgr -i add` needed, in dependency order: the cluster,
    QOS, accounts (their association on the cluster), users (their association with their
    account on the cluster); then a `sacctmgr -i modify` for each existing QOS whose given
    attributes are not what slurmdbd shows (those keys only, qos_value_same), each existing
    account whose description, QOS on the cluster (wanted_qos) or fair share there is not the
    one it is given, and each existing user whose default account on the cluster is not the
    first account the inventory lists it with (first_accounts). KNOWN maps "cluster" and
    "qos" to the names slurmdbd lists, "qos_attributes" to each QOS's shown attributes
    ({lower-case key: text}), "assoc" to the cluster's (account, user) pairs, "" for an
    account's own, "fairshare" to each account's share there, "assoc_qos" to each account's
    (QOS names, default QOS) there, "description" to each account's description and
    "default_account" to each user's default account on the cluster (as sacctmgr prints
    them); sacctmgr stores cluster, QOS and account names in lower case, so those compare in
    lower case, user names as given."""
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
                "fairshare=%s" % item.get("fairshare", 1)] + qos_settings(item)))
    for item in users:
        if (item["account"].lower(), item["name"]) not in assoc:
            out.append(("user %s" % item["name"], add + [
                "user", item["name"], "account=%s" % item["account"], "cluster=%s" % cluster]))
    shown_qos = known.get("qos_attributes", {})
    for item in qos:
        shown = shown_qos.get(item["name"].lower())
        if shown is None:
            continue
        # A key given no value (null or empty) is not given, as conf_lines leaves it out of the add.
        given = {key: value for key, value in (item.get("attributes") or {}).items() if conf_lines({key: value})}
        differ = {key: value for key, value in given.items()
                  if str(key).lower() not in QOS_SET_ONLY and not qos_value_same(key, value, shown.get(str(key).lower(), ""))}
        if differ:
            was = ", ".join("%s was %s" % (key, shown.get(str(key).lower()) or "unset") for key in sorted(differ))
            out.append(("attributes of qos %s (%s; %s)" % (item["name"], " ".join(conf_lines(differ)), was), [
                sacctmgr, "-i", "modify", "qos", "where", "name=%s" % item["name"], "set"] + conf_lines(differ)))
    descriptions = known.get("description", {})
    for item in accounts:
        now = descriptions.get(item["name"].lower())
        if item.get("description") and now is not None and now.lower() != str(item["description"]).strip().lower():
            out.append(("description of account %s (%r, was %r)" % (item["name"], item["description"], now), [
                sacctmgr, "-i", "modify", "account", "where", "name=%s" % item["name"],
                "set", "description=%s" % item["description"]]))
    account_qos = known.get("assoc_qos", {})
    for item in accounts:
        now_qos = account_qos.get(item["name"].lower())
        want = wanted_qos(item)
        if item.get("qos") and now_qos is not None and (now_qos[0] != want[0] or (want[1] and now_qos[1] != want[1])):
            out.append(("qos of account %s (%s, was %s)" % (item["name"], _qos_text(want), _qos_text(now_qos)), [
                sacctmgr, "-i", "modify", "account", "where", "name=%s" % item["name"], "cluster=%s" % cluster,
                "set"] + qos_settings(item)))
    defaults = known.get("default_account", {})
    for name, account in first_accounts(users).items():
        now = defaults.get(name)
        if now is not None and now.lower() != account.lower():
            out.append(("default account of user %s (%s, was %s)" % (name, account, now or "none"), [
                sacctmgr, "-i", "modify", "user", "where", "name=%s" % name, "cluster=%s" % cluster,
                "set", "defaultaccount=%s" % account]))
    shares = known.get("fairshare", {})
    for item in accounts:
        now = shares.get(item["name"].lower())
        if "fairshare" in item and now is not None and now != str(item["fairshare"]):
            out.append(("fairshare of account %s (%s, was %s)" % (item["name"], item["fairshare"], now), [
                sacctmgr, "-i", "modify", "account", "where", "name=%s" % item["name"], "cluster=%s" % cluster,
                "set", "fairshare=%s" % item["fairshare"]]))
    return out


def wanted_qos(item: Mapping[str, Any]) -> Tuple[frozenset, str]:
    """An account's QOS as the assoc listing compares them: (the names, the default), lower case;
    no default_qos given leaves the default as slurmdbd holds it ("")."""
    return (frozenset(str(name).lower() for name in item.get("qos") or ()), str(item.get("default_qos") or "").lower())


def qos_settings(item: Mapping[str, Any]) -> List[str]:
    """An account's QOS as sacctmgr sets them on its association (its users' inherit them)."""
    if not item.get("qos"):
        return []
    return ["qos=%s" % ",".join(item["qos"])] + (["defaultqos=%s" % item["default_qos"]] if item.get("default_qos") else [])


def _qos_text(qos: Tuple[frozenset, str]) -> str:
    return "%s, default %s" % (",".join(sorted(qos[0])) or "none", qos[1] or "none")


def first_accounts(users: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """Each user's default account: the first account the inventory lists the user with."""
    out: Dict[str, str] = {}
    for item in users:
        out.setdefault(item["name"], item["account"])
    return out


Result = Tuple[int, str, str]


def known_names(run: Callable[[List[str]], Result], sacctmgr: str,
                run_all: Optional[Callable[[List[List[str]]], List[Result]]] = None,
                cluster: str = "", keys: Sequence[str] = ()) -> Dict[str, Any]:
    """What slurmdbd holds, kind by kind (KINDS; CLUSTER's associations; KEYS: the QOS
    attributes to read); RUN(argv) -> (rc, stdout, stderr), one listing after another, or
    RUN_ALL([argv, ...]) -> [(rc, stdout, stderr), ...] for all of them at once (the module
    runs them side by side: five sacctmgr round trips to slurmdbd in the time of one). Raises
    RuntimeError with sacctmgr's own message when slurmdbd cannot be asked, and names the
    QOS attribute sacctmgr does not know."""
    argvs = [show_argv(sacctmgr, kind, cluster, keys) for kind in KINDS]
    results = run_all(argvs) if run_all is not None else [run(argv) for argv in argvs]
    known: Dict[str, Any] = {}
    for kind, argv, (rc, out, err) in zip(KINDS, argvs, results):
        unknown = re.search(r"Unknown field '([^']*)'", out + err)
        if kind == "qos" and unknown:
            raise RuntimeError("slurm_accounting_qos: sacctmgr knows no QOS attribute %r (%s): use the names "
                               "sacctmgr(1) gives under SPECIFICATIONS FOR QOS (e.g. MaxWall, MaxTRESPerUser)."
                               % (unknown.group(1), " ".join(argv)))
        if rc != 0:
            raise RuntimeError("%s failed (rc %s): %s" % (" ".join(argv), rc, (err or out).strip()))
        rows = [line.split("|") for line in out.splitlines() if line.strip()]
        if kind == "assoc":
            rows = [(row + ["", "", "", ""])[:5] for row in rows]
            known[kind] = {(account.lower(), user) for account, user, _share, _qos, _default in rows}
            known["fairshare"] = {account.lower(): share for account, user, share, _qos, _default in rows
                                  if not user and share}
            known["assoc_qos"] = {account.lower(): (_names(qos), default.lower())
                                  for account, user, _share, qos, default in rows if not user}
        elif kind in ("cluster", "qos"):
            known[kind] = {row[0].strip().lower() for row in rows}
        if kind == "qos":
            known["qos_attributes"] = {row[0].strip().lower(): dict(zip((k.lower() for k in keys), row[1:] + [""] * len(keys)))
                                       for row in rows}
        if kind == "account":
            known["description"] = {row[0].strip().lower(): (row + [""])[1] for row in rows}
        if kind == "user":
            known["default_account"] = {}
            for row in rows:
                known["default_account"].setdefault(row[0].strip(), (row + [""])[1].strip())
    return known


def ensure(run: Callable[[List[str]], Result], params: Mapping[str, Any], check_mode: bool,
           installed: bool = True, run_all: Optional[Callable[[List[List[str]]], List[Result]]] = None) -> Dict[str, Any]:
    """List (with RUN_ALL where given, see known_names), plan and (unless CHECK_MODE) add;
    returns the module's result. Where sacctmgr is not INSTALLED yet (check mode on a fresh
    host) everything is planned."""
    sacctmgr = params["sacctmgr"]
    known = known_names(run, sacctmgr, run_all, params["cluster"], qos_keys(params["qos"])) if installed else {}
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


def _attribute_errors(where: str, attributes: Mapping[Any, Any]) -> List[str]:
    """A QOS's attributes: each key one word (sacctmgr's option name, also the field it is
    read back by), each value one line, and a flag or QOS list whole (a +/- change to the
    list is applied again on every run: no run could tell it is in place)."""
    out: List[str] = []
    for key, value in attributes.items():
        text = "" if value is None else "%s" % value
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z]+", key):
            out.append("%s: attribute %r is no sacctmgr QOS option: give its name as one word (e.g. MaxWall, "
                       "MaxTRESPerUser; sacctmgr(1), SPECIFICATIONS FOR QOS)." % (where, key))
        elif isinstance(value, (list, dict)) or "\n" in text:
            out.append("%s: attribute %s is %r: give one value on one line (a list as one comma-separated string)."
                       % (where, key, value))
        elif key.lower() in QOS_LISTS and text.strip()[:1] in ("+", "-") and text.strip() != "-1":
            out.append("%s: attribute %s is %r: give the whole list (e.g. DenyOnLimit,NoReserve; -1 for none), not a "
                       "change to it." % (where, key, value))
    return out


def _account_qos_errors(where: str, item: Mapping[str, Any], qos: Any) -> List[str]:
    """An account's `qos` (names slurm_accounting_qos gives) and `default_qos` (one of them)."""
    known = [q.get("name") for q in qos if isinstance(q, Mapping)] if isinstance(qos, list) else []
    names = item.get("qos")
    default = item.get("default_qos")
    if names is None:
        return ["%s: 'default_qos' is %r but 'qos' is not given: give the account's QOS list with it, e.g. qos: [normal, "
                "high]." % (where, default)] if default is not None else []
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return ["%s: 'qos' is %r: give a list of QOS names from slurm_accounting_qos, e.g. [normal, high]." % (where, names)]
    out = ["%s: 'qos' names %r, which slurm_accounting_qos does not give (%s): add it there, or take it out."
           % (where, name, ", ".join(map(str, known)) or "none") for name in names
           if name.lower() not in {str(k).lower() for k in known}]
    if default is not None and str(default).lower() not in {n.lower() for n in names}:
        out.append("%s: 'default_qos' is %r, which is not in its 'qos' %r: give one of them." % (where, default, names))
    return out


def errors(qos: Any, accounts: Any, users: Any) -> List[str]:
    """What is wrong with slurm_accounting_qos, _accounts and _users, one message each
    (empty when nothing): the preflight's check, before any host changes."""
    out: List[str] = []
    shapes = (("slurm_accounting_qos", qos, "{name, attributes}", ()),
              ("slurm_accounting_accounts", accounts, "{name, description, fairshare, qos, default_qos}", ()),
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
            elif var == "slurm_accounting_qos":
                out.extend(_attribute_errors(where, item.get("attributes") or {}))
            if var == "slurm_accounting_accounts":
                out.extend(_account_qos_errors(where, item, qos))
            if var == "slurm_accounting_accounts" and "fairshare" in item:
                share = item["fairshare"]
                if isinstance(share, bool) or not isinstance(share, int) or share < 0:
                    out.append("%s: 'fairshare' is %r: give a whole number of shares (0 or more)." % (where, share))
    return out
