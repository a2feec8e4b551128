"""slurm_accounting's logic: what to add from what slurmdbd lists, and the preflight's shape checks.

Pure logic: `run` below replays sacctmgr's output as text (a recorded stand-in, not slurmdbd).
The real sacctmgr and slurmdbd run in molecule/slurm_cluster (test_cluster_registered_with_accounting).
"""

from __future__ import annotations

import pytest

from ansible_collections.clusterdos.cluster.plugins.module_utils import slurm_accounting as sa

PARAMS = {"sacctmgr": "sacctmgr", "cluster": "Lab",
          "qos": [{"name": "normal"}, {"name": "high", "attributes": {"Priority": 100}}],
          "accounts": [{"name": "default", "description": "Default account", "fairshare": 1}],
          "users": [{"name": "nobody", "account": "default"}]}


def recorded(listing: dict, fail: set | None = None):
    """A stand-in for sacctmgr: `show KIND` prints LISTING[KIND] (for `show assoc`, whichever
    cluster it names); `add` records the call."""
    calls = []

    def run(argv):
        calls.append(argv)
        if argv[1] == "-i":
            return (1, "", "Problem adding") if argv[3] in (fail or set()) else (0, " Adding\n", "")
        return 0, listing.get(argv[4], ""), ""
    return run, calls


def test_fresh_slurmdbd_gets_everything_in_dependency_order():
    run, calls = recorded({})
    result = sa.ensure(run, PARAMS, check_mode=False)
    assert result["added"] == ["cluster Lab", "qos normal", "qos high", "account default", "user nobody"]
    adds = [c for c in calls if c[1] == "-i"]
    assert adds[0] == ["sacctmgr", "-i", "add", "cluster", "Lab"]
    assert adds[2] == ["sacctmgr", "-i", "add", "qos", "high", "Priority=100"]
    assert adds[3] == ["sacctmgr", "-i", "add", "account", "default", "cluster=Lab", "description=Default account",
                       "fairshare=1"]
    assert adds[4] == ["sacctmgr", "-i", "add", "user", "nobody", "account=default", "cluster=Lab"]
    assert result["changed"] is True and result["diff"]["after"].startswith("cluster Lab\n")


def test_what_exists_is_not_added_again_names_compare_as_slurmdbd_stores_them():
    run, calls = recorded({"cluster": "lab\n", "qos": "normal|\nhigh|100\n", "assoc": "root|\nroot|root\nDefault|\n"})
    result = sa.ensure(run, PARAMS, check_mode=False)
    assert result["added"] == ["user nobody"]
    run, calls = recorded({"cluster": "lab\n", "qos": "normal|\nhigh|100\n", "assoc": "default|\ndefault|nobody\n"})
    result = sa.ensure(run, PARAMS, check_mode=False)
    assert result == {"changed": False, "added": [], "modified": [], "diff": {}}
    assert all(c[1] != "-i" for c in calls)
    # The associations are asked for this cluster's (its name as slurmdbd stores it).
    assert ["sacctmgr", "--noheader", "--parsable2", "show", "assoc", "cluster=lab", "format=account,user,fairshare,qos,defaultqos"] in calls


def test_an_account_or_user_another_cluster_has_still_gets_its_association_on_this_one():
    """One slurmdbd, a second cluster: the account and user exist (on the first cluster), yet
    this cluster's associations lack them, so both are added here (as found on a lab whose
    cluster was renamed: the new name had only root's associations)."""
    run, calls = recorded({"cluster": "lab\nother\n", "qos": "normal|\nhigh|100\n", "assoc": "root|\nroot|root\n"})
    assert sa.ensure(run, PARAMS, check_mode=False)["added"] == ["account default", "user nobody"]
    # A user listed with a second account gets that association too.
    params = dict(PARAMS, accounts=PARAMS["accounts"] + [{"name": "gpu"}],
                  users=PARAMS["users"] + [{"name": "nobody", "account": "gpu"}])
    run, calls = recorded({"cluster": "lab\n", "qos": "normal|\nhigh|100\n", "assoc": "default|\ndefault|nobody\ngpu|\n"})
    result = sa.ensure(run, params, check_mode=False)
    assert result["added"] == ["user nobody"]
    assert [c for c in calls if c[1] == "-i"] == [["sacctmgr", "-i", "add", "user", "nobody", "account=gpu", "cluster=Lab"]]


