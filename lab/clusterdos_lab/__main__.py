"""`python -m clusterdos_lab`."""

import sys

from .cli import main

sys.exit(main())
