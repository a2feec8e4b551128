# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Drive the helm CLI for one release: argv builders, the compare, and the run.

Every helm call is built here as an argv list (the CmdRunner idea: one function per
subcommand, options in a fixed order) so that tests can assert the exact command.
Helm 3 and Helm 4 spell a few flags differently (``--wait`` vs ``--wait=watcher``,
``--atomic`` vs ``--rollback-on-failure``, ``list --all``); the major version is read
once from ``helm version`` and passed to the builders.

Check mode and diff tell the truth: a release counts as changed only when the
manifest or the user-supplied values that helm would deploy differ from the ones
stored in the deployed release. The desired side comes from ``helm upgrade
--dry-run=server -o json`` (rendered against the live cluster, with its
capabilities and lookups, exactly as the real upgrade would render), the deployed
side from ``helm get manifest`` and ``helm get values -o json``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
import typing as t
from dataclasses import dataclass, field

try:
    import yaml as _yaml

    _YAML_LOADER = getattr(_yaml, "CSafeLoader", _yaml.SafeLoader)
except ImportError:  # pragma: no cover - PyYAML comes with Ansible and the kubernetes client
    _yaml = None  # type: ignore[assignment]
    _YAML_LOADER = None

# (argv) -> (rc, stdout, stderr); the module passes AnsibleModule.run_command.
Runner = t.Callable[[t.List[str]], t.Tuple[int, str, str]]

_DOC_SPLIT = re.compile(r"^---[ \t]*$", re.MULTILINE)
_SOURCE_COMMENT = re.compile(r"^# Source: .*$", re.MULTILINE)
_REGISTRY_HOST = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]*)?$")

# Upstream registries that an image mirror stands in for. A value naming an image on
# one of them (``quay.io/jetstack/cert-manager-controller``) or the registry alone
# (``nvcr.io``) is rewritten to the mirror.
DEFAULT_UPSTREAM_REGISTRIES: t.Tuple[str, ...] = (
    "docker.io",
    "registry-1.docker.io",
    "quay.io",
    "ghcr.io",
    "registry.k8s.io",
    "k8s.gcr.io",
    "gcr.io",
    "nvcr.io",
    "public.ecr.aws",
)


# What the API server (or the way to it) says when it cannot answer right now: a member
# restarting, etcd electing a leader, the OpenAPI document not ready yet, a loaded
# control plane. A helm call failing with one of these is tried again (TRANSIENT_DELAYS);
# any other failure is reported at once.
TRANSIENT_ERRORS = re.compile(
    r"the server is currently unable to handle the request|connection refused|connection reset by peer"
    r"|TLS handshake timeout|i/o timeout|etcdserver: (request timed out|leader changed)"
    r"|http2: client connection lost|the server has asked for the client to provide credentials \(get",
    re.IGNORECASE)
TRANSIENT_DELAYS: t.Tuple[float, ...] = (5.0, 10.0, 20.0)


class HelmError(Exception):
    """A helm call failed, or the input cannot be turned into one."""

    def __init__(self, msg: str, argv: t.Optional[t.List[str]] = None, rc: t.Optional[int] = None, stderr: str = "") -> None:
        super().__init__(msg)
        self.msg = msg
        self.argv = argv
        self.rc = rc
        self.stderr = stderr


@dataclass(frozen=True)
class ChartSource:
    """Where a chart comes from, and the helm arguments that name it.

    ``ref`` is what helm gets as its CHART argument: a chart name (with ``repo_url``),
    an ``oci://`` reference, or a path to a chart archive or directory.
    """

    ref: str
    version: t.Optional[str] = None
    repo_url: t.Optional[str] = None

    def args(self) -> t.List[str]:
        argv = [self.ref]
        if self.repo_url:
            argv += ["--repo", self.repo_url]
        if self.version:
            argv += ["--version", self.version]
        return argv


