# Copyright: clusterdOS developers
# Apache License 2.0 (see LICENSE)
"""Post-install validation: checks for Kubernetes, Slurm and hardware, the runner
that selects and times them, and the report writers (JUnit XML, JSON, HTML)."""
