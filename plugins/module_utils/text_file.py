# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Write a text file only when its content differs, atomically: the modules that write
files on a host (cluster_report's reports, converge_stamp's records, text_files's
configuration files) share this."""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any, Dict, List, Optional, Tuple, Union


_UNREAD = object()


def write_text(module: Any, path: str, text: Union[str, bytes], dir_mode: int = 0o755,
               mode: Optional[int] = None, current: Any = _UNREAD) -> Tuple[bool, Optional[str]]:
    """Write TEXT (str, written as UTF-8, or bytes, written as they are) to PATH unless it
    already holds it; nothing is written in check mode.

    Returns (changed, the text before, or None when there was no file). The directory is
    created with DIR_MODE when missing; MODE, when given, is set on a file written here.
    CURRENT: what the caller has just read from PATH (_read_bytes), so it is not read twice.
    """
    before = None
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    # Compared as bytes: what is there may not be text (a package's binary munge key).
    raw = _read_bytes(path) if current is _UNREAD else current
    if raw is not None:
        before = raw.decode("utf-8", errors="replace")
        if raw == data:
            return False, before
    if module.check_mode:
        return True, before
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, dir_mode)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".%s." % os.path.basename(path))
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    module.atomic_move(tmp, path)
    if mode is not None:
        os.chmod(path, mode)
    return True, before


def with_block(current: Optional[str], marker: str, block: str) -> str:
    """CURRENT (a file's text, None when there is none) with BLOCK between MARKER's BEGIN
    and END lines ({mark} in MARKER stands for each), as ansible.builtin.blockinfile writes
    it with its defaults: the block replaces the one already there, or goes at the end; an
    empty BLOCK removes it, markers included. The same bytes, so that a file blockinfile
    wrote is not rewritten."""
    lines = current.splitlines(True) if current else []
    begin = marker.replace("{mark}", "BEGIN") + "\n"
    end = marker.replace("{mark}", "END") + "\n"
    if block and not block.endswith("\n"):
        block += "\n"
    block_lines = [begin] + block.splitlines(True) + [end] if block else []
    first = last = None
    for index, line in enumerate(lines):
        if line == begin:
            first = index
        if line == end:
            last = index
    if first is None or last is None:
        first = len(lines)
    elif first < last:
        del lines[first:last + 1]
    else:
        del lines[last:first + 1]
        first = last
    if first > 0 and not lines[first - 1].endswith("\n"):
        lines[first - 1] += "\n"
    lines[first:first] = block_lines
    return "".join(lines)


def _read_bytes(path: str) -> Optional[bytes]:
    """What PATH holds, None when it is not a file."""
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return handle.read()


def _contents(files: List[Dict[str, Any]], written: Dict[str, bytes]) -> Dict[str, str]:
    """{path: base64 of its bytes} for each file asked for (return_content): WRITTEN's bytes where
    this call gave the file its text (what it holds now, or in check mode what it would hold),
    else what the file holds, read here (a call that wrote nothing: CREATES existed)."""
    out: Dict[str, str] = {}
    for item in files:
        if not item.get("return_content"):
            continue
        path = item["path"]
        raw = written[path] if path in written else _read_bytes(path)
        if raw is not None:
            out[path] = base64.b64encode(raw).decode("ascii")
    return out


def ensure_files(module: Any, files: List[Dict[str, Any]], directories: List[Dict[str, Any]],
                 creates: Optional[str] = None, absent: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Make DIRECTORIES exist and FILES hold their text, owner, group and mode, in one call
    (the text_files module): one round trip for what took a task per file.

    Each directory: path, mode (octal string), owner, group. Each file: path, content, mode,
    owner, group and tag (a name the caller acts on when that file changed); instead of
    content, content_base64 (bytes that need not be text: a munge key another host holds),
    or block and marker: that block within what the file holds (with_block). Returns changed,
    changed_paths, changed_tags (sorted, unique), the diff (one entry per changed file) and
    contents (the files with return_content, base64). Each of ABSENT (path, tag) is removed
    where it is a file: a file the caller no longer manages there (the Slurm role's copies on a
    node that turned configless). Nothing is written or removed in check mode, nor at all where
    the path CREATES exists (the files are then only read).
    """
    changed_paths: List[str] = []
    tags: List[str] = []
    diff: List[Dict[str, str]] = []
    if creates and os.path.exists(creates):
        return {"changed": False, "changed_paths": [], "changed_tags": [], "diff": [],
                "contents": _contents(files, {})}
    written: Dict[str, bytes] = {}
    for item in directories:
        path = item["path"]
        existed = os.path.isdir(path)
        # Only needed to be there (a log file's directory, which may be a shared one such as
        # /var/log): an existing one keeps its owner, group and mode.
        if existed and item.get("keep_existing"):
            continue
        if not existed and not module.check_mode:
            os.makedirs(path, int(item["mode"], 8))
        changed = not existed
        # On a directory that does not exist yet in check mode there is nothing to compare.
        if existed or not module.check_mode:
            changed = _attributes(module, path, item, changed)
        if changed:
            changed_paths.append(path)
            diff.append({"before_header": path, "after_header": path,
                         "before": "" if existed else "(absent)\n", "after": "directory, mode %s\n" % item["mode"]})
    for item in files:
        path = item["path"]
        # Read once: a block goes into what is there, and the result is compared with it.
        raw = _read_bytes(path)
        if item.get("block") is not None:
            current = raw.decode("utf-8", errors="replace") if raw is not None else None
            item = dict(item, content=with_block(current, item["marker"], item["block"]))
        data = (item["content"].encode("utf-8") if item.get("content") is not None
                else base64.b64decode(item["content_base64"]))
        changed, before = write_text(module, path, data, mode=int(item["mode"], 8), current=raw)
        written[path] = data
        after = data.decode("utf-8", errors="replace")
        if os.path.isfile(path):
            changed = _attributes(module, path, item, changed)
        if changed:
            changed_paths.append(path)
            if item.get("tag"):
                tags.append(item["tag"])
            if before != after:
                diff.append({"before_header": path, "after_header": path,
                             "before": before or "", "after": after})
    for item in absent or []:
        path = item["path"]
        raw = _read_bytes(path)
        if raw is None:
            continue
        if not module.check_mode:
            os.unlink(path)
        changed_paths.append(path)
        if item.get("tag"):
            tags.append(item["tag"])
        diff.append({"before_header": path, "after_header": path,
                     "before": raw.decode("utf-8", errors="replace"), "after": "(absent)\n"})
    return {"changed": bool(changed_paths), "changed_paths": changed_paths,
            "changed_tags": sorted(set(tags)), "diff": diff, "contents": _contents(files, written)}


def _attributes(module: Any, path: str, item: Dict[str, Any], changed: bool) -> bool:
    """Owner, group and mode of PATH as ITEM says (reported, not set, in check mode)."""
    changed = module.set_owner_if_different(path, item.get("owner"), changed)
    changed = module.set_group_if_different(path, item.get("group"), changed)
    return module.set_mode_if_different(path, item.get("mode"), changed)