def chart_source(chart: t.Optional[str], version: t.Optional[str], repo_url: t.Optional[str] = None,
                 chart_path: t.Optional[str] = None) -> ChartSource:
    """The chart source for a chart name in an http(s) or OCI repository, or a local path.

    A directory of archives (``chart_path`` is a directory without Chart.yaml) resolves
    to ``<chart>-<version>.tgz`` inside it.
    """
    if chart_path:
        if os.path.isdir(chart_path) and not os.path.isfile(os.path.join(chart_path, "Chart.yaml")):
            if not chart or not version:
                raise HelmError(f"chart_path {chart_path} is a directory of chart archives: chart and chart_version are needed to pick one")
            archive = os.path.join(chart_path, f"{chart}-{version}.tgz")
            if not os.path.isfile(archive):
                raise HelmError(f"chart {chart} version {version} is not in the chart directory {chart_path} (no {chart}-{version}.tgz there)")
            return ChartSource(ref=archive)
        if not os.path.exists(chart_path):
            raise HelmError(f"chart_path {chart_path} does not exist")
        return ChartSource(ref=chart_path)
    if not repo_url or not chart or not version:
        raise HelmError("a chart needs chart, chart_version and repo_url (or chart_path)")
    if repo_url.startswith("oci://"):
        return ChartSource(ref=f"{repo_url.rstrip('/')}/{chart}", version=version)
    if repo_url.startswith(("http://", "https://")):
        return ChartSource(ref=chart, version=version, repo_url=repo_url.rstrip("/"))
    raise HelmError(f"repo_url must start with https://, http:// or oci:// (got {repo_url})")


@dataclass(frozen=True)
class HelmCli:
    """argv builders for one helm binary (path, major version, cluster access)."""

    binary: str = "helm"
    major: int = 4
    kubeconfig: t.Optional[str] = None
    kube_context: t.Optional[str] = None

    def _cluster(self) -> t.List[str]:
        argv: t.List[str] = []
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        if self.kube_context:
            argv += ["--kube-context", self.kube_context]
        return argv

    def _wait(self) -> t.List[str]:
        return ["--wait=watcher"] if self.major >= 4 else ["--wait"]

    def version(self) -> t.List[str]:
        return [self.binary, "version", "--template", "{{.Version}}"]

    def list_release(self, name: str, namespace: str) -> t.List[str]:
        # Helm 4 lists releases in every state by default; Helm 3 needs --all.
        argv = [self.binary, "list", "--namespace", namespace, "--filter", f"^{re.escape(name)}$", "--output", "json"]
        if self.major < 4:
            argv.append("--all")
        return argv + self._cluster()

    def get_values(self, name: str, namespace: str) -> t.List[str]:
        return [self.binary, "get", "values", name, "--namespace", namespace, "--output", "json"] + self._cluster()

    def get_manifest(self, name: str, namespace: str) -> t.List[str]:
        return [self.binary, "get", "manifest", name, "--namespace", namespace] + self._cluster()

    def show(self, what: str, source: ChartSource) -> t.List[str]:
        if what not in ("chart", "crds", "values"):
            raise ValueError(what)
        return [self.binary, "show", what] + source.args()

    def template(self, name: str, namespace: str, source: ChartSource, values_file: str, include_crds: bool = False) -> t.List[str]:
        argv = [self.binary, "template", name] + source.args() + ["--namespace", namespace, "--values", values_file]
        return argv + ["--include-crds"] if include_crds else argv

    def upgrade(self, name: str, namespace: str, source: ChartSource, values_file: str, *, dry_run: bool = False,
                create_namespace: bool = True, skip_crds: bool = False, wait: bool = True, wait_for_jobs: bool = False,
                timeout: str = "10m", atomic: bool = False, no_hooks: bool = False,
                openapi_validation: bool = True) -> t.List[str]:
        argv = [self.binary, "upgrade", name] + source.args()
        argv += ["--install", "--namespace", namespace, "--values", values_file, "--reset-values"]
        if create_namespace:
            argv.append("--create-namespace")
        if skip_crds:
            argv.append("--skip-crds")
        if no_hooks:
            argv.append("--no-hooks")
        if not openapi_validation:
            argv.append("--disable-openapi-validation")
        if dry_run:
            argv += ["--dry-run=server", "--output", "json"]
        else:
            if wait:
                argv += self._wait()
                if wait_for_jobs:
                    argv.append("--wait-for-jobs")
            if atomic:
                argv.append("--rollback-on-failure" if self.major >= 4 else "--atomic")
            argv += ["--timeout", timeout]
        return argv + self._cluster()

    def uninstall(self, name: str, namespace: str, *, wait: bool = True, timeout: str = "10m",
                  no_hooks: bool = False) -> t.List[str]:
        argv = [self.binary, "uninstall", name, "--namespace", namespace]
        if no_hooks:
            argv.append("--no-hooks")
        if wait:
            argv += self._wait()
        return argv + ["--timeout", timeout] + self._cluster()


