"""A Kubernetes site mirror built from server binaries: what an air-gapped site keeps.

No Kubernetes release, package repository or registry is reachable from this machine.
`clusterdos-lab k8s-mirror` turns a directory of server binaries (shared/k8s: one
xz-compressed static binary each, with a README listing their sha256) into the two
things the collection's air-gapped settings read:

    OUT/bin/v<version>/kubeadm, kubelet, kubectl   kubernetes_packages_source: directory
    OUT/images/<name>.tar                           containerd_image_archives_dir
    OUT/images.yml                                  containerd_image_archives (file, sha256, images)

The images are the ones `kubeadm config images list` names for that version, built as
Docker image archives (what `docker save` writes; `ctr images import` reads it): one
layer with the static binary (pause, etcd, CoreDNS, the control plane), and for
kube-proxy also iptables, conntrack and the C library taken from Debian's packages, as
upstream's image carries them. Archives are reproducible (fixed mtimes and owners), so
their checksums only change when an input does. The result is cached by input checksums.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import yaml

from .util import LabError, log, run

# Debian packages whose files make kube-proxy's image (iptables with the nft backend,
# conntrack, their libraries, the C library, /etc/protocols from netbase).
KUBE_PROXY_DEBS = ["libc6", "iptables", "libip4tc2", "libip6tc2", "libxtables12", "libmnl0",
                   "libnetfilter-conntrack3", "libnfnetlink0", "libnftnl11", "conntrack", "netbase"]
# What Debian's alternatives would link (the packages' maintainer scripts do not run here).
IPTABLES_LINKS = ["iptables", "iptables-save", "iptables-restore",
                  "ip6tables", "ip6tables-save", "ip6tables-restore"]
# The validation's and the lab tests' workload image (nslookup, wget, httpd, sh), from
# Debian's statically linked busybox, under the reference the validate role pulls.
TEST_IMAGE = "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"
BUSYBOX_APPLETS = ["sh", "nslookup", "wget", "httpd", "ping", "sleep", "cat", "echo", "hostname", "ip",
                   "nc", "ls", "mkdir", "true", "false", "env", "id", "uname", "test", "["]
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MIRROR_VERSION = "2"

# image name (after the registry) -> (binary, path in the image, entrypoint)
IMAGE_BINARIES = {
    "kube-apiserver": ("kube-apiserver", "usr/local/bin/kube-apiserver", None),
    "kube-controller-manager": ("kube-controller-manager", "usr/local/bin/kube-controller-manager", None),
    "kube-scheduler": ("kube-scheduler", "usr/local/bin/kube-scheduler", None),
    "kube-proxy": ("kube-proxy", "usr/local/bin/kube-proxy", None),
    "etcd": ("etcd", "usr/local/bin/etcd", None),
    "coredns/coredns": ("coredns", "coredns", ["/coredns"]),
    "pause": ("pause", "pause", ["/pause"]),
}


def read_checksums(src: Path) -> dict[str, str]:
    """binary name -> sha256 of the decompressed binary, from the README's table."""
    readme = src / "README.md"
    if not readme.exists():
        raise LabError(f"{readme} not found: the binaries' checksums are read from it")
    sums: dict[str, str] = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\|\s*([a-z0-9-]+)\s*\|[^|]*\|\s*`([0-9a-f]{64})`\s*\|", line)
        if m:
            sums[m.group(1)] = m.group(2)
    return sums


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def decompress(src: Path, out: Path, sums: dict[str, str]) -> dict[str, Path]:
    """Every NAME.xz in src -> out/NAME (0755), checked against the README's sha256."""
    out.mkdir(parents=True, exist_ok=True)
    found: dict[str, Path] = {}
    for xz in sorted(src.glob("*.xz")):
        name = xz.name[:-3]
        dest = out / name
        if not dest.exists() or _sha256(dest) != sums.get(name):
            with lzma.open(xz) as fin, tempfile.NamedTemporaryFile(dir=out, delete=False) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            os.chmod(fout.name, 0o755)
            os.replace(fout.name, dest)
        if name in sums and _sha256(dest) != sums[name]:
            raise LabError(f"{xz}: decompressed sha256 differs from {src / 'README.md'}")
        found[name] = dest
    return found