def test_an_accounts_changed_fair_share_is_set_where_the_inventory_gives_one():
    """An admin changes an account's fairshare in the inventory: before, the account existed
    and nothing happened (attributes applied at creation only). Now the account's share on
    this cluster is read with its association and set where it differs; an account the
    inventory gives no fairshare keeps the one slurmdbd has (set by hand), and users' shares
    are not touched."""
    params = dict(PARAMS, accounts=[{"name": "Default", "fairshare": 5}, {"name": "gpu"}])
    listing = {"cluster": "lab\n", "qos": "normal|\nhigh|100\n",
               "assoc": "root|||\nroot|root|1\ndefault||1\ndefault|nobody|1\ngpu||7\n"}
    run, calls = recorded(listing)
    result = sa.ensure(run, params, check_mode=True)
    assert result["added"] == [] and result["modified"] == ["fairshare of account Default (5, was 1)"]
    assert result["changed"] is True and result["diff"]["after"] == "fairshare of account Default (5, was 1)\n"
    assert all(c[1] != "-i" for c in calls)
    run, calls = recorded(listing)
    sa.ensure(run, params, check_mode=False)
    assert [c for c in calls if c[1] == "-i"] == [["sacctmgr", "-i", "modify", "account", "where", "name=Default",
                                                    "cluster=Lab", "set", "fairshare=5"]]
    run, calls = recorded(dict(listing, assoc="default||5\ndefault|nobody|1\ngpu||7\n"))
    assert sa.ensure(run, params, check_mode=False)["changed"] is False
    # A new account is added with its share, not modified as well.
    run, calls = recorded(dict(listing, assoc=""))
    result = sa.ensure(run, params, check_mode=False)
    assert result["modified"] == [] and "account Default" in result["added"]
    run, _ = recorded(listing, fail={"account"})
    with pytest.raises(RuntimeError, match=r"setting the fairshare of account Default \(5, was 1\) in slurmdbd failed"):
        sa.ensure(run, params, check_mode=False)


def test_check_mode_lists_but_adds_nothing_and_plans_everything_where_sacctmgr_is_missing():
    run, calls = recorded({"cluster": "lab\n"})
    assert sa.ensure(run, PARAMS, check_mode=True)["added"] == ["qos normal", "qos high", "account default", "user nobody"]
    assert all(c[1] != "-i" for c in calls)
    run, calls = recorded({})
    assert len(sa.ensure(run, PARAMS, check_mode=True, installed=False)["added"]) == 5 and calls == []


def test_listings_run_side_by_side_give_what_one_after_another_gives():
    """RUN_ALL gets the five listings in one call (the module starts them at once); the plan
    and the adds are the same as with one listing after another."""
    listing = {"cluster": "lab\n", "qos": "normal\n", "assoc": ""}
    run, calls = recorded(listing)
    batches = []

    def run_all(argvs):
        batches.append(argvs)
        return [run(argv) for argv in argvs]
    side_by_side = sa.ensure(run, PARAMS, check_mode=False, run_all=run_all)
    assert len(batches) == 1 and [argv[4] for argv in batches[0]] == ["cluster", "qos", "assoc", "account", "user"]
    run2, _ = recorded(listing)
    assert side_by_side == sa.ensure(run2, PARAMS, check_mode=False)
    assert side_by_side["added"] == ["qos high", "account default", "user nobody"]
    with pytest.raises(RuntimeError, match="show qos format=name failed .*Connection refused"):
        sa.known_names(None, "sacctmgr", lambda argvs: [(0, "", "")] + [(1, "", "Connection refused")] * 4)


def test_a_failed_add_or_listing_says_which_and_why():
    run, _ = recorded({}, fail={"account"})
    with pytest.raises(RuntimeError, match="adding account default to slurmdbd failed .*Problem adding"):
        sa.ensure(run, PARAMS, check_mode=False)
    with pytest.raises(RuntimeError, match="show cluster format=cluster failed .*Connection refused"):
        sa.known_names(lambda argv: (1, "", "sacctmgr: error: Connection refused"), "sacctmgr")


