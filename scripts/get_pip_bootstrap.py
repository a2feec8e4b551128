"""Stand-in for pip's get-pip.py that ansible-test downloads from a host this network
cannot reach: bootstraps pip from Python's own bundled wheel (ensurepip), then lets pip
install the requested packages from the configured package index.

ansible-test runs it as `python get_pip_X_Y.py [pip options] pip==X.Y [--no-setuptools] [--no-wheel]`.
"""

import ensurepip
import os
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}

ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in GET_PIP_ONLY]
# ansible-test runs this with a reduced environment; keep a site CA bundle working.
for bundle in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"):
    if os.path.exists(bundle):
        args = ["--cert", bundle, *args]
        break
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))
