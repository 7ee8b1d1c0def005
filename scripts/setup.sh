#!/usr/bin/env bash
# Create .venv (if missing) and install hierdp with its dependencies. Usage: scripts/setup.sh [dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
if [ "${1:-}" = "dev" ]; then
  .venv/bin/python -m pip install -q -r requirements-dev.txt
else
  .venv/bin/python -m pip install -q -r requirements.txt
fi
# plotly.js of the dashboard's traces from npm (hierdp_core/ui/plotly_bundle.py): best effort,
# without npm the dashboard loads the full plotly.js
.venv/bin/python -m hierdp_core.ui.plotly_bundle 2>/dev/null || echo "plotly.js bundle: not built"
