#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Install, upgrade or uninstall one Helm release, with truthful check mode and diff."""

from __future__ import annotations

DOCUMENTATION = r"""
module: helm_addon
short_description: Install, upgrade or uninstall one Helm release, reporting a change only when one would happen
version_added: 0.1.0
description:
  - Drives the C(helm) CLI (Helm 3.13 or later, or Helm 4) for one release.
  - Before changing anything it compares what is deployed (C(helm get manifest), C(helm get values)) with what
    would be deployed (C(helm upgrade --install --dry-run=server), rendered against the cluster). It reports a
    change only when the manifest or the values differ, so check mode and diff tell the truth.
  - Upgrades pass the values in full with C(--reset-values), so the deployed values are exactly I(values).
  - Charts come from an http(s) repository, an OCI registry, or a local chart archive or a directory of archives
    named C(<chart>-<version>.tgz) (air-gapped sites).
  - Waits until the release's workloads are ready (C(--wait=watcher) on Helm 4, C(--wait) on Helm 3).
  - Helm installs a chart's CRDs only on first install and never upgrades them. The M(clusterdos.cluster.addon_plan)
    module returns each chart's CRDs and the C(clusterdos.cluster.addons) role applies them with
    M(kubernetes.core.k8s) (server-side apply) before calling this module with I(skip_crds=true).
author:
  - clusterdOS developers (@clusterdos)
attributes:
  check_mode:
    support: full
    description: Renders with a server-side dry run and compares; changes nothing.
  diff_mode:
    support: full
    description: Shows the deployed and the desired values and manifest.
options:
  name:
    description: Release name.
    type: str
    required: true
  namespace:
    description: Namespace of the release.
    type: str
    required: true
  state:
    description: C(present) installs or upgrades; C(absent) uninstalls.
    type: str
    choices: [present, absent]
    default: present
  chart:
    description: Chart name in I(repo_url), or in the directory I(chart_path).
    type: str
  chart_version:
    description: Exact chart version.
    type: str
  repo_url:
    description:
      - Chart repository, C(https://...) (passed as C(--repo)) or C(oci://registry/path) (the chart is
        C(oci://registry/path/<chart>)).
    type: str
  chart_path:
    description:
      - A chart archive or chart directory, or a directory of chart archives named C(<chart>-<version>.tgz).
    type: path
  values:
    description: Values of the release, as a mapping. They replace whatever values the release had.
    type: dict
    default: {}
  image_registry_mirror:
    description:
      - Registry (C(host[:port][/prefix])) that stands in for the upstream registries. Every string value that
        names an image on C(docker.io), C(quay.io), C(ghcr.io), C(registry.k8s.io), C(nvcr.io) and the like is
        rewritten to it.
    type: str
    default: ""
  create_namespace:
    description: Create the namespace when it does not exist.
    type: bool
    default: true
  skip_crds:
    description: Pass C(--skip-crds), for callers that apply the chart's CRDs themselves.
    type: bool
    default: false
  wait:
    description: Wait until the release's workloads are ready (and, on uninstall, gone).
    type: bool
    default: true
  wait_for_jobs:
    description: Also wait for the release's Jobs to complete.
    type: bool
    default: false
  timeout:
    description: Helm's C(--timeout), a Go duration.
    type: str
    default: 10m
  atomic:
    description: Roll back a failed upgrade (C(--rollback-on-failure) on Helm 4, C(--atomic) on Helm 3).
    type: bool
    default: false
  no_hooks:
    description:
      - Do not run the chart's hooks (C(--no-hooks)) on install, upgrade and uninstall. A hook Job needs a node to
        run on; without one (nodes not joined yet) helm would wait for it until I(timeout).
    type: bool
    default: false
  openapi_validation:
    description:
      - Let helm check the rendered objects against the API server's OpenAPI schema before sending them. C(false)
        passes C(--disable-openapi-validation) (for an API server that cannot serve its OpenAPI v2 document as
        protobuf); the API server still validates every object it stores.
    type: bool
    default: true
  kubeconfig:
    description: Kubeconfig helm uses. Default is helm's own (C(KUBECONFIG), C(~/.kube/config)).
    type: path
  kube_context:
    description: Kubeconfig context.
    type: str
  binary_path:
    description: The helm binary. Default is C(helm) from C(PATH).
    type: path
"""

EXAMPLES = r"""
- name: Cilium right after kubeadm init
  clusterdos.cluster.helm_addon:
    name: cilium
    namespace: kube-system
    chart: cilium
    chart_version: 1.18.4
    repo_url: https://helm.cilium.io
    kubeconfig: /etc/kubernetes/admin.conf
    values:
      kubeProxyReplacement: true
      k8sServiceHost: 10.0.0.10
      k8sServicePort: 6443
      routingMode: tunnel
      tunnelProtocol: vxlan

- name: cert-manager from a directory of chart archives, images from the site registry
  clusterdos.cluster.helm_addon:
    name: cert-manager
    namespace: cert-manager
    chart: cert-manager
    chart_version: v1.19.1
    chart_path: /srv/charts
    image_registry_mirror: registry.site.example:5000
    values:
      crds:
        enabled: true

- name: Remove a release
  clusterdos.cluster.helm_addon:
    name: kubernetes-dashboard
    namespace: kubernetes-dashboard
    state: absent
"""