def parse_major(version: str) -> int:
    """3 or 4 from ``v3.17.2`` / ``v4.1.4+g05fa379``."""
    m = re.match(r"^v?(\d+)\.\d+", version.strip())
    if not m:
        raise HelmError(f"cannot read the helm version from {version.strip()!r}")
    major = int(m.group(1))
    if major < 3:
        raise HelmError(f"helm {version.strip()} is too old: helm 3.13 or later is needed")
    return major


def normalize_manifest(manifest: str) -> t.List[str]:
    """The documents of a rendered manifest, comments of helm's ``# Source:`` dropped, sorted.

    Helm writes the same objects in the same form for ``get manifest`` and for a dry run;
    sorting keeps a moved template file (same objects, other order) from counting as a change.
    """
    docs = []
    for doc in _DOC_SPLIT.split(_SOURCE_COMMENT.sub("", manifest or "")):
        doc = "\n".join(line.rstrip() for line in doc.strip().splitlines() if line.strip())
        if doc:
            docs.append(doc)
    return sorted(docs)


def manifest_objects(manifest: str) -> t.List[str]:
    """The objects of a rendered manifest, each parsed and written back as canonical JSON, sorted.

    What the API server would be sent, whatever the YAML spelling: charts that reuse a
    stored secret through ``lookup`` render it quoted at install (``"c2VjcmV0"``, from
    ``b64enc | quote``) and bare at every later render (``c2VjcmV0``, from the looked-up
    data); the Grafana admin password and the Kubernetes Dashboard's CSRF key do. Compared
    as text those count as a change at every run. Without PyYAML on the host, the text
    documents (``normalize_manifest``) are compared instead.
    """
    docs = normalize_manifest(manifest)
    if _yaml is None:
        return docs
    objects = []
    for doc in docs:
        try:
            objects.append(json.dumps(_yaml.load(doc, Loader=_YAML_LOADER), sort_keys=True, default=str))
        except _yaml.YAMLError:
            objects.append(doc)
    return sorted(objects)


def normalize_values(values: t.Any) -> t.Dict[str, t.Any]:
    """Values as helm stores them (JSON types; ``null`` from ``get values`` is empty)."""
    if values is None:
        return {}
    return json.loads(json.dumps(values, sort_keys=True))


def rewrite_registries(values: t.Any, mirror: str, upstream: t.Sequence[str] = DEFAULT_UPSTREAM_REGISTRIES) -> t.Any:
    """Point every string value that names an upstream registry (or an image on one) at ``mirror``.

    ``quay.io/jetstack/cert-manager-controller`` becomes ``MIRROR/jetstack/cert-manager-controller``
    and a bare ``nvcr.io`` becomes ``MIRROR``. Other strings are left alone. A mirror given as
    ``host/prefix`` keeps its prefix (``MIRROR/prefix/jetstack/...``).
    """
    mirror = mirror.rstrip("/")
    if not mirror:
        return values
    if isinstance(values, dict):
        return {k: rewrite_registries(v, mirror, upstream) for k, v in values.items()}
    if isinstance(values, list):
        return [rewrite_registries(v, mirror, upstream) for v in values]
    if isinstance(values, str):
        for host in upstream:
            if values == host:
                return mirror
            if values.startswith(host + "/"):
                return mirror + values[len(host):]
    return values


