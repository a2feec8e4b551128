"""A real Kubernetes API server (kube-apiserver + etcd) and the catalog's real charts, on loopback.

Both come from ../shared (read-only): the binaries are decompressed once into
.cache/k8s/, certificates are made here for each test session, and everything listens
on 127.0.0.1 only, on free ports. There is no kubelet, controller-manager or scheduler:
objects are stored and served, but no pod ever runs and no image is pulled. Tests check
objects, never pods.

Admission webhooks are served by pods, so none can answer here; the API server runs
with webhook admission turned off (the webhook configurations are still created and
checked as objects). Everything else is the real API server: schemas, CRDs, RBAC,
server-side apply, helm's server-side dry run.
"""

from __future__ import annotations

import datetime
import functools
import http.server
import ipaddress
import json
import lzma
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CHARTS = SHARED / "charts"
K8S = SHARED / "k8s"
CACHE = ROOT / ".cache" / "k8s"
VENV_BIN = ROOT / ".venv" / "bin"


def free_ports(count: int) -> list[int]:
    """COUNT distinct free ports on 127.0.0.1: the sockets are held together until all are
    bound, so the kernel cannot hand the same port out twice (picked one at a time, a port
    just released could come back: etcd once got the same port for its client and peer URLs
    and could not start)."""
    sockets = [socket.socket() for _number in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def binary(name: str) -> Path:
    """``name`` decompressed from ../shared/k8s/<name>.xz into .cache/k8s (once)."""
    src = K8S / f"{name}.xz"
    if not src.is_file():
        raise FileNotFoundError(f"{src} is missing: the real API server tests need ../shared/k8s beside the repository")
    dest = CACHE / name
    if not dest.is_file() or dest.stat().st_mtime < src.stat().st_mtime:
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        with lzma.open(src) as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout)
        tmp.chmod(0o755)
        tmp.replace(dest)
    return dest


