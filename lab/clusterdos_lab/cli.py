"""clusterdos-lab: real test hosts on one machine.

    clusterdos-lab up --hosts 3                 three hosts in group "lab"
    clusterdos-lab up --layout site             the sample GPU-cluster shape
    clusterdos-lab status | inventory | ssh HOST [CMD...] | down [--purge]
    clusterdos-lab k8s-mirror --from ../shared/k8s   a Kubernetes site mirror (air-gapped)
    clusterdos-lab serve --dir ../shared/charts      a directory over HTTP on the lab bridge
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from . import fileserver, firewall, image, inventory, k8s_mirror, limits, podman, proxy, qemu
from .spec import CACHE_ROOT, STATE_ROOT, HostSpec, LabSpec, build_spec, candidate_subnets, validate
from .util import LabError, log, mem_available_mib, require_root, require_tools, run, step

# Generous: on a loaded 2-core machine systemd in a container can take a minute to boot.
SSH_TIMEOUT = float(os.environ.get("CLUSTERDOS_LAB_SSH_TIMEOUT", "240"))
# VMs: 2 booting at once under software emulation answered SSH after 105 s on an idle
# machine and after 286 s at a load of 12-14 (one attempt at 300 s timed out), hence 420 s
# for two.
VM_SSH_TIMEOUT = float(os.environ.get("CLUSTERDOS_LAB_VM_SSH_TIMEOUT", "300"))


def _save(spec: LabSpec) -> None:
    data = {"name": spec.name, "backend": spec.backend, "subnet": spec.subnet, "bridge": spec.bridge,
            "vars": spec.vars,
            "hosts": [{"name": h.name, "groups": h.groups, "memory_mib": h.memory_mib,
                       **({"cpuset": h.cpuset} if h.cpuset else {})} for h in spec.hosts]}
    (spec.state_dir / "lab.yml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _load(name: str) -> LabSpec:
    path = STATE_ROOT / name / "lab.yml"
    if not path.exists():
        raise LabError(f"no lab named {name!r} (nothing in {path.parent}); start one with `clusterdos-lab up`")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    spec = LabSpec(name=data["name"], backend=data["backend"], subnet=data["subnet"], vars=data.get("vars") or {},
                   bridge=data.get("bridge", ""),
                   hosts=[HostSpec(**h) for h in data["hosts"]])
    validate(spec)
    return spec


def _merge_into_running(requested: LabSpec, backend: str | None) -> LabSpec:
    """`up` on a running lab: keep its hosts (and their addresses), add the new ones."""
    running = _load(requested.name)
    if backend and backend != running.backend:
        raise LabError(f"lab {running.name} runs the {running.backend} backend; "
                       f"`down` it first to switch to {backend}")
    known = {h.name for h in running.hosts}
    running.hosts += [h for h in requested.hosts if h.name not in known]
    running.vars.update(requested.vars)  # a layout's variables follow the latest `up`
    validate(running)
    return running


def _subnet_in_use(spec: LabSpec) -> str | None:
    """Another interface or route on this machine already using the lab's subnet."""
    out = run(["ip", "-j", "route", "show"], check=False).stdout or "[]"
    for route in json.loads(out):
        dst = route.get("dst", "")
        if dst in ("default", "") or route.get("dev") == spec.bridge:
            continue
        try:
            if ipaddress.ip_network(dst, strict=False).overlaps(spec.network):
                return f"{dst} on {route.get('dev')}"
        except ValueError:
            continue
    return None


def _ensure_key(spec: LabSpec) -> Path:
    key = inventory.ssh_key(spec)
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"clusterdos-lab-{spec.name}", "-f", str(key)])
    return key


def _wait_ssh(spec: LabSpec, timeout: float) -> None:
    key = inventory.ssh_key(spec)
    pending = {h.name: spec.host_ip(i) for i, h in enumerate(spec.hosts)}
    deadline = time.monotonic() + timeout
    while pending:
        for name, addr in list(pending.items()):
            rc = subprocess.run(["ssh", *inventory.ssh_args(), "-o", "ConnectTimeout=10", "-i", str(key),
                                 f"root@{addr}", "true"], capture_output=True, check=False).returncode
            if rc == 0:
                pending.pop(name)
        if pending and spec.backend == "podman":
            # A host whose container stopped will never answer: say why now (for example
            # root's inotify instances used up), not after the whole timeout.
            stopped = podman.exited_hosts(spec, sorted(pending))
            if stopped:
                raise LabError("; ".join(limits.explain_exit(*s) for s in stopped))
        if pending and time.monotonic() > deadline:
            where = (f"VM consoles: {spec.state_dir / 'vms'}/*/console.log" if spec.backend == "qemu"
                     else "journal: podman exec cdl-<lab>-<host> journalctl -b")
            raise LabError(f"SSH not answering after {timeout:.0f}s on: {', '.join(sorted(pending))} ({where})")
        if pending:
            time.sleep(0.5)


