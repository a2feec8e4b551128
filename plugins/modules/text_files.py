#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""text_files: several text files and their directories on a host in one call."""

from __future__ import annotations

DOCUMENTATION = r"""
module: text_files
short_description: Write several text files (and their directories) on a host in one call
version_added: 0.1.0
description:
  - Makes each directory of O(directories) exist and each file of O(files) hold its text, owner, group and mode.
    A file is written (atomically) only when its text differs.
  - One round trip to the host for what would take a task per file (and two per templated file). The Slurm role writes
    slurm.conf, cgroup.conf, gres.conf and its restart fingerprints with it (docs/performance.md).
  - Render the text on the controller, e.g. with the C(ansible.builtin.template) lookup, which gives the bytes the
    template module would write.
  - RV(changed_tags) names the tags of the files that changed, so that the next task can notify the handlers each needs
    (a restart for one file, a reconfigure for another).
options:
  files:
    description: The files.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      content:
        description:
          - The file's whole text.
          - Give O(files[].content), O(files[].content_base64), or O(files[].block) with O(files[].marker).
        type: str
      content_base64:
        description:
          - The file's whole content as base64, for bytes that need not be text.
          - The munge role installs the key its source host holds with it (RV(contents) of the call that read it),
            which may be a package's binary key.
        type: str
      block:
        description:
          - A block of lines this file holds between two marker lines, the rest of the file left as it is, written as
            C(ansible.builtin.blockinfile) writes it by default (the same bytes) - the block replaces the one between
            the markers or goes at the end of the file; an empty block removes it and its markers.
          - The base role's C(/etc/hosts) block, written by the Slurm role's reconfigure in the same call as
            slurm.conf when a node is added.
        type: str
      marker:
        description: The marker lines, C({mark}) standing for C(BEGIN) and C(END). Required with O(files[].block).
        type: str
      mode:
        description: Octal mode, as a string.
        type: str
        default: "0644"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
      tag:
        description: A name listed in RV(changed_tags) when this file changed.
        type: str
      return_content:
        description:
          - Return what the file holds after the call (in check mode, what it would hold) in RV(contents).
          - The munge role reads the key it generated, or the one generated before, in the same call.
        type: bool
        default: false
  creates:
    description:
      - A path. Where it exists, nothing is written (the files asked for with O(files[].return_content) are
        only read).
      - Write once, never replace - the munge role generates the cluster key with a marker file and names the
        marker here.
    type: path
  absent:
    description:
      - Files to remove where they exist (a directory or a missing path is left alone), after the writes.
      - What the caller no longer manages on this host - the Slurm role removes its copies of slurm.conf, cgroup.conf
        and gres.conf from a node that runs slurmd alone once the cluster is configless (slurmd fetches them), and
        slurmd's configless drop-in once it is not.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the file.
        type: path
        required: true
      tag:
        description: A name listed in RV(changed_tags) when this file was removed.
        type: str
  directories:
    description: Directories to create first (parents included).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path of the directory.
        type: path
        required: true
      mode:
        description: Octal mode, as a string.
        type: str
        default: "0755"
      owner:
        description: Owner.
        type: str
        default: root
      group:
        description: Group.
        type: str
        default: root
      keep_existing:
        description:
          - Create the directory where it is missing, and leave an existing one as it is (owner, group and mode).
          - For a directory that only has to be there, such as the one a daemon's log file is put in, which may be
            a shared one like C(/var/log).
        type: bool
        default: false
attributes:
  check_mode:
    description: Reports what would change and writes nothing.
    support: full
  diff_mode:
    description: Each changed file's text before and after.
    support: full
author:
  - clusterdOS developers (@clusterdos)
"""

EXAMPLES = r"""
- name: Write two files, then restart only when the first changed
  clusterdos.cluster.text_files:
    directories:
      - path: /etc/example
    files:
      - path: /etc/example/daemon.conf
        content: "{{ lookup('ansible.builtin.template', 'daemon.conf.j2') }}"
        tag: restart
      - path: /etc/example/extra.conf
        content: "key = value\n"
        tag: reload
  register: example_files
"""

RETURN = r"""
changed_paths:
  description: The files and directories created, changed or removed.
  returned: always
  type: list
  elements: str
changed_tags:
  description: The tags of the changed files, sorted, each once.
  returned: always
  type: list
  elements: str
contents:
  description: For each file with O(files[].return_content), its bytes in base64, keyed by its path.
  returned: always
  type: dict
"""

import base64
import binascii

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.clusterdos.cluster.plugins.module_utils.text_file import ensure_files

_ATTRIBUTES = {
    "owner": {"type": "str", "default": "root"},
    "group": {"type": "str", "default": "root"},
}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "list", "elements": "dict", "required": True, "options": {
                "path": {"type": "path", "required": True},
                "content": {"type": "str"},
                "content_base64": {"type": "str"},
                "block": {"type": "str"},
                "marker": {"type": "str"},
                "mode": {"type": "str", "default": "0644"},
                "tag": {"type": "str"},
                "return_content": {"type": "bool", "default": False},
                **_ATTRIBUTES,
            }, "mutually_exclusive": [["content", "content_base64", "block"]],
                "required_one_of": [["content", "content_base64", "block"]],
                "required_by": {"block": "marker"}},
            "directories": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "mode": {"type": "str", "default": "0755"},
                "keep_existing": {"type": "bool", "default": False},
                **_ATTRIBUTES,
            }},
            "creates": {"type": "path"},
            "absent": {"type": "list", "elements": "dict", "default": [], "options": {
                "path": {"type": "path", "required": True},
                "tag": {"type": "str"},
            }},
        },
        supports_check_mode=True,
    )
    for item in module.params["files"] + module.params["directories"]:
        try:
            int(item["mode"], 8)
        except ValueError:
            module.fail_json(msg="%s: mode %r is not an octal number such as 0644" % (item["path"], item["mode"]))
    for item in module.params["files"]:
        if item.get("content_base64") is not None:
            try:
                base64.b64decode(item["content_base64"], validate=True)
            except (binascii.Error, ValueError):
                module.fail_json(msg="%s: content_base64 is not base64 (give the file's bytes encoded with the "
                                     "b64encode filter)" % item["path"])
    result = ensure_files(module, module.params["files"], module.params["directories"], module.params["creates"],
                          module.params["absent"])
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