# -- certificates ----------------------------------------------------------------------
def _certificates(d: Path) -> None:
    """CA, API server serving cert, admin client cert (system:masters), service-account key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)

    def key():
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def write_key(k, path: Path) -> None:
        path.write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                         serialization.NoEncryption()))
        path.chmod(0o600)

    def write_cert(c, path: Path) -> None:
        path.write_bytes(c.public_bytes(serialization.Encoding.PEM))

    ca_key = key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "clusterdos-test-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now)
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    write_key(ca_key, d / "ca.key")
    write_cert(ca, d / "ca.crt")

    def leaf(name: str, cn: str, org: str | None, server: bool) -> None:
        k = key()
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        b = (x509.CertificateBuilder().subject_name(x509.Name(attrs)).issuer_name(ca_name).public_key(k.public_key())
             .serial_number(x509.random_serial_number()).not_valid_before(now)
             .not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server
                                                   else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
        if server:
            b = b.add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.DNSName("kubernetes"), x509.DNSName("kubernetes.default.svc"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("10.96.0.1"))]),
                critical=False)
        write_key(k, d / f"{name}.key")
        write_cert(b.sign(ca_key, hashes.SHA256()), d / f"{name}.crt")

    leaf("apiserver", "kube-apiserver", None, True)
    leaf("admin", "clusterdos-test-admin", "system:masters", False)
    write_key(key(), d / "sa.key")
    sa_pub = serialization.load_pem_private_key((d / "sa.key").read_bytes(), None).public_key()
    (d / "sa.pub").write_bytes(sa_pub.public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))


@dataclass
class ApiServer:
    """A running kube-apiserver + etcd; ``kubeconfig`` is an admin kubeconfig for it."""

    url: str
    kubeconfig: Path
    workdir: Path
    procs: list

    def env(self) -> dict:
        return dict(os.environ, KUBECONFIG=str(self.kubeconfig), PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([str(VENV_BIN / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, check=check, timeout=120)

    def get(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def helm(self, *args: str) -> str:
        """helm ARGS against this server; its output."""
        return subprocess.run([str(VENV_BIN / "helm"), *args, "--kubeconfig", str(self.kubeconfig)], capture_output=True,
                              text=True, check=True, timeout=120).stdout

    def helm_list(self) -> dict:
        """Every release on the server: namespace/name -> helm list's entry."""
        out = subprocess.run([str(VENV_BIN / "helm"), "list", "--all-namespaces", "--output", "json",
                              "--kubeconfig", str(self.kubeconfig)], capture_output=True, text=True, check=True, timeout=120)
        return {f"{r['namespace']}/{r['name']}": r for r in json.loads(out.stdout or "[]")}

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _ready(url: str, workdir: Path, procs: list, logs: list, what: str, deadline_s: float = 180) -> None:
    ctx = ssl.create_default_context(cafile=str(workdir / "ca.crt")) if url.startswith("https") else None
    if ctx:
        ctx.load_cert_chain(str(workdir / "admin.crt"), str(workdir / "admin.key"))
    end = time.monotonic() + deadline_s
    last = ""
    while time.monotonic() < end:
        for p, log in zip(procs, logs):
            if p.poll() is not None:
                raise RuntimeError(f"{what}: a process exited with {p.returncode}: {Path(log).read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=5) as r:
                if r.status == 200:
                    return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline, the last error is reported
            last = str(exc)
        time.sleep(0.5)
    raise RuntimeError(f"{what} did not become ready at {url}: {last}; log: {Path(logs[-1]).read_text()[-3000:]}")


def start_apiserver(workdir: Path) -> ApiServer:
    """etcd and kube-apiserver on loopback with this session's certificates; returns once /readyz passes."""
    workdir.mkdir(parents=True, exist_ok=True)
    _certificates(workdir)
    etcd_client, etcd_peer, secure, metrics = free_ports(4)
    procs, logs = [], []

    def spawn(argv: list, name: str) -> None:
        log = workdir / f"{name}.log"
        logs.append(str(log))
        procs.append(subprocess.Popen(argv, stdout=open(log, "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
                                      cwd=workdir, start_new_session=True))

    spawn([str(binary("etcd")), "--name", "test", "--data-dir", str(workdir / "etcd"),
           "--listen-client-urls", f"http://127.0.0.1:{etcd_client}",
           "--advertise-client-urls", f"http://127.0.0.1:{etcd_client}",
           "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
           "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
           "--initial-cluster", f"test=http://127.0.0.1:{etcd_peer}",
           "--listen-metrics-urls", f"http://127.0.0.1:{metrics}",
           "--quota-backend-bytes", str(2 * 1024 ** 3)], "etcd")
    try:
        _ready(f"http://127.0.0.1:{etcd_client}/health", workdir, procs, logs, "etcd", 60)
        spawn([str(binary("kube-apiserver")),
               "--etcd-servers", f"http://127.0.0.1:{etcd_client}",
               "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(secure),
               "--cert-dir", str(workdir / "certs"),
               "--tls-cert-file", str(workdir / "apiserver.crt"), "--tls-private-key-file", str(workdir / "apiserver.key"),
               "--client-ca-file", str(workdir / "ca.crt"),
               "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
               "--service-account-key-file", str(workdir / "sa.pub"),
               "--service-account-signing-key-file", str(workdir / "sa.key"),
               "--service-cluster-ip-range", "10.96.0.0/16",
               "--authorization-mode", "Node,RBAC",
               # Webhooks are served by pods, and no pod runs here (see the module's docstring).
               "--disable-admission-plugins", "MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy",
               # The advertised address is loopback, which a Service endpoint may not be.
               "--endpoint-reconciler-type", "none",
               # As kubeadm sets it: CNI, GPU and storage add-ons run privileged containers.
               "--allow-privileged=true",
               "--profiling=false", "--watch-cache=true", "--event-ttl", "10m"], "kube-apiserver")
        _ready(f"https://127.0.0.1:{secure}/readyz", workdir, procs, logs, "kube-apiserver", 240)
    except Exception:
        ApiServer("", workdir / "kubeconfig", workdir, procs).stop()
        raise
    url = f"https://127.0.0.1:{secure}"
    kubeconfig = workdir / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": url, "certificate-authority": str(workdir / "ca.crt")}}],
        "users": [{"name": "admin", "user": {"client-certificate": str(workdir / "admin.crt"),
                                             "client-key": str(workdir / "admin.key")}}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
    }))
    kubeconfig.chmod(0o600)
    return ApiServer(url, kubeconfig, workdir, procs)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # noqa: D401 - http.server's hook
        pass


def serve_charts(directory: Path = CHARTS) -> tuple[http.server.ThreadingHTTPServer, str]:
    """../shared/charts as a Helm chart repository over HTTP on loopback (a site's chart mirror)."""
    if not (directory / "index.yaml").is_file():
        raise FileNotFoundError(f"{directory}/index.yaml is missing: the real chart tests need ../shared/charts")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
