#!/usr/bin/python
# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Check the add-on catalog and a site's choices; return the releases in dependency order."""

from __future__ import annotations

DOCUMENTATION = r"""
module: addon_plan
short_description: Check the add-on catalog and the enabled add-ons, and return the releases in dependency order
version_added: 0.1.0
description:
  - Validates the catalog (every dependency exists, no cycles, chart versions pinned, one Node Feature Discovery
    shared by the operators that use it) and the request (known add-on names, dependencies enabled, values are
    mappings). Any problem fails the task before a release changes, with a message saying what to fix.
  - Merges each add-on's values (catalog defaults, then I(derived_values), then the node group's selector, then the
    site's I(values)), rewrites image registries to I(image_registry_mirror), and points charts at I(chart_mirror)
    when one is set.
  - With I(verify_charts), reads every chart from its repository or mirror (C(helm show crds) or C(helm show chart)),
    so a chart version missing from the mirror fails here, and returns each chart's CRDs.
  - Changes nothing, in check mode or not.
author:
  - clusterdOS developers (@clusterdos)
attributes:
  check_mode:
    support: full
    description: Read-only; it runs the same way in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
options:
  catalog:
    description: The add-on catalog (C(roles/addons/vars/catalog.yml)), add-on name to entry.
    type: dict
    required: true
  enabled:
    description: Names of the add-ons to deploy.
    type: list
    elements: str
    default: []
  absent:
    description: Names of the add-ons to uninstall. None of them may be enabled, or needed by an enabled add-on.
    type: list
    elements: str
    default: []
  values:
    description: The site's values per add-on, merged last (add-on name to a mapping).
    type: dict
    default: {}
  derived_values:
    description: Values computed from the inventory per add-on, merged over the catalog's defaults.
    type: dict
    default: {}
  node_selectors:
    description: Node selector (label to value) of each node group, put at the entry's C(node_selector_paths).
    type: dict
    default: {}
  chart_mirror:
    description:
      - Where every chart is read from instead of its upstream repository. An https:// or http:// Helm repository,
        an C(oci://) registry path, or an absolute directory of chart archives named C(<chart>-<version>.tgz).
        Empty uses upstream.
    type: str
    default: ""
  image_registry_mirror:
    description: Registry (C(host[:port][/prefix])) that stands in for the upstream image registries. Empty keeps upstream.
    type: str
    default: ""
  upstream_registries:
    description: Registries that I(image_registry_mirror) replaces.
    type: list
    elements: str
  verify_charts:
    description: Read each chart with helm to prove its version is available, and return its CRDs.
    type: bool
    default: false
  render_charts:
    description:
      - Render each chart with its final values (C(helm template), no cluster read), so values that the chart's
        C(values.schema.json) or its templates refuse fail here, before any release changes.
    type: bool
    default: false
  binary_path:
    description: The helm binary used by I(verify_charts) and I(render_charts). Default is C(helm) from C(PATH).
    type: path
"""

EXAMPLES = r"""
- name: Plan the add-ons of this site
  clusterdos.cluster.addon_plan:
    catalog: "{{ lookup('ansible.builtin.file', 'catalog.yml') | from_yaml }}"
    enabled: [cert_manager, metrics_server]
    values:
      metrics_server:
        args: [--kubelet-insecure-tls]
    chart_mirror: oci://registry.site.example/charts
    image_registry_mirror: registry.site.example
    verify_charts: true
    render_charts: true
  register: plan
"""

RETURN = r"""
releases:
  description: The enabled add-ons in dependency order, ready for M(clusterdos.cluster.helm_addon).
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: Add-on name., type: str}
    release: {description: Helm release name., type: str}
    namespace: {description: Release namespace., type: str}
    chart: {description: Chart name., type: str}
    version: {description: Chart version., type: str}
    repo_url: {description: Repository (https or oci) the chart is read from; null with a chart directory., type: str}
    chart_path: {description: Directory of chart archives; null with a repository., type: str}
    release_values: {description: The merged values., type: dict}
    depends_on: {description: Add-ons this one needs., type: list, elements: str}
    node_group: {description: "Node group the add-on targets (null when none).", type: str}
    manifests: {description: Kubernetes objects to apply once the release is ready., type: list, elements: dict}
    crds: {description: Whether the chart's CRDs are applied (and upgraded) before the release., type: bool}
    crd_manifest: {description: The chart's CRDs as a YAML stream (with I(verify_charts) and C(crds))., type: str}
    wait: {description: Wait for the workloads., type: bool}
    wait_for_jobs: {description: Wait for Jobs too., type: bool}
    timeout: {description: Helm timeout., type: str}
    storage_classes:
      description: >-
        The storage classes the release creates (C(name), C(default), C(addon)), read from its
        final values where the catalog entry's C(storage_classes) says. A name used twice across
        the enabled add-ons, or two default classes, fails the plan.
      type: list
      elements: dict
removals:
  description: The add-ons of I(absent), dependents first, each with C(name), C(release) and C(namespace).
  returned: always
  type: list
  elements: dict
  sample: [{name: vllm, release: vllm, namespace: vllm}]
commands:
  description: The helm commands I(verify_charts) ran, as argv lists.
  returned: always
  type: list
  elements: list
order:
  description: Add-on names in the order they are deployed.
  returned: always
  type: list
  elements: str
  sample: [node_feature_discovery, gpu_operator]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.clusterdos.cluster.plugins.module_utils.addon_catalog import CatalogError, plan, removal_plan
from ansible_collections.clusterdos.cluster.plugins.module_utils.helm import (
    DEFAULT_UPSTREAM_REGISTRIES,
    HelmError,
    HelmRelease,
    check_charts,
    check_registry_mirror,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            catalog=dict(type="dict", required=True),
            enabled=dict(type="list", elements="str", default=[]),
            absent=dict(type="list", elements="str", default=[]),
            values=dict(type="dict", default={}),
            derived_values=dict(type="dict", default={}),
            node_selectors=dict(type="dict", default={}),
            chart_mirror=dict(type="str", default=""),
            image_registry_mirror=dict(type="str", default=""),
            upstream_registries=dict(type="list", elements="str"),
            verify_charts=dict(type="bool", default=False),
            render_charts=dict(type="bool", default=False),
            binary_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        check_registry_mirror(p["image_registry_mirror"])
        releases = plan(
            p["catalog"], p["enabled"], p["values"], derived=p["derived_values"], chart_mirror=p["chart_mirror"],
            registry_mirror=p["image_registry_mirror"],
            upstream_registries=p["upstream_registries"] or DEFAULT_UPSTREAM_REGISTRIES,
            node_selectors=p["node_selectors"],
        )
        removals = removal_plan(p["catalog"], p["absent"], p["enabled"])
        commands = []
        if (p["verify_charts"] or p["render_charts"]) and releases:
            binary = p["binary_path"] or module.get_bin_path("helm", required=True)
            helm = HelmRelease(module.run_command, binary=binary, tmpdir=module.tmpdir)
            check_charts(helm, releases, verify=p["verify_charts"], render=p["render_charts"])
            commands = helm.commands
    except (CatalogError, HelmError) as exc:
        module.fail_json(msg=str(exc), cmd=getattr(exc, "argv", None))
    module.exit_json(changed=False, releases=releases, removals=removals, order=[r["name"] for r in releases], commands=commands)


if __name__ == "__main__":
    main()