def check_registry_mirror(mirror: str) -> None:
    if mirror and not _REGISTRY_HOST.match(mirror.rstrip("/")):
        raise HelmError(f"image_registry_mirror must be a registry host[:port][/prefix] without a scheme (got {mirror})")


@dataclass
class ReleaseRequest:
    """What one helm_addon call asks for (the module's parameters, typed)."""

    name: str
    namespace: str
    state: str = "present"
    source: t.Optional[ChartSource] = None
    values: t.Dict[str, t.Any] = field(default_factory=dict)
    create_namespace: bool = True
    skip_crds: bool = False
    wait: bool = True
    wait_for_jobs: bool = False
    timeout: str = "10m"
    atomic: bool = False
    no_hooks: bool = False
    openapi_validation: bool = True


@dataclass
class ReleaseResult:
    changed: bool = False
    status: str = "unchanged"
    release: t.Dict[str, t.Any] = field(default_factory=dict)
    commands: t.List[t.List[str]] = field(default_factory=list)
    diff: t.Dict[str, t.Any] = field(default_factory=dict)
    values_changed: bool = False
    manifest_changed: bool = False
    chart_changed: bool = False
    # Upgraded once right after the install (see HelmRelease._unsettled).
    settled: bool = False


class HelmRelease:
    """Install, upgrade or uninstall one release; compare before changing anything."""

    def __init__(self, run: Runner, binary: str = "helm", kubeconfig: t.Optional[str] = None,
                 kube_context: t.Optional[str] = None, tmpdir: t.Optional[str] = None,
                 retry_delays: t.Sequence[float] = TRANSIENT_DELAYS,
                 sleep: t.Callable[[float], None] = time.sleep) -> None:
        self._run = run
        self._retry_delays = tuple(retry_delays)
        self._sleep = sleep
        # Each transient failure tried again: (what, the error's first line).
        self.retried: t.List[t.Tuple[str, str]] = []
        self._binary = binary
        self._kubeconfig = kubeconfig
        self._kube_context = kube_context
        self._tmpdir = tmpdir
        self.cli: t.Optional[HelmCli] = None
        self.commands: t.List[t.List[str]] = []

    # -- helpers ---------------------------------------------------------------------
    def _call(self, argv: t.List[str], what: str) -> str:
        """Run one helm command; a transient API failure is tried again after each delay."""
        for attempt, delay in enumerate(self._retry_delays + (None,), start=1):
            self.commands.append(argv)
            rc, out, err = self._run(argv)
            if rc == 0:
                return out
            message = (err or out).strip()
            if delay is None or not TRANSIENT_ERRORS.search(message):
                tries = f" (after {attempt} tries)" if attempt > 1 else ""
                raise HelmError(f"helm failed to {what}{tries}: {message}", argv=argv, rc=rc, stderr=err)
            self.retried.append((what, message.splitlines()[0] if message else ""))
            self._sleep(delay)
        raise AssertionError("not reached")  # pragma: no cover

    def _json(self, argv: t.List[str], what: str) -> t.Any:
        out = self._call(argv, what)
        try:
            return json.loads(out) if out.strip() else None
        except ValueError as exc:
            raise HelmError(f"helm printed something that is not JSON while trying to {what}: {exc}", argv=argv) from exc

    def _values_file(self, values: t.Dict[str, t.Any]) -> str:
        # JSON is YAML: helm reads it with -f, and nothing is templated as text.
        fd, path = tempfile.mkstemp(prefix="clusterdos-values-", suffix=".json", dir=self._tmpdir)
        with os.fdopen(fd, "w") as fh:
            json.dump(values, fh, sort_keys=True)
        return path

    def connect(self) -> HelmCli:
        if self.cli is None:
            out = self._call([self._binary, "version", "--template", "{{.Version}}"], "report its version")
            self.cli = HelmCli(binary=self._binary, major=parse_major(out), kubeconfig=self._kubeconfig,
                               kube_context=self._kube_context)
        return self.cli

    def deployed(self, name: str, namespace: str) -> t.Optional[t.Dict[str, t.Any]]:
        """The release as ``helm list`` shows it, or None when there is none."""
        cli = self.connect()
        found = self._json(cli.list_release(name, namespace), f"list release {name} in {namespace}") or []
        for rel in found:
            if rel.get("name") == name:
                return rel
        return None

    def _show(self, what: str, source: ChartSource) -> str:
        argv = self.connect().show(what, source)
        self.commands.append(argv)
        rc, out, err = self._run(argv)
        if rc != 0:
            where = source.repo_url or source.ref
            raise HelmError(f"chart {source.ref} version {source.version or '(from its path)'} cannot be read from {where}: "
                            f"{(err or out).strip()}", argv=argv, rc=rc, stderr=err)
        return out

    def verify_chart(self, source: ChartSource) -> t.Dict[str, t.Any]:
        """``helm show chart``: proves the chart (at that version) is in its repository or mirror."""
        meta: t.Dict[str, t.Any] = {}
        for line in self._show("chart", source).splitlines():
            if ":" in line and not line.startswith((" ", "-")):
                key, _sep, val = line.partition(":")
                meta[key.strip()] = val.strip().strip('"')
        return meta

    def chart_crds(self, source: ChartSource) -> str:
        """The chart's crds/ directory as one YAML stream (empty when it has none); proves the chart is there too.

        Every sub-chart's crds/ is in it, enabled or not; ``release_crds`` gives those the values enable.
        """
        return self._show("crds", source)

    def release_crds(self, name: str, namespace: str, source: ChartSource, values: t.Dict[str, t.Any]) -> str:
        """The CRDs helm would install from crds/ for these values (of the chart and of its enabled sub-charts).

        A disabled sub-chart's CRDs are left out: the GPU operators' own Node Feature Discovery is off, and
        its (older) CRDs must not replace those of the one shared NFD. CRDs a chart renders from templates/
        are the release's own (helm upgrades those) and are left out too. Renders the chart, so values it
        refuses raise here.
        """
        with_crds = self.render(name, namespace, source, values, include_crds=True)
        templated = {_crd_name(doc) for doc in _DOC_SPLIT.split(self.render(name, namespace, source, values))} - {None}
        return crds_only(with_crds, exclude=templated)

    def render(self, name: str, namespace: str, source: ChartSource, values: t.Dict[str, t.Any], include_crds: bool = False) -> str:
        """``helm template`` with these values: the chart's schema and templates accept them, or this raises.

        No cluster is read (preflight runs before any change, with or without an API server).
        """
        values_file = self._values_file(values)
        try:
            argv = self.connect().template(name, namespace, source, values_file, include_crds=include_crds)
            self.commands.append(argv)
            rc, out, err = self._run(argv)
        finally:
            os.unlink(values_file)
        if rc != 0:
            where = source.repo_url or source.ref
            raise HelmError(f"chart {source.ref} version {source.version or '(from its path)'} from {where} cannot be rendered "
                            f"for release {name} (the version is not there, or the chart refuses the values): "
                            f"{(err or out).strip()}", argv=argv, rc=rc, stderr=err)
        return out

    def _unsettled(self, req: "ReleaseRequest", values_file: str) -> bool:
        """Whether a release just installed would render differently now that it exists.

        Charts that create a secret at install and read it back with helm's ``lookup`` at every
        later render write it quoted the first time and bare afterwards, and hash that text into
        a pod annotation (the Kubernetes Dashboard's CSRF key, Grafana's admin password in the
        monitoring stack): the first upgrade would change the release although nothing was asked.
        One upgrade right after the install settles such a release, so the next run is unchanged.
        """
        cli = self.connect()
        desired = self._json(cli.upgrade(req.name, req.namespace, req.source, values_file, dry_run=True,
                                         create_namespace=req.create_namespace, skip_crds=req.skip_crds,
                                         no_hooks=req.no_hooks, openapi_validation=req.openapi_validation),
                             f"render {req.name} against the cluster once installed (dry run)") or {}
        installed = self._call(cli.get_manifest(req.name, req.namespace), f"read the manifest of {req.name}")
        return manifest_objects(installed) != manifest_objects(desired.get("manifest", ""))

    # -- the operation -----------------------------------------------------------------
    def ensure(self, req: ReleaseRequest, check_mode: bool, want_diff: bool) -> ReleaseResult:
        cli = self.connect()
        current = self.deployed(req.name, req.namespace)
        result = ReleaseResult()
        if req.state == "absent":
            if current is None:
                result.status = "absent"
            else:
                result.changed = True
                result.status = "uninstalled"
                if want_diff:
                    before = self._call(cli.get_manifest(req.name, req.namespace), f"read the manifest of {req.name}")
                    result.diff = {"before": before, "after": "", "before_header": f"{req.namespace}/{req.name}", "after_header": "(uninstalled)"}
                if not check_mode:
                    self._call(cli.uninstall(req.name, req.namespace, wait=req.wait, timeout=req.timeout, no_hooks=req.no_hooks),
                               f"uninstall {req.name}")
            result.release = {"name": req.name, "namespace": req.namespace}
            result.commands = self.commands
            return result

        if req.source is None:
            raise HelmError("state=present needs a chart")
        values_file = self._values_file(req.values)
        try:
            if current is not None and current.get("status") == "deployed":
                desired = self._json(cli.upgrade(req.name, req.namespace, req.source, values_file, dry_run=True,
                                                 create_namespace=req.create_namespace, skip_crds=req.skip_crds,
                                                 no_hooks=req.no_hooks, openapi_validation=req.openapi_validation),
                                     f"render {req.name} against the cluster (dry run)") or {}
                deployed_manifest = self._call(cli.get_manifest(req.name, req.namespace), f"read the manifest of {req.name}")
                deployed_values = self._json(cli.get_values(req.name, req.namespace), f"read the values of {req.name}")
                result.manifest_changed = manifest_objects(deployed_manifest) != manifest_objects(desired.get("manifest", ""))
                result.values_changed = normalize_values(deployed_values) != normalize_values(req.values)
                # A new chart version is a new release even when it renders the same objects.
                result.chart_changed = _chart_id(desired) not in (None, current.get("chart"))
                result.changed = result.manifest_changed or result.values_changed or result.chart_changed
                result.status = "upgraded" if result.changed else "unchanged"
                if want_diff:
                    result.diff = {
                        "before": _diff_text(deployed_manifest, deployed_values),
                        # Unchanged: the same objects, maybe spelled otherwise (see manifest_objects); no diff to show.
                        "after": _diff_text(desired.get("manifest", "") if result.changed else deployed_manifest, req.values),
                        "before_header": f"{req.namespace}/{req.name} (deployed)",
                        "after_header": f"{req.namespace}/{req.name} (desired)",
                    }
            else:
                # Not installed, or left failed/pending by an earlier run: helm upgrade --install
                # puts it right. The diff shows the chart rendered offline (no release to compare).
                result.changed = True
                result.status = "installed" if current is None else "upgraded"
                if want_diff:
                    rendered = self._call(cli.template(req.name, req.namespace, req.source, values_file), f"render {req.name}")
                    result.diff = {
                        "before": "" if current is None else f"# release {req.name} is {current.get('status')}\n",
                        "after": _diff_text(rendered, req.values),
                        "before_header": f"{req.namespace}/{req.name} (not deployed)" if current is None else f"{req.namespace}/{req.name}",
                        "after_header": f"{req.namespace}/{req.name} (desired)",
                    }
            if result.changed and not check_mode:
                upgrade = cli.upgrade(req.name, req.namespace, req.source, values_file, create_namespace=req.create_namespace,
                                      skip_crds=req.skip_crds, wait=req.wait, wait_for_jobs=req.wait_for_jobs,
                                      timeout=req.timeout, atomic=req.atomic, no_hooks=req.no_hooks,
                                      openapi_validation=req.openapi_validation)
                self._call(upgrade, f"install or upgrade {req.name}")
                if result.status == "installed" and self._unsettled(req, values_file):
                    self._call(upgrade, f"upgrade {req.name} to how it renders once installed")
                    result.settled = True
                current = self.deployed(req.name, req.namespace) or current
        finally:
            os.unlink(values_file)
        result.release = {"name": req.name, "namespace": req.namespace}
        if current:
            result.release.update({k: current.get(k) for k in ("revision", "status", "chart", "app_version") if k in current})
        result.commands = self.commands
        return result


