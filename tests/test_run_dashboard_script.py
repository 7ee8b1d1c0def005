"""scripts/run-dashboard.sh: a busy port is named, never silently swapped for another app's."""

import socket
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "run-dashboard.sh"


def test_a_busy_asked_port_is_refused_in_one_line():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(["bash", str(SCRIPT), "--server.port", str(port)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {port} is busy" in lines[0]
    assert "dashboard: http" not in done.stdout  # nothing was started
