#!/usr/bin/env bash
# A scratch virtual environment with SCALE-Sim 3.0.0 from PyPI, for compare_scalesim.py.
# SCALE-Sim needs numpy < 2.4. Nothing of SCALE-Sim is kept in this repository.
set -euo pipefail
venv="${1:-/tmp/scalesim-venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q 'scalesim==3.0.0' 'numpy<2.4'
echo "$venv/bin/python"
