#!/usr/bin/env bash
# Set up (first time) and run the whole test suite: lint, then pytest on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  # Debian's chromium, for the browser tests (Playwright drives it; no browser download)
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; browser tests will be skipped"
fi
.venv/bin/ruff check .
# compiled modules are kept (__pycache__, git-ignored): with PYTHONDONTWRITEBYTECODE set (as in
# some containers) each test worker compiled every test module and its assertion rewriting
# again (collection 18.5 s of CPU a worker instead of 10), and every dashboard, CLI and Dask
# worker process the tests start compiled hierdp_core again
unset PYTHONDONTWRITEBYTECODE
# worksteal: a worker that runs out of tests takes the other's, so the last slow (browser) tests
# are not left to one of the two cores
# the 40 slowest tests are listed at the end, so a run that creeps towards the 20-minute limit
# shows where
.venv/bin/python -m pytest -n 2 --dist worksteal -q --durations=40 "$@"
