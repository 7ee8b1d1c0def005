"""What the benchmarks record about the machine they ran on (timings depend on it)."""

from __future__ import annotations

import os
import platform

import numpy as np


def machine_info() -> dict:
    """Python and numpy versions, CPU count, platform, and the 1-minute load average at the
    time of the call (other jobs on the machine slow the timings)."""
    return {"python": platform.python_version(), "numpy": np.__version__,
            "cpus": os.cpu_count(), "platform": platform.platform(),
            "load_1min": round(os.getloadavg()[0], 2)}
