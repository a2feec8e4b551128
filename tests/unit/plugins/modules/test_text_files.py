"""text_files: several files and directories in one call, run for real on files under tmp_path.

The module's main() runs with real arguments; owner and group are this process's own user's
(root in CI; the names are read, not assumed).
"""

from __future__ import annotations

import base64
import grp
import json
import os
import pwd
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.clusterdos.cluster.plugins.modules import text_files

OWNER = pwd.getpwuid(os.getuid()).pw_name
GROUP = grp.getgrgid(os.getgid()).gr_name


def run(capsys, args, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    with patch_module_args(args), pytest.raises(SystemExit):
        text_files.main()
    return json.loads(capsys.readouterr().out)


def spec(tmp_path, conf="a = 1\n", restart="r = 1\n"):
    return {
        "directories": [{"path": str(tmp_path / "etc"), "owner": OWNER, "group": GROUP},
                        {"path": str(tmp_path / "state" / "deep"), "mode": "0700", "owner": OWNER, "group": GROUP}],
        "files": [{"path": str(tmp_path / "etc" / "a.conf"), "content": conf, "tag": "reconfigure", "owner": OWNER, "group": GROUP},
                  {"path": str(tmp_path / "state" / "deep" / "x.restart"), "content": restart, "tag": "restart",
                   "mode": "0600", "owner": OWNER, "group": GROUP}],
    }


def test_writes_everything_once_then_reports_nothing(tmp_path, capsys):
    first = run(capsys, spec(tmp_path))
    assert first["changed"] is True
    assert first["changed_tags"] == ["reconfigure", "restart"]
    assert (tmp_path / "etc" / "a.conf").read_text() == "a = 1\n"
    assert stat.S_IMODE((tmp_path / "state" / "deep").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state" / "deep" / "x.restart").stat().st_mode) == 0o600
    again = run(capsys, spec(tmp_path))
    assert again["changed"] is False
    assert again["changed_tags"] == [] and again["changed_paths"] == []


def test_only_the_changed_file_is_tagged_and_diffed(tmp_path, capsys):
    run(capsys, spec(tmp_path))
    result = run(capsys, spec(tmp_path, restart="r = 2\n"), diff=True)
    assert result["changed_tags"] == ["restart"]
    assert result["diff"] == [{"before_header": str(tmp_path / "state" / "deep" / "x.restart"),
                               "after_header": str(tmp_path / "state" / "deep" / "x.restart"),
                               "before": "r = 1\n", "after": "r = 2\n"}]


def test_check_mode_reports_and_writes_nothing(tmp_path, capsys):
    result = run(capsys, spec(tmp_path), check=True)
    assert result["changed"] is True and result["changed_tags"] == ["reconfigure", "restart"]
    assert not (tmp_path / "etc").exists()
    run(capsys, spec(tmp_path))
    (tmp_path / "etc" / "a.conf").chmod(0o600)
    drift = run(capsys, spec(tmp_path), check=True)
    assert drift["changed_paths"] == [str(tmp_path / "etc" / "a.conf")]
    assert stat.S_IMODE((tmp_path / "etc" / "a.conf").stat().st_mode) == 0o600


def test_a_mode_change_alone_is_corrected_and_tagged(tmp_path, capsys):
    run(capsys, spec(tmp_path))
    (tmp_path / "etc" / "a.conf").chmod(0o600)
    result = run(capsys, spec(tmp_path))
    assert result["changed_tags"] == ["reconfigure"]
    assert stat.S_IMODE((tmp_path / "etc" / "a.conf").stat().st_mode) == 0o644


def test_a_bad_mode_fails_naming_the_file(tmp_path, capsys):
    args = spec(tmp_path)
    args["files"][0]["mode"] = "rw-r--r--"
    result = run(capsys, args)
    assert result["failed"] is True
    assert "a.conf: mode 'rw-r--r--' is not an octal number" in result["msg"]
    assert not (tmp_path / "etc" / "a.conf").exists()


def test_replaces_a_file_that_is_not_text(tmp_path, capsys):
    """A package's own binary munge key (not UTF-8) is replaced by the cluster's key, not a crash."""
    (tmp_path / "etc").mkdir()
    key = tmp_path / "etc" / "a.conf"
    key.write_bytes(b"\x00\x82\xff binary key")
    result = run(capsys, spec(tmp_path, conf="cluster-key"))
    assert result["changed"] is True
    assert key.read_text() == "cluster-key"
    assert run(capsys, spec(tmp_path, conf="cluster-key"))["changed"] is False


MARKER = "# {mark} clusterdos.cluster.base: cluster hosts"


def test_a_block_goes_at_the_end_then_is_replaced_in_place(tmp_path, capsys):
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n::1 localhost")  # no newline at the end
    item = {"path": str(hosts), "block": "10.0.0.1 a\n", "marker": MARKER, "owner": OWNER, "group": GROUP}
    first = run(capsys, {"files": [item]})
    assert first["changed"] is True
    assert hosts.read_text() == ("127.0.0.1 localhost\n::1 localhost\n# BEGIN clusterdos.cluster.base: cluster hosts\n"
                                 "10.0.0.1 a\n# END clusterdos.cluster.base: cluster hosts\n")
    assert run(capsys, {"files": [item]})["changed"] is False
    hosts.write_text(hosts.read_text() + "192.0.2.9 other\n")
    second = run(capsys, {"files": [dict(item, block="10.0.0.1 a\n10.0.0.2 b")]})
    assert second["changed"] is True
    assert hosts.read_text() == ("127.0.0.1 localhost\n::1 localhost\n# BEGIN clusterdos.cluster.base: cluster hosts\n"
                                 "10.0.0.1 a\n10.0.0.2 b\n# END clusterdos.cluster.base: cluster hosts\n192.0.2.9 other\n")
    run(capsys, {"files": [dict(item, block="")]})
    assert hosts.read_text() == "127.0.0.1 localhost\n::1 localhost\n192.0.2.9 other\n"


def test_a_block_is_written_byte_for_byte_as_blockinfile_writes_it(tmp_path, capsys):
    """The real blockinfile module on one copy, text_files on another, from the same start:
    a file blockinfile wrote (an upgrade) is not rewritten."""
    from ansible.modules import blockinfile

    starts = ["", "127.0.0.1 localhost\n", "a\nb", "x\n# BEGIN clusterdos.cluster.base: cluster hosts\nold\n"
              "# END clusterdos.cluster.base: cluster hosts\ny\n"]
    for number, start in enumerate(starts):
        ours, theirs = tmp_path / f"ours{number}", tmp_path / f"theirs{number}"
        ours.write_text(start)
        theirs.write_text(start)
        with patch_module_args({"path": str(theirs), "block": "10.0.0.1 a\n10.0.0.2 b\n", "marker": MARKER}), \
                pytest.raises(SystemExit):
            blockinfile.main()
        capsys.readouterr()
        run(capsys, {"files": [{"path": str(ours), "block": "10.0.0.1 a\n10.0.0.2 b\n", "marker": MARKER,
                                "owner": OWNER, "group": GROUP}]})
        assert ours.read_bytes() == theirs.read_bytes(), start


def test_content_and_block_together_are_refused(tmp_path, capsys):
    result = run(capsys, {"files": [{"path": str(tmp_path / "f"), "content": "x", "block": "y", "marker": MARKER}]})
    assert result["failed"] is True and "mutually exclusive" in result["msg"]
    result = run(capsys, {"files": [{"path": str(tmp_path / "f"), "block": "y"}]})
    assert result["failed"] is True and "marker" in result["msg"]


def test_a_block_file_is_read_once_per_call(tmp_path, capsys, monkeypatch):
    """The block goes into what the file holds and the result is compared with it: one read."""
    from ansible_collections.clusterdos.cluster.plugins.module_utils import text_file

    reads = []
    real = text_file._read_bytes
    monkeypatch.setattr(text_file, "_read_bytes", lambda path: reads.append(path) or real(path))
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    item = {"path": str(hosts), "block": "10.0.0.1 a\n", "marker": MARKER, "owner": OWNER, "group": GROUP}
    assert run(capsys, {"files": [item]})["changed"] is True
    assert run(capsys, {"files": [item]})["changed"] is False
    assert reads == [str(hosts), str(hosts)]


def write_once(tmp_path, key):
    """The munge role's use: a key and its marker, written only while the marker is absent, the key read back."""
    return {"creates": str(tmp_path / "marker"),
            "files": [{"path": str(tmp_path / "key"), "content": key, "mode": "0400", "owner": OWNER, "group": GROUP,
                       "return_content": True},
                      {"path": str(tmp_path / "marker"), "content": "generated\n", "owner": OWNER, "group": GROUP}]}


def test_creates_writes_once_and_return_content_reads_back_what_is_there(tmp_path, capsys):
    # A key already there without the marker (a package's own) is replaced, and read back.
    (tmp_path / "key").write_bytes(b"\x00\x01 package's binary key")
    first = run(capsys, write_once(tmp_path, "first-key-0123456789"))
    assert first["changed"] is True and sorted(first["changed_paths"]) == [str(tmp_path / "key"), str(tmp_path / "marker")]
    assert base64.b64decode(first["contents"][str(tmp_path / "key")]) == b"first-key-0123456789"
    assert list(first["contents"]) == [str(tmp_path / "key")]
    # Once the marker exists nothing is written, whatever the content asked for; the key is read.
    again = run(capsys, write_once(tmp_path, "another-key-9876543210"))
    assert again["changed"] is False and again["changed_paths"] == []
    assert base64.b64decode(again["contents"][str(tmp_path / "key")]) == b"first-key-0123456789"
    assert (tmp_path / "key").read_bytes() == b"first-key-0123456789"


def test_check_mode_returns_the_content_it_would_write(tmp_path, capsys):
    result = run(capsys, write_once(tmp_path, "would-be-key-0123456789"), check=True)
    assert result["changed"] is True
    assert base64.b64decode(result["contents"][str(tmp_path / "key")]) == b"would-be-key-0123456789"
    assert not (tmp_path / "key").exists() and not (tmp_path / "marker").exists()


def test_a_binary_key_read_back_is_installed_byte_for_byte_elsewhere(tmp_path, capsys):
    """The source host's key is not text after the marker (munge reinstalled there, the package
    made its own binary key): it is read back and installed on another host's path from
    content_base64, the same bytes, then reported unchanged; a diff shows it without a crash."""
    run(capsys, write_once(tmp_path, "first-key-0123456789"))
    binary = bytes(range(256)) * 4
    (tmp_path / "key").write_bytes(binary)
    read = run(capsys, write_once(tmp_path, "ignored-key-0123456789"))
    assert read["changed"] is False
    encoded = read["contents"][str(tmp_path / "key")]
    assert base64.b64decode(encoded) == binary
    other = {"files": [{"path": str(tmp_path / "other" / "key"), "content_base64": encoded, "mode": "0400",
                        "owner": OWNER, "group": GROUP, "return_content": True}]}
    installed = run(capsys, other, diff=True)
    assert installed["changed"] is True and installed.get("failed") is not True, installed
    assert (tmp_path / "other" / "key").read_bytes() == binary
    assert stat.S_IMODE((tmp_path / "other" / "key").stat().st_mode) == 0o400
    assert installed["contents"][str(tmp_path / "other" / "key")] == encoded
    assert len(installed["diff"]) == 1 and installed["diff"][0]["before"] == ""
    assert run(capsys, other)["changed"] is False


def test_content_base64_that_is_not_base64_fails_naming_the_file(tmp_path, capsys):
    result = run(capsys, {"files": [{"path": str(tmp_path / "key"), "content_base64": "not base64!"}]})
    assert result["failed"] is True
    assert "key: content_base64 is not base64" in result["msg"]
    assert not (tmp_path / "key").exists()
    result = run(capsys, {"files": [{"path": str(tmp_path / "key"), "content": "x", "content_base64": "eA=="}]})
    assert result["failed"] is True and "mutually exclusive" in result["msg"]


def test_absent_files_are_removed_once_tagged_and_diffed_and_kept_in_check_mode(tmp_path, capsys):
    """A file the caller no longer manages (the Slurm role's slurm.conf copy on a node that
    turned configless): removed where it is, reported with its tag and its text in the diff;
    check mode reports and removes nothing; a second call, or a path that is missing or a
    directory, changes nothing."""
    run(capsys, spec(tmp_path))
    stale = tmp_path / "etc" / "a.conf"
    args = {"files": [], "absent": [{"path": str(stale), "tag": "gone"}, {"path": str(tmp_path / "missing.conf")},
                                     {"path": str(tmp_path / "state")}]}
    dry = run(capsys, args, check=True, diff=True)
    assert dry["changed"] is True and dry["changed_tags"] == ["gone"] and dry["changed_paths"] == [str(stale)]
    assert stale.read_text() == "a = 1\n"
    removed = run(capsys, args, diff=True)
    assert removed["changed_paths"] == [str(stale)] and removed["changed_tags"] == ["gone"]
    assert removed["diff"] == [{"before_header": str(stale), "after_header": str(stale), "before": "a = 1\n",
                                "after": "(absent)\n"}]
    assert not stale.exists() and (tmp_path / "state").is_dir()
    again = run(capsys, args)
    assert again["changed"] is False and again["changed_paths"] == [] and again["changed_tags"] == []


def test_a_directory_kept_as_it_is_is_only_created_where_missing(tmp_path, capsys):
    """keep_existing: a missing directory is made with the mode asked for; an existing one (a
    shared log directory such as /var/log) keeps its mode, and nothing is reported."""
    shared, new = tmp_path / "log", tmp_path / "log-new" / "slurm"
    shared.mkdir(mode=0o775)
    shared.chmod(0o775)
    args = {"directories": [{"path": str(d), "mode": "0750", "owner": OWNER, "group": GROUP, "keep_existing": True}
                            for d in (shared, new)], "files": []}
    first = run(capsys, args)
    assert first["changed_paths"] == [str(new)]
    assert stat.S_IMODE(new.stat().st_mode) == 0o750 and stat.S_IMODE(shared.stat().st_mode) == 0o775
    new.chmod(0o700)
    again = run(capsys, args)
    assert again["changed"] is False and stat.S_IMODE(new.stat().st_mode) == 0o700
