#!/usr/bin/env python3
"""Fetch one pinned binary for the execution environment and install it after its sha256 matches.

Used by execution-environment.yml's build steps (helm, kubectl). The URL may be https://,
http:// or file:// (a site file mirror). With --member, the URL is a .tar.gz and the
binary is that member of it; the checksum is always of the binary itself.
Exit status 1 and a message naming both checksums when they differ; nothing is installed.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tarfile
import tempfile
import urllib.request


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=300) as response:  # noqa: S310 - pinned, checksummed
        return response.read()


def _member(archive: bytes, member: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        handle = tar.extractfile(member)
        if handle is None:
            raise KeyError(member)
        return handle.read()


def install(url: str, sha256: str, dest: str, member: str | None = None) -> None:
    """Install the binary at url (or the member of the archive at url) to dest, checked."""
    data = _fetch(url)
    if member:
        data = _member(data, member)
    got = hashlib.sha256(data).hexdigest()
    if got != sha256.lower():
        raise ValueError(f"{url}{'#' + member if member else ''}: sha256 {got}, expected {sha256}; refusing to install")
    directory = os.path.dirname(dest) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--sha256", required=True)
    parser.add_argument("--dest", required=True)
    parser.add_argument("--member", default=None, help="path of the binary inside a .tar.gz")
    args = parser.parse_args(argv)
    try:
        install(args.url, args.sha256, args.dest, args.member)
    except (ValueError, KeyError, OSError, tarfile.TarError) as err:
        print(f"install_tool: {err}", file=sys.stderr)
        return 1
    print(f"install_tool: {args.dest} from {args.url} (sha256 {args.sha256})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