def test_preflight_names_each_bad_item():
    assert sa.errors(PARAMS["qos"], PARAMS["accounts"], PARAMS["users"]) == []
    found = sa.errors([{"name": "hi gh"}, {"name": "x", "attributes": ["Priority=1"]}],
                      [{"description": "no name"}, {"name": "a", "fairshare": -1}],
                      [{"name": "alice"}, "bob"])
    assert found == [
        "slurm_accounting_qos[0]: 'name' is 'hi gh': give a name without spaces ({name, attributes}).",
        "slurm_accounting_qos[1]: 'attributes' is ['Priority=1']: give a mapping of QOS settings, e.g. {Priority: 100}.",
        "slurm_accounting_accounts[0]: 'name' is None: give a name without spaces ({name, description, fairshare, qos, "
        "default_qos}).",
        "slurm_accounting_accounts[1]: 'fairshare' is -1: give a whole number of shares (0 or more).",
        "slurm_accounting_users[0]: 'account' is None: give a name without spaces ({name, account}).",
        "slurm_accounting_users[1] is 'bob': give {name, account}.",
    ]
    assert sa.errors({"name": "x"}, [], []) == ["slurm_accounting_qos is {'name': 'x'}: give a list of {name, attributes}."]


# (inventory value, what sacctmgr 22.05 showed for it on the lab) per QOS attribute: each pair
# was set with `sacctmgr modify qos` and read back with `sacctmgr show qos format=...`.
SHOWN_ON_THE_LAB = [
    ("Priority", 100, "100"), ("MaxWall", 90, "01:30:00"), ("MaxWall", "5:30", "00:06:00"),
    ("MaxWall", "2-00:00:00", "2-00:00:00"), ("MaxWall", "UNLIMITED", ""), ("MaxWall", -1, ""),
    ("GrpWall", 30, "00:30:00"), ("GraceTime", 120, "00:02:00"), ("GraceTime", 90, "00:01:30"),
    ("PreemptExemptTime", 10, "00:10:00"), ("MaxTRESPerUser", "mem=4096,cpu=4,node=1", "cpu=4,mem=4G,node=1"),
    ("MaxTRESPerUser", "mem=4G,cpu=4", "cpu=4,mem=4G"), ("MaxTRESMins", "cpu=100", "cpu=100"),
    ("Flags", "NoReserve,DenyOnLimit", "DenyOnLimit,NoReserve"), ("Flags", -1, ""),
    ("UsageFactor", 2, "2.000000"), ("UsageThreshold", 0.5, "0.500000"), ("MaxJobsPerUser", 5, "5"),
    ("Description", "High prio", "high prio"), ("PreemptMode", "REQUEUE", "requeue"), ("Preempt", "normal", "normal"),
]


@pytest.mark.parametrize("key,given,shown", SHOWN_ON_THE_LAB)
def test_a_qos_attribute_compares_equal_to_the_form_sacctmgr_shows_it_in(key, given, shown):
    assert sa.qos_value_same(key, given, shown)


@pytest.mark.parametrize("key,given,shown", [
    ("Priority", 200, "100"), ("MaxWall", 90, "01:00:00"), ("MaxWall", 90, ""), ("MaxWall", -1, "01:30:00"),
    ("GraceTime", 120, "00:01:00"), ("MaxTRESPerUser", "cpu=8", "cpu=4"), ("MaxTRESPerUser", "cpu=4,mem=4G", "cpu=4"),
    ("Flags", "NoReserve", "DenyOnLimit,NoReserve"), ("Description", "Low", "high prio"), ("MaxWall", "soon", "01:00:00"),
])
def test_a_changed_qos_attribute_differs(key, given, shown):
    assert not sa.qos_value_same(key, given, shown)


