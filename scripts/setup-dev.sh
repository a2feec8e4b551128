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

# ansible-core 2.21 needs Python >= 3.12 on the controller. Debian 12 ships 3.11, so
# there it comes from elsewhere: PYTHON=..., pyenv, or a uv-managed Python (uv python
# install 3.12), all looked for here.
pick_python() {
  local uv_py=""
  if command -v uv >/dev/null 2>&1; then uv_py="$(uv python find '>=3.12' 2>/dev/null || true)"; fi
  for c in "${PYTHON:-}" python3.13 python3.12 "$uv_py" "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 \
      /root/.pyenv/versions/3.12*/bin/python3 /root/.pyenv/versions/3.13*/bin/python3 python3; do
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
  py="$(pick_python)" || {
    have="$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null || echo none)"
    os="$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME" || uname -s)"
    cat >&2 <<MSG
setup: the controller needs Python >= 3.12 (ansible-core 2.21 requires it); this machine
has python3 $have ($os). Debian 12 ships only 3.11; Debian 13 and Ubuntu 24.04
ship 3.12 or newer and need nothing more. On Debian 12, either:
  - uv (from PyPI; it downloads a standalone CPython 3.12):
      apt-get install -y python3-pip
      python3 -m pip install --user --break-system-packages uv
      ~/.local/bin/uv python install 3.12
      PYTHON="\$(~/.local/bin/uv python find 3.12)" make setup
  - or pyenv (builds 3.12 from source): pyenv install 3.12, then
      PYTHON=~/.pyenv/versions/3.12.*/bin/python3 make setup
Managed hosts need only their own python3; this is about the controller alone.
MSG
    exit 2
  }
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
