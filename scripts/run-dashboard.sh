#!/usr/bin/env bash
# Set up (first time) and start the dashboard on http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/streamlit run app.py --server.headless true "$@"