def check_charts(helm: HelmRelease, releases: t.List[t.Dict[str, t.Any]], verify: bool = True, render: bool = False) -> None:
    """Read every planned chart (``verify``) and render it with its final values (``render``), before any change.

    ``verify`` proves each chart version is in its repository or mirror and puts the chart's CRDs
    (when the entry wants them applied) in ``crd_manifest``. ``render`` runs ``helm template``, so a
    value that the chart's schema or templates refuse fails here. Every problem is reported at once.
    """
    problems: t.List[str] = []
    for rel in releases:
        try:
            # A chart missing from a directory mirror is found here already; reported with the rest.
            source = chart_source(rel["chart"], rel["version"], repo_url=rel["repo_url"], chart_path=rel["chart_path"])
            if rel["crds"]:
                # One render reads the chart, checks the values and gives the CRDs of what they enable.
                rel["crd_manifest"] = helm.release_crds(rel["release"], rel["namespace"], source, rel["release_values"])
                continue
            if verify:
                helm.verify_chart(source)
            if render:
                helm.render(rel["release"], rel["namespace"], source, rel["release_values"])
        except HelmError as exc:
            problems.append(f"{rel['name']}: {exc.msg}")
    if problems:
        raise HelmError("; ".join(problems))


_CRD_KIND = re.compile(r"^kind:\s*[\"']?CustomResourceDefinition[\"']?\s*$", re.MULTILINE)
_METADATA_NAME = re.compile(r"^metadata:\s*\n(?:[ \t]+.*\n|\s*\n)*?[ \t]+name:\s*[\"']?([^\s\"']+)", re.MULTILINE)


