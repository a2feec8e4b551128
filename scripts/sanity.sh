#!/usr/bin/env bash
# ansible-test sanity on a copy of the collection laid out as ansible-test expects
# (ansible_collections/clusterdos/cluster). Each test runs in its own venv with the
# requirements ansible-test pins for it (installed from PyPI on first use).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One work directory per checkout: two checkouts checked side by side (a CI clone and a
# working tree) each rebuilt the other's copy under it, and one of them failed.
work="${SANITY_WORKDIR:-/tmp/clusterdos-sanity-$(printf '%s' "$here" | sha1sum | cut -c1-12)}"
dest="$work/ansible_collections/clusterdos/cluster"
rm -rf "$dest"; mkdir -p "$dest"
cd "$here"
# Only what the collection ships (galaxy.yml build_ignore): the lab, scripts and
# benchmarks are tools of this repository, and tests/ and molecule/ are test code run by
# pytest and molecule; sanity checks what the collection ships to users.
git ls-files -co --exclude-standard -z -- . ':!bin' ':!lab' ':!scripts' ':!benchmarks' ':!.ci' ':!molecule' ':!tests/unit' ':!tests/lab' ':!tests/playbooks' \
  | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
# ansible-test lists files through git when it finds a repository.
git init -q && git add -A >/dev/null
# ansible-test fetches a pip bootstrap script from a host this network cannot reach;
# give it our stand-in for the pip version it asks for.
pip_version="$("$here/.venv/bin/python" - <<'PY'
import re, ansible_test, pathlib
src = (pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py").read_text()
m = re.search(r"default_packages = dict\(\s*pip='([0-9.]+)'", src)
print(m.group(1) if m else "")
PY
)"
if [ -n "$pip_version" ]; then
  mkdir -p ~/.ansible/test/cache
  cp "$here/scripts/get_pip_bootstrap.py" ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
fi
py="$("$here/.venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
"$here/.venv/bin/ansible-test" sanity --venv --python "$py" --color no "$@"