RETURN = r"""
status:
  description: What happened (or would happen in check mode).
  returned: always
  type: str
  choices: [installed, upgraded, unchanged, uninstalled, absent]
  sample: unchanged
release:
  description: The release after the run, as C(helm list) shows it.
  returned: always
  type: dict
  sample: {name: cilium, namespace: kube-system, revision: "3", status: deployed, chart: cilium-1.18.4, app_version: 1.18.4}
values_changed:
  description: The deployed values differ from I(values).
  returned: always
  type: bool
manifest_changed:
  description: The deployed manifest differs from the one the desired release renders.
  returned: always
  type: bool
chart_changed:
  description: The deployed release runs another chart version than the desired one.
  returned: always
  type: bool
settled:
  description:
    - The release was upgraded once right after its install, because it rendered differently once installed (charts
      that create a secret at install and read it back with helm's C(lookup)); the next run then finds it unchanged.
  returned: always
  type: bool
seconds:
  description: How long the module took (compare, then install, upgrade or uninstall), in seconds.
  returned: always
  type: float
  sample: 12.4
retried:
  description:
    - Helm calls that failed with a transient API error (the server unable to handle the request, a refused or reset
      connection, an etcd timeout...) and were tried again after 5, 10 and 20 seconds, each with the error's first line.
      Any other failure is reported at once.
  returned: always
  type: list
  elements: str
commands:
  description: Every helm command run, as argv lists (values are passed in a temporary file).
  returned: always
  type: list
  elements: list
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import (
    HelmError,
    HelmRelease,
    ReleaseRequest,
    chart_source,
    check_registry_mirror,
    rewrite_registries,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            namespace=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            chart=dict(type="str"),
            chart_version=dict(type="str"),
            repo_url=dict(type="str"),
            chart_path=dict(type="path"),
            values=dict(type="dict", default={}),
            image_registry_mirror=dict(type="str", default=""),
            create_namespace=dict(type="bool", default=True),
            skip_crds=dict(type="bool", default=False),
            wait=dict(type="bool", default=True),
            wait_for_jobs=dict(type="bool", default=False),
            timeout=dict(type="str", default="10m"),
            atomic=dict(type="bool", default=False),
            no_hooks=dict(type="bool", default=False),
            openapi_validation=dict(type="bool", default=True),
            kubeconfig=dict(type="path"),
            kube_context=dict(type="str"),
            binary_path=dict(type="path"),
        ),
        mutually_exclusive=[("repo_url", "chart_path")],
        required_if=[("state", "present", ("repo_url", "chart_path"), True)],
        required_by={"repo_url": ("chart", "chart_version")},
        supports_check_mode=True,
    )
    p = module.params
    binary = p["binary_path"] or module.get_bin_path("helm", required=True)
    started = time.monotonic()
    try:
        check_registry_mirror(p["image_registry_mirror"])
        source = None
        if p["state"] == "present":
            source = chart_source(p["chart"], p["chart_version"], repo_url=p["repo_url"], chart_path=p["chart_path"])
        request = ReleaseRequest(
            name=p["name"], namespace=p["namespace"], state=p["state"], source=source,
            values=rewrite_registries(p["values"], p["image_registry_mirror"]),
            create_namespace=p["create_namespace"], skip_crds=p["skip_crds"], wait=p["wait"],
            wait_for_jobs=p["wait_for_jobs"], timeout=p["timeout"], atomic=p["atomic"],
            no_hooks=p["no_hooks"], openapi_validation=p["openapi_validation"],
        )
        helm = HelmRelease(module.run_command, binary=binary, kubeconfig=p["kubeconfig"],
                           kube_context=p["kube_context"], tmpdir=module.tmpdir)
        result = helm.ensure(request, check_mode=module.check_mode, want_diff=module._diff)
    except HelmError as exc:
        module.fail_json(msg=exc.msg, cmd=exc.argv, rc=exc.rc, stderr=exc.stderr)
    out = dict(changed=result.changed, status=result.status, release=result.release, values_changed=result.values_changed,
               manifest_changed=result.manifest_changed, chart_changed=result.chart_changed, settled=result.settled,
               commands=result.commands, retried=["%s: %s" % r for r in helm.retried],
               seconds=round(time.monotonic() - started, 1))
    for what, error in helm.retried:
        module.warn("helm failed to %s with a transient API error and was tried again: %s" % (what, error))
    if module._diff and result.diff:
        out["diff"] = result.diff
    module.exit_json(**out)


if __name__ == "__main__":
    main()
