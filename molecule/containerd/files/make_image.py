#!/usr/bin/env python3
"""Build a one-binary container image tarball (docker-archive layout) without a registry.

usage: make_image.py BINARY OUTPUT.tar NAME:TAG
The image holds BINARY as /bin/busybox plus /bin/sh and /bin/echo links; `ctr images
import` reads the result.
"""

import hashlib
import io
import json
import sys
import tarfile


def main(binary: str, output: str, ref: str) -> None:
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        for d in ("bin", "proc", "sys", "dev", "etc", "tmp"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        tar.add(binary, arcname="bin/busybox")
        for name in ("sh", "echo", "cat", "ls", "hostname", "ip"):
            info = tarfile.TarInfo(f"bin/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
    layer_bytes = layer.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Cmd": ["/bin/sh"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [ref], "Layers": ["layer.tar"]}]).encode()
    with tarfile.open(output, mode="w") as out:
        for name, data in (("layer.tar", layer_bytes), (config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            out.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    main(*sys.argv[1:4])