def test_an_existing_qos_gets_the_attributes_that_differ_and_an_account_its_description():
    """An admin changes the high QOS's Priority and adds a MaxWall, and gives the account a new
    description: before, both existed and nothing happened (applied at creation only; the
    run said nothing). Now the QOS listing reads the keys given, and only those that differ
    from what slurmdbd shows are set; the description likewise (sacctmgr keeps it in lower
    case, so case alone is no change). A key the inventory leaves out is not touched."""
    params = dict(PARAMS, qos=[{"name": "normal"}, {"name": "High", "attributes": {"Priority": 200, "MaxWall": "1:30:00",
                                                                                    "UsageFactor": 2}}],
                  accounts=[{"name": "default", "description": "Research and development"}])
    listing = {"cluster": "lab\n", "qos": "normal|||\nhigh|100||2.000000\n", "assoc": "default||1\ndefault|nobody|1\n",
               "account": "default|default account\nroot|default root account\n"}
    run, calls = recorded(listing)
    result = sa.ensure(run, params, check_mode=True)
    assert ["sacctmgr", "--noheader", "--parsable2", "show", "qos", "format=name,Priority,MaxWall,UsageFactor"] in calls
    assert result["modified"] == ["attributes of qos High (MaxWall=1:30:00 Priority=200; MaxWall was unset, Priority was 100)",
                                  "description of account default ('Research and development', was 'default account')"]
    assert all(c[1] != "-i" for c in calls)
    run, calls = recorded(listing)
    sa.ensure(run, params, check_mode=False)
    assert [c for c in calls if c[1] == "-i"] == [
        ["sacctmgr", "-i", "modify", "qos", "where", "name=High", "set", "MaxWall=1:30:00", "Priority=200"],
        ["sacctmgr", "-i", "modify", "account", "where", "name=default", "set", "description=Research and development"]]
    # What sacctmgr then shows is no change; nor is a description differing only in case.
    run, calls = recorded(dict(listing, qos="normal|||\nhigh|200|01:30:00|2.000000\n",
                               account="default|research and development\n"))
    assert sa.ensure(run, params, check_mode=False) == {"changed": False, "added": [], "modified": [], "diff": {}}
    # A key given no value is not given (left out of an add as well): nothing to set.
    run, calls = recorded(dict(listing, qos="normal|||\nhigh|200|01:30:00|2.000000\n",
                               account="default|research and development\n"))
    nulls = dict(params, qos=[{"name": "High", "attributes": {"Priority": 200, "MaxWall": None, "UsageFactor": ""}}])
    assert sa.ensure(run, nulls, check_mode=False)["changed"] is False
    # A new QOS is added with all its attributes, not modified as well; RawUsage is never read.
    params = dict(params, qos=[{"name": "low", "attributes": {"Priority": 1, "RawUsage": 0}}])
    run, calls = recorded(listing)
    result = sa.ensure(run, params, check_mode=False)
    assert result["added"] == ["qos low"] and not any("qos low" in label for label in result["modified"])
    assert ["sacctmgr", "-i", "add", "qos", "low", "Priority=1", "RawUsage=0"] in calls
    assert ["sacctmgr", "--noheader", "--parsable2", "show", "qos", "format=name,Priority"] in calls


def test_a_qos_attribute_sacctmgr_does_not_know_is_named():
    def run(argv):
        if argv[4] == "qos":
            return 1, "Unknown field 'maxsubmitperuser'\n", ""
        return 0, "", ""
    params = dict(PARAMS, qos=[{"name": "high", "attributes": {"MaxSubmitPerUser": 5}}])
    with pytest.raises(RuntimeError, match="slurm_accounting_qos: sacctmgr knows no QOS attribute 'maxsubmitperuser'"):
        sa.ensure(run, params, check_mode=True)


def test_preflight_names_each_bad_qos_attribute():
    found = sa.errors([{"name": "high", "attributes": {"Max Wall": 5, "Flags": "+NoReserve", "MaxTRES": ["cpu=1"],
                                                        "Preempt": "-1", "Description": "two\nlines"}}], [], [])
    assert found == [
        "slurm_accounting_qos[0]: attribute 'Max Wall' is no sacctmgr QOS option: give its name as one word (e.g. "
        "MaxWall, MaxTRESPerUser; sacctmgr(1), SPECIFICATIONS FOR QOS).",
        "slurm_accounting_qos[0]: attribute Flags is '+NoReserve': give the whole list (e.g. DenyOnLimit,NoReserve; "
        "-1 for none), not a change to it.",
        "slurm_accounting_qos[0]: attribute MaxTRES is ['cpu=1']: give one value on one line (a list as one "
        "comma-separated string).",
        "slurm_accounting_qos[0]: attribute Description is 'two\\nlines': give one value on one line (a list as one "
        "comma-separated string).",
    ]


