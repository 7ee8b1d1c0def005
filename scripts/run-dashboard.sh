#!/usr/bin/env bash
# Set up (first time) and start the dashboard on a free local port (8501 unless busy or
# --server.port is given); prints the address it serves before starting.
set -euo pipefail
cd "$(dirname "$0")/.."
port=8501
asked=""
args=("$@")
for i in "${!args[@]}"; do
  case "${args[$i]}" in
    --server.port=*) asked="${args[$i]#*=}" ;;
    --server.port) asked="${args[$((i + 1))]:-}" ;;
  esac
done
free() { python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}
if [ -n "$asked" ]; then
  if ! free "$asked"; then
    echo "run-dashboard: port $asked is busy (another program serves it); choose another --server.port" >&2
    exit 2
  fi
  port=$asked
else
  while ! free "$port"; do
    port=$((port + 1))
    if [ "$port" -gt 8599 ]; then
      echo "run-dashboard: no free port between 8501 and 8599; pass --server.port" >&2
      exit 2
    fi
  done
  args+=(--server.port "$port")
fi
bash scripts/setup.sh
echo "hierdp dashboard: http://localhost:$port"
# One BLAS thread per computation: the server runs sessions and sweeps in threads of their
# own, and a multi-threaded BLAS in each oversubscribes the cores (on 2 cores at load 5, a
# batch of DAWA's 86 x 86 Gram matrices took 10.6 ms with two threads, 0.34 ms with one)
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
exec .venv/bin/python -m hierdp_core.ui.serve --server.headless true "${args[@]}"