def cmd_up(args: argparse.Namespace) -> int:
    require_root()
    spec = build_spec(args.name, args.backend, args.subnet, args.host or [], args.hosts, args.layout, args.memory,
                      args.cpuset)
    common_tools = ("debootstrap", "apt-cacher-ng", "iptables", "ip6tables", "ssh", "ssh-keygen")
    if spec.backend == "qemu":
        require_tools(*common_tools, *qemu.TOOLS)
    else:
        require_tools(*common_tools, "podman", "runc")
    timings: dict[str, float] = {}
    started = time.monotonic()
    existing = (spec.state_dir / "lab.yml").exists()
    if existing:
        spec = _merge_into_running(spec, args.backend)
    else:
        clash = _subnet_in_use(spec)
        if clash and not args.subnet:
            # The name's own /24 is taken (another lab whose name hashes alike, a VPN): the
            # next free one of the pool; lab.yml keeps it for as long as the lab lives.
            taken = spec.subnet
            for candidate in candidate_subnets(spec.name)[1:]:
                spec.subnet = candidate
                if not _subnet_in_use(spec):
                    log(f"subnet {taken} is already in use ({clash}); this lab takes {candidate}")
                    clash = None
                    break
        if clash:
            raise LabError(f"subnet {spec.subnet} is already in use ({clash}); pick another with --subnet")
        need = sum(max(h.memory_mib, 1024) if spec.backend == "qemu" else h.memory_mib for h in spec.hosts)
        avail = mem_available_mib()
        if need > avail - 1024:
            raise LabError(f"{len(spec.hosts)} hosts need {need} MiB but only {avail} MiB is available "
                           "(1 GiB is kept for this machine); use fewer hosts or --memory")
    spec.state_dir.mkdir(parents=True, exist_ok=True)
    _save(spec)
    backend = qemu if spec.backend == "qemu" else podman
    with step("host image", timings):
        img = qemu.ensure_image() if spec.backend == "qemu" else image.ensure_podman_image()
    with step("ssh key", timings):
        key = _ensure_key(spec)
    with step(f"network {spec.subnet}", timings):
        spec.bridge = backend.ensure_network(spec)
        _save(spec)
    with step(f"start {len(spec.hosts)} {spec.backend} host(s)", timings):
        backend.start_hosts(spec, img, str(key) + ".pub")
    with step("firewall and package proxy", timings):
        firewall.up(spec, proxy.DEFAULT_PORT)
        fileserver.keep_open(spec)
        proxy_url = proxy.start(spec)
    with step("wait for SSH", timings):
        _wait_ssh(spec, SSH_TIMEOUT if spec.backend == "podman" else VM_SSH_TIMEOUT + 60 * len(spec.hosts))
    inv = inventory.write(spec, proxy_url)
    total = time.monotonic() - started
    timings["total"] = round(total, 2)
    (spec.state_dir / "timings.json").write_text(json.dumps(timings, indent=2) + "\n", encoding="utf-8")
    log(f"lab {spec.name} up in {total:.1f}s; inventory: {inv}")
    print(inv)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    require_root()
    state = STATE_ROOT / args.name
    if (state / "lab.yml").exists():
        spec = _load(args.name)
        with step(f"remove lab {spec.name}"):
            proxy.stop(spec)
            fileserver.stop(spec)
            (qemu if spec.backend == "qemu" else podman).remove(spec)
            firewall.down(spec)
    elif not args.purge:
        log(f"no lab named {args.name}; nothing to do")
    shutil.rmtree(state, ignore_errors=True)
    if args.purge:
        with step("remove cached images"):
            image.remove_images()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    names = [args.name] if args.name else sorted(p.name for p in STATE_ROOT.glob("*") if (p / "lab.yml").exists())
    report = []
    for name in names:
        spec = _load(name)
        report.append({"name": name, "backend": spec.backend, "subnet": spec.subnet,
                       "proxy": proxy.running(spec) is not None, "firewall": firewall.present(spec),
                       "hosts": (qemu if spec.backend == "qemu" else podman).status(spec)})
    print(yaml.safe_dump(report, sort_keys=False) if report else "no labs")
    return 0