def test_a_user_moved_to_another_account_gets_it_as_default_account():
    """nobody moved from `default` to `research` in the inventory: before, the run added the
    research association and left the default account `default` (jobs without -A still went
    there, to an account the inventory no longer lists; found on the lab). Now the first
    account the inventory lists a user with is its default on this cluster; the old
    association stays (nothing is removed)."""
    params = dict(PARAMS, accounts=[{"name": "default"}, {"name": "research"}],
                  users=[{"name": "nobody", "account": "research"}, {"name": "nobody", "account": "default"}])
    listing = {"cluster": "lab\n", "qos": "normal|\nhigh|100\n", "assoc": "default||1\ndefault|nobody|1\nresearch||1\n",
               "user": "nobody|default\nroot|root\n"}
    run, calls = recorded(listing)
    result = sa.ensure(run, params, check_mode=False)
    assert result["added"] == ["user nobody"]
    assert result["modified"] == ["default account of user nobody (research, was default)"]
    assert [c for c in calls if c[1] == "-i"] == [
        ["sacctmgr", "-i", "add", "user", "nobody", "account=research", "cluster=Lab"],
        ["sacctmgr", "-i", "modify", "user", "where", "name=nobody", "cluster=Lab", "set", "defaultaccount=research"]]
    assert ["sacctmgr", "--noheader", "--parsable2", "show", "user", "withassoc", "where", "cluster=lab",
            "format=user,defaultaccount"] in calls
    # Once it is the default (one row per association), nothing; a user new to the cluster
    # gets its default with its first association.
    run, calls = recorded(dict(listing, assoc=listing["assoc"] + "research|nobody|1\n",
                               user="nobody|research\nnobody|research\n"))
    assert sa.ensure(run, params, check_mode=False)["changed"] is False
    run, calls = recorded(dict(listing, assoc="default||1\nresearch||1\n", user="root|root\n"))
    assert sa.ensure(run, params, check_mode=False)["modified"] == []


def test_an_accounts_qos_are_set_on_its_association_and_checked_in_the_preflight():
    """The role creates a `high` QOS, but no association may use it (the root association and
    the accounts under it have `normal` only; on the lab `srun --qos=high` was refused,
    "Invalid qos specification", for root and users alike). An account's `qos` and
    `default_qos` are now set on its association when it is added, and where the listing
    shows others (its users' associations inherit them)."""
    params = dict(PARAMS, accounts=[{"name": "default", "qos": ["normal", "High"], "default_qos": "normal"}], users=[])
    run, calls = recorded({"cluster": "lab\n", "qos": "normal|\nhigh|100\n"})
    sa.ensure(run, params, check_mode=False)
    assert ["sacctmgr", "-i", "add", "account", "default", "cluster=Lab", "description=default", "fairshare=1",
            "qos=normal,High", "defaultqos=normal"] in calls
    listing = {"cluster": "lab\n", "qos": "normal|\nhigh|100\n", "assoc": "root||1|normal|\ndefault||1|normal|\n"}
    run, calls = recorded(listing)
    result = sa.ensure(run, params, check_mode=False)
    assert result["modified"] == ["qos of account default (high,normal, default normal, was normal, default none)"]
    assert [c for c in calls if c[1] == "-i"] == [["sacctmgr", "-i", "modify", "account", "where", "name=default",
                                                    "cluster=Lab", "set", "qos=normal,High", "defaultqos=normal"]]
    run, calls = recorded(dict(listing, assoc="default||1|high,normal|normal\ndefault|nobody|1|high,normal|normal\n"))
    assert sa.ensure(run, params, check_mode=False)["changed"] is False
    # An account given no qos keeps what slurmdbd holds; one given no default_qos its default.
    run, calls = recorded(dict(listing, assoc="default||1|high,normal|normal\n"))
    assert sa.ensure(run, dict(params, accounts=[{"name": "default"}]), check_mode=False)["changed"] is False
    run, calls = recorded(dict(listing, assoc="default||1|high,normal|high\n"))
    assert sa.ensure(run, dict(params, accounts=[{"name": "default", "qos": ["high", "normal"]}]),
                     check_mode=False)["changed"] is False
    assert sa.errors(PARAMS["qos"], [{"name": "a", "qos": ["normal", "gold"], "default_qos": "high"},
                                     {"name": "b", "default_qos": "normal"}, {"name": "c", "qos": "normal"}], []) == [
        "slurm_accounting_accounts[0]: 'qos' names 'gold', which slurm_accounting_qos does not give (normal, high): add it "
        "there, or take it out.",
        "slurm_accounting_accounts[0]: 'default_qos' is 'high', which is not in its 'qos' ['normal', 'gold']: give one of "
        "them.",
        "slurm_accounting_accounts[1]: 'default_qos' is 'normal' but 'qos' is not given: give the account's QOS list with "
        "it, e.g. qos: [normal, high].",
        "slurm_accounting_accounts[2]: 'qos' is 'normal': give a list of QOS names from slurm_accounting_qos, e.g. "
        "[normal, high].",
    ]