def _crd_name(doc: str) -> t.Optional[str]:
    """metadata.name of a CustomResourceDefinition document, None for any other document."""
    if not _CRD_KIND.search(doc):
        return None
    m = _METADATA_NAME.search(doc + "\n")
    return m.group(1) if m else None


def crds_only(rendered: str, exclude: t.Iterable[str] = ()) -> str:
    """The CustomResourceDefinition documents of a rendered stream, but those named in ``exclude``, as one stream."""
    skip = set(exclude)
    docs = []
    for doc in _DOC_SPLIT.split(rendered or ""):
        name = _crd_name(doc)
        if name and name not in skip:
            docs.append(_SOURCE_COMMENT.sub("", doc).strip())
    return "\n---\n".join(docs) + ("\n" if docs else "")


def _chart_id(release: t.Dict[str, t.Any]) -> t.Optional[str]:
    """``name-version`` of the chart in a release printed by helm (as ``helm list`` shows it)."""
    meta = (release.get("chart") or {}).get("metadata") or {}
    if meta.get("name") and meta.get("version"):
        return f"{meta['name']}-{meta['version']}"
    return None


_SECRET_KIND = re.compile(r"^kind:\s*Secret\s*$", re.MULTILINE)
_SECRET_DATA = re.compile(r"^(data|stringData):")


def redact_secrets(doc: str) -> str:
    """A manifest document with a Secret's data replaced by a digest of it (diffs show that it changed, not what)."""
    if not _SECRET_KIND.search(doc):
        return doc
    out: t.List[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        m = _SECRET_DATA.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        block = [lines[i]]
        i += 1
        while i < len(lines) and (lines[i].startswith((" ", "-")) or not lines[i].strip()):
            block.append(lines[i])
            i += 1
        digest = hashlib.sha256("\n".join(block).encode()).hexdigest()[:16]
        out.append(f"{m.group(1)}: <redacted, sha256 {digest}>")
    return "\n".join(out)


def _diff_text(manifest: str, values: t.Any) -> str:
    text = "# values\n" + json.dumps(normalize_values(values), indent=2, sort_keys=True)
    docs = [redact_secrets(doc) for doc in normalize_manifest(manifest)]
    return text + "\n# manifest\n" + "\n---\n".join(docs) + "\n"