def cmd_inventory(args: argparse.Namespace) -> int:
    spec = _load(args.name)
    print(spec.state_dir / "inventory.yml")
    return 0


def cmd_ssh(args: argparse.Namespace) -> int:
    spec = _load(args.name)
    names = [h.name for h in spec.hosts]
    if args.host not in names:
        raise LabError(f"no host {args.host!r} in lab {spec.name} (hosts: {', '.join(names)})")
    addr = spec.host_ip(names.index(args.host))
    argv = ["ssh", *inventory.ssh_args(), "-i", str(inventory.ssh_key(spec)), f"root@{addr}", *args.command]
    os.execvp("ssh", argv)
    return 0  # not reached


def cmd_serve(args: argparse.Namespace) -> int:
    require_root()
    if not (STATE_ROOT / args.name / "lab.yml").exists():
        raise LabError(f"no lab named {args.name}; start it first (clusterdos-lab up)")
    spec = _load(args.name)
    with step(f"serve {args.dir} on {spec.gateway}"):
        served = fileserver.start(spec, Path(args.dir), args.port)
    print(served)
    return 0


def cmd_k8s_mirror(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else CACHE_ROOT / "k8s-mirror"
    kubectl = Path(args.kubectl) if args.kubectl else None
    if kubectl is not None and not kubectl.is_file():
        raise LabError(f"--kubectl {kubectl}: no such file")
    with step(f"k8s mirror from {args.source}"):
        listing = k8s_mirror.build(Path(args.source), out, kubectl)
    print(listing)
    return 0


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--name", default=os.environ.get("CLUSTERDOS_LAB_NAME", "lab"),
                        help="lab name (default: $CLUSTERDOS_LAB_NAME or 'lab')")
    p = argparse.ArgumentParser(prog="clusterdos-lab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", parents=[common], help="build the image (cached), start hosts, write an inventory")
    up.add_argument("--hosts", type=int, help="N hosts named NAME-1..N in group 'lab'")
    up.add_argument("--host", action="append", metavar="NAME[=GROUP,...]", help="one host and its groups")
    up.add_argument("--layout", help="a layout name from lab/layouts or a YAML path")
    up.add_argument("--backend", choices=["podman", "qemu"])
    up.add_argument("--subnet", help="private IPv4 subnet for the lab bridge")
    up.add_argument("--memory", type=int, help="memory per host in MiB (default 512)")
    up.add_argument("--cpuset", help="CPUs the new podman hosts may run on, e.g. 1 or 1-3 (default: any); "
                    "keeps their work off the controller's CPUs when measuring it")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", parents=[common], help="remove every host, rule, process and file the lab made")
    down.add_argument("--purge", action="store_true", help="also remove the cached host image")
    down.set_defaults(func=cmd_down)
    status = sub.add_parser("status", help="labs and their hosts")
    status.add_argument("--name", help="one lab (default: all)")
    status.set_defaults(func=cmd_status)
    sub.add_parser("inventory", parents=[common], help="print the inventory path").set_defaults(func=cmd_inventory)
    mirror = sub.add_parser("k8s-mirror", help="a Kubernetes site mirror (binaries, image archives) from server binaries")
    mirror.add_argument("--from", dest="source", required=True, help="directory of NAME.xz binaries with a README of checksums")
    mirror.add_argument("--out", help="mirror directory (default: the lab cache's k8s-mirror)")
    mirror.add_argument("--kubectl", help="a kubectl binary to put beside kubeadm and kubelet")
    mirror.set_defaults(func=cmd_k8s_mirror)
    serve = sub.add_parser("serve", parents=[common],
                           help="serve a controller directory over HTTP on the lab bridge (a site file/chart mirror)")
    serve.add_argument("--dir", required=True, help="the directory to serve, read-only")
    serve.add_argument("--port", type=int, default=fileserver.DEFAULT_PORT,
                       help="TCP port on the bridge address (default: $CLUSTERDOS_LAB_FILES_PORT or 8090)")
    serve.set_defaults(func=cmd_serve)
    ssh = sub.add_parser("ssh", parents=[common], help="ssh to a lab host")
    ssh.add_argument("host")
    ssh.add_argument("command", nargs=argparse.REMAINDER)
    ssh.set_defaults(func=cmd_ssh)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except LabError as exc:
        print(f"clusterdos-lab: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