def _tar_add_file(tar: tarfile.TarFile, arcname: str, data: bytes | None = None, path: Path | None = None,
                  mode: int = 0o755) -> None:
    info = tarfile.TarInfo(arcname)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = mode
    if path is not None:
        info.size = path.stat().st_size
        with path.open("rb") as fh:
            tar.addfile(info, fh)
    else:
        payload = data or b""
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))


def _tar_add_tree(tar: tarfile.TarFile, root: Path) -> None:
    """A directory tree (files, links, dirs) with fixed owners and times, sorted."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            info = tarfile.TarInfo(rel)
            info.type = tarfile.SYMTYPE
            info.linkname = os.readlink(path)
            info.mtime = 0
            info.mode = 0o777
            tar.addfile(info)
        elif path.is_dir():
            info = tarfile.TarInfo(rel)
            info.type = tarfile.DIRTYPE
            info.mtime = 0
            info.mode = 0o755
            tar.addfile(info)
        elif path.is_file():
            _tar_add_file(tar, rel, path=path, mode=path.stat().st_mode & 0o777)


def write_image_archive(dest: Path, refs: list[str], layer_files: list[tuple[str, Path]],
                        tree: Path | None, entrypoint: list[str] | None) -> str:
    """A Docker image archive (manifest.json, config, one layer); returns its sha256."""
    layer_buf = tempfile.TemporaryFile()
    with tarfile.open(fileobj=layer_buf, mode="w", format=tarfile.PAX_FORMAT) as layer:
        if tree is not None:
            _tar_add_tree(layer, tree)
        for arcname, path in layer_files:
            _tar_add_file(layer, arcname, path=path)
    layer_buf.seek(0)
    h = hashlib.sha256()
    for chunk in iter(lambda: layer_buf.read(1 << 20), b""):
        h.update(chunk)
    layer_sha = h.hexdigest()
    config = {
        "architecture": "amd64", "os": "linux",
        "config": {"Env": [PATH_ENV], **({"Entrypoint": entrypoint} if entrypoint else {})},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_sha}"]},
        "history": [{"created_by": "clusterdos-lab k8s-mirror"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": refs, "Layers": [f"{layer_sha}/layer.tar"]}]
    tmp = dest.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as out:
        _tar_add_file(out, config_name, data=config_bytes, mode=0o644)
        layer_buf.seek(0, os.SEEK_END)
        info = tarfile.TarInfo(f"{layer_sha}/layer.tar")
        info.size = layer_buf.tell()
        info.mtime = 0
        info.mode = 0o644
        layer_buf.seek(0)
        out.addfile(info, layer_buf)
        _tar_add_file(out, "manifest.json", data=json.dumps(manifest).encode(), mode=0o644)
    layer_buf.close()
    os.replace(tmp, dest)
    return _sha256(dest)


def kube_proxy_tree(work: Path) -> Path:
    """iptables, conntrack and their libraries from Debian's packages, unpacked."""
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if not list(debs.glob("*.deb")):
        proc = subprocess.run(["apt-get", "download", *KUBE_PROXY_DEBS], cwd=debs, capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            run(["apt-get", "update", "-qq"], timeout=600)
            proc = subprocess.run(["apt-get", "download", *KUBE_PROXY_DEBS], cwd=debs, capture_output=True,
                                  text=True, check=False)
        if proc.returncode != 0:
            raise LabError(f"apt-get download {' '.join(KUBE_PROXY_DEBS)} failed: {proc.stderr.strip()[-1000:]}")
    tree = work / "kube-proxy-root"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir()
    for deb in sorted(debs.glob("*.deb")):
        run(["dpkg-deb", "-x", str(deb), str(tree)])
    for sub in ("usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/lintian", "usr/share/info"):
        shutil.rmtree(tree / sub, ignore_errors=True)
    sbin = tree / "usr/sbin"
    for name in IPTABLES_LINKS:
        link = sbin / name
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to("xtables-nft-multi")
    for d in ("tmp", "run", "var/run", "etc"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    return tree


def busybox_tree(work: Path) -> Path:
    """/bin/busybox from Debian's busybox-static, with applet links and an /etc/passwd."""
    debs = work / "busybox-deb"
    debs.mkdir(parents=True, exist_ok=True)
    if not list(debs.glob("*.deb")):
        proc = subprocess.run(["apt-get", "download", "busybox-static"], cwd=debs, capture_output=True,
                              text=True, check=False)
        if proc.returncode != 0:
            run(["apt-get", "update", "-qq"], timeout=600)
            run(["apt-get", "download", "busybox-static"], timeout=600)
    unpacked = work / "busybox-unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    run(["dpkg-deb", "-x", str(next(debs.glob("*.deb"))), str(unpacked)])
    tree = work / "busybox-root"
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "bin").mkdir(parents=True)
    shutil.copy2(unpacked / "bin/busybox", tree / "bin/busybox")
    for applet in BUSYBOX_APPLETS:
        (tree / "bin" / applet).symlink_to("busybox")
    for d in ("etc", "tmp", "root", "www"):
        (tree / d).mkdir(parents=True, exist_ok=True)
    (tree / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
    (tree / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    shutil.rmtree(unpacked, ignore_errors=True)
    return tree


def input_key(src: Path, kubectl: Path | None) -> str:
    h = hashlib.sha256(MIRROR_VERSION.encode())
    h.update((src / "README.md").read_bytes())
    if kubectl is not None:
        h.update(_sha256(kubectl).encode())
    return h.hexdigest()[:12]


def build(src: Path, out: Path, kubectl: Path | None = None) -> Path:
    """Build (or find cached) the mirror in out; returns the images.yml path."""
    src = src.resolve()
    if not src.is_dir():
        raise LabError(f"{src}: not a directory of Kubernetes binaries")
    key = input_key(src, kubectl)
    stamp = out / ".built"
    if stamp.exists() and stamp.read_text(encoding="utf-8").strip() == key:
        log(f"k8s mirror cached: {out}")
        return out / "images.yml"
    sums = read_checksums(src)
    work = out / ".work"
    bins = decompress(src, work / "bin", sums)
    for needed in ("kubeadm", "kubelet", *[b for b, _, _ in IMAGE_BINARIES.values()]):
        if needed not in bins:
            raise LabError(f"{src}: {needed}.xz missing")
    version = run([str(bins["kubeadm"]), "version", "-o", "short"]).stdout.strip()
    if not re.match(r"^v\d+\.\d+\.\d+$", version):
        raise LabError(f"kubeadm reports version {version!r}")
    bin_dir = out / "bin" / version
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("kubeadm", "kubelet"):
        shutil.copy2(bins[name], bin_dir / name)
    if kubectl is not None:
        shutil.copy2(kubectl, bin_dir / "kubectl")
    refs = run([str(bins["kubeadm"]), "config", "images", "list", "--kubernetes-version", version]).stdout.split()
    images_dir = out / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for ref in refs:
        repo = ref.rsplit(":", 1)[0]
        name = repo.split("/", 1)[1] if "/" in repo else repo
        if name not in IMAGE_BINARIES:
            raise LabError(f"kubeadm {version} expects image {ref}, which this mirror cannot build")
        binary, path_in_image, entrypoint = IMAGE_BINARIES[name]
        tree = kube_proxy_tree(work) if name == "kube-proxy" else None
        file_name = name.replace("/", "-") + ".tar"
        log(f"image {ref} -> {file_name}")
        sha = write_image_archive(images_dir / file_name, [ref], [(path_in_image, bins[binary])], tree, entrypoint)
        entries.append({"file": file_name, "sha256": sha, "images": [ref]})
    log(f"image {TEST_IMAGE} -> busybox.tar (Debian's busybox-static)")
    sha = write_image_archive(images_dir / "busybox.tar", [TEST_IMAGE], [], busybox_tree(work), None)
    entries.append({"file": "busybox.tar", "sha256": sha, "images": [TEST_IMAGE]})
    listing = out / "images.yml"
    listing.write_text("# Written by clusterdos-lab k8s-mirror: containerd_image_archives for this mirror.\n"
                       + yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")
    shutil.rmtree(work / "kube-proxy-root", ignore_errors=True)
    stamp.write_text(key + "\n", encoding="utf-8")
    return listing
