# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Action for clusterdos.cluster.cluster_report: where the task runs on the controller itself
(a local connection, as the validate role's report play), the report is written by this
process, without a module round trip (about 0.4 s a run); anywhere else, or with a symbolic
O(mode), the module runs as any module does. Both write through module_utils.validate.writer."""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Dict, Optional

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.clusterdos.cluster.plugins.module_utils.validate.writer import argument_spec, custom_stats, write_report

_OCTAL = re.compile(r"^0?[0-7]{3,4}$")


class _Failed(Exception):
    pass


class _ControllerWriter:
    """What write_report asks of a module, on the controller: its parameters, check mode,
    failing, an atomic rename and an octal file mode."""

    def __init__(self, params: Dict[str, Any], check_mode: bool, mode: int) -> None:
        self.params = params
        self.check_mode = check_mode
        self._mode = mode

    @staticmethod
    def fail_json(msg: str, **_kwargs: Any) -> None:
        raise _Failed(msg)

    @staticmethod
    def atomic_move(src: str, dest: str) -> None:
        # As AnsibleModule.atomic_move: a file replaced keeps its mode, a new one gets the umask's.
        if os.path.exists(dest):
            os.chmod(src, stat.S_IMODE(os.stat(dest).st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(src, 0o666 & ~umask)
        os.replace(src, dest)

    @staticmethod
    def load_file_common_arguments(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"path": params["path"]}

    def set_fs_attributes_if_different(self, file_args: Dict[str, Any], changed: bool) -> bool:
        path = file_args["path"]
        if stat.S_IMODE(os.stat(path).st_mode) == self._mode:
            return changed
        if not self.check_mode:
            os.chmod(path, self._mode)
        return True


def octal_mode(mode: Any) -> Optional[int]:
    """MODE as an int when it is octal (0644, '0644', '644'), else None (symbolic: the module's job)."""
    if isinstance(mode, int) and not isinstance(mode, bool):
        return mode
    if isinstance(mode, str) and _OCTAL.match(mode):
        return int(mode, 8)
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars or {})
        args = dict(self._task.args)
        mode = octal_mode(args.get("mode", "0644"))
        if self._connection.transport != "local" or mode is None:
            result.update(self._execute_module(module_name="clusterdos.cluster.cluster_report",
                                               module_args=args, task_vars=task_vars))
            return result
        validated = ArgumentSpecValidator(argument_spec()).validate(args)
        if validated.error_messages:
            result.update(failed=True, msg="; ".join(validated.error_messages))
            return result
        writer = _ControllerWriter(validated.validated_parameters, bool(self._play_context.check_mode), mode)
        try:
            changed, files, summary = write_report(writer)
        except (_Failed, OSError) as err:
            result.update(failed=True, msg=str(err))
            return result
        result.update(changed=changed, files=files, summary=summary)
        if validated.validated_parameters["stats"]:
            result["ansible_stats"] = custom_stats(validated.validated_parameters, files, summary)
        return result
