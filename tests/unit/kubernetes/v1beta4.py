"""The fields kubeadm v1beta4 (kubeadm.k8s.io/v1beta4, Kubernetes 1.31+) accepts, as a
tree of allowed keys, written from the v1beta4 API types (cmd/kubeadm/app/apis/kubeadm/
v1beta4/types.go). kubeadm rejects unknown fields in strict decoding; so do these tests.
A value of None means "any value"; a dict is a nested object; [dict] a list of objects.
"""

from __future__ import annotations

ARG = {"name": None, "value": None}
ENV = {"name": None, "value": None, "valueFrom": None}
VOLUME = {"name": None, "hostPath": None, "mountPath": None, "readOnly": None, "pathType": None}
TAINT = {"key": None, "value": None, "effect": None, "timeAdded": None}
CONTROL_PLANE_COMPONENT = {"extraArgs": [ARG], "extraVolumes": [VOLUME], "extraEnvs": [ENV]}
NODE_REGISTRATION = {"name": None, "criSocket": None, "taints": [TAINT], "kubeletExtraArgs": [ARG],
                     "ignorePreflightErrors": None, "imagePullPolicy": None, "imagePullSerial": None}
API_ENDPOINT = {"advertiseAddress": None, "bindPort": None}
PATCHES = {"directory": None}
TIMEOUTS = {"controlPlaneComponentHealthCheck": None, "kubeletHealthCheck": None, "kubernetesAPICall": None,
            "etcdAPICall": None, "tlsBootstrap": None, "discovery": None, "upgradeManifests": None}
BOOTSTRAP_TOKEN = {"token": None, "description": None, "ttl": None, "expires": None, "usages": None, "groups": None}

INIT = {"apiVersion": None, "kind": None, "bootstrapTokens": [BOOTSTRAP_TOKEN], "dryRun": None,
        "nodeRegistration": NODE_REGISTRATION, "localAPIEndpoint": API_ENDPOINT, "certificateKey": None,
        "skipPhases": None, "patches": PATCHES, "timeouts": TIMEOUTS}
CLUSTER = {
    "apiVersion": None, "kind": None,
    "etcd": {"local": {"imageRepository": None, "imageTag": None, "dataDir": None, "extraArgs": [ARG],
                       "extraEnvs": [ENV], "serverCertSANs": None, "peerCertSANs": None},
             "external": {"endpoints": None, "caFile": None, "certFile": None, "keyFile": None}},
    "networking": {"serviceSubnet": None, "podSubnet": None, "dnsDomain": None},
    "kubernetesVersion": None, "controlPlaneEndpoint": None,
    "apiServer": dict(CONTROL_PLANE_COMPONENT, certSANs=None),
    "controllerManager": CONTROL_PLANE_COMPONENT, "scheduler": CONTROL_PLANE_COMPONENT,
    "dns": {"imageRepository": None, "imageTag": None, "disabled": None},
    "proxy": {"disabled": None},
    "certificatesDir": None, "imageRepository": None, "featureGates": None, "clusterName": None,
    "encryptionAlgorithm": None, "certificateValidityPeriod": None, "caCertificateValidityPeriod": None,
}
JOIN = {"apiVersion": None, "kind": None, "dryRun": None, "nodeRegistration": NODE_REGISTRATION, "caCertPath": None,
        "discovery": {"bootstrapToken": {"token": None, "apiServerEndpoint": None, "caCertHashes": None,
                                         "unsafeSkipCAVerification": None},
                      "file": {"kubeConfigPath": None}, "tlsBootstrapToken": None},
        "controlPlane": {"localAPIEndpoint": API_ENDPOINT, "certificateKey": None},
        "skipPhases": None, "patches": PATCHES, "timeouts": TIMEOUTS}

SCHEMAS = {("kubeadm.k8s.io/v1beta4", "InitConfiguration"): INIT,
           ("kubeadm.k8s.io/v1beta4", "ClusterConfiguration"): CLUSTER,
           ("kubeadm.k8s.io/v1beta4", "JoinConfiguration"): JOIN}

# kubelet.config.k8s.io/v1beta1 fields this collection sets (all exist since 1.31).
KUBELET_FIELDS = {"apiVersion", "kind", "cgroupDriver", "failCgroupV1", "maxPods", "systemReserved", "kubeReserved",
                  "evictionHard", "enforceNodeAllocatable", "serverTLSBootstrap", "rotateCertificates",
                  "containerRuntimeEndpoint", "resolvConf"}
TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}


def unknown_fields(doc, schema, path="") -> list[str]:
    """Every key of `doc` that `schema` does not allow, as dotted paths."""
    problems = []
    if schema is None:
        return problems
    if isinstance(schema, list):
        if not isinstance(doc, list):
            return [f"{path}: expected a list, got {type(doc).__name__}"]
        for i, item in enumerate(doc):
            problems += unknown_fields(item, schema[0], f"{path}[{i}]")
        return problems
    if not isinstance(doc, dict):
        return [f"{path}: expected an object, got {type(doc).__name__}"]
    for key, value in doc.items():
        if key not in schema:
            problems.append(f"{path}.{key}".lstrip("."))
        else:
            problems += unknown_fields(value, schema[key], f"{path}.{key}")
    return problems
