"""ns per value (process CPU time) of secure and seeded noise, per distribution and scale.

Backends: ``hierdp`` (the exact sampler, `hierdp_core.privacy.exact`, ChaCha20 keystream),
``opendp`` (OpenDP's measurement on zeros; only at sizes <= 100k: it is slow) and
``seeded`` (numpy PCG64, the exploration sampler). Usage:
``python benchmarks/bench_noise.py [--sizes 100000 10000000] [--out FILE]``; prints JSON
with the machine's load (``os.getloadavg``) beside the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from hierdp_core.privacy.exact import exact_noise
from hierdp_core.privacy.opendp_noise import opendp_apply
from hierdp_core.privacy.samplers import DiscreteGaussian, Geometric, NoiseSource

CASES = [("discrete-laplace", s) for s in (1.0, 10 / 3, 10.0, 100.0, 1000.0)] + [
    ("discrete-gaussian", s) for s in (1.0, 10.0, 100.0)]
OPENDP_MAX = 100_000


def cpu_ns_per_value(draw, size: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        draw(size)
        best = min(best, time.process_time() - t)
    return round(best / size * 1e9, 1)


def bench(sizes: list[int], repeat: int) -> dict:
    rows = []
    for kind, scale in CASES:
        noise = exact_noise(kind, scale)
        seeded = (Geometric if kind == "discrete-laplace" else DiscreteGaussian)(scale)
        opendp_kind = "laplace" if kind == "discrete-laplace" else "gaussian"
        for size in sizes:
            row = {"distribution": kind, "scale": scale, "sampled": noise.parameter,
                   "values": size,
                   "hierdp_ns": cpu_ns_per_value(noise.sample, size, repeat),
                   "seeded_ns": cpu_ns_per_value(
                       lambda n, s=seeded: s.sample(n, NoiseSource(seed=1)), size, repeat)}
            if size <= OPENDP_MAX:  # CPU of all threads: OpenDP measures chunks on a pool
                row["opendp_ns"] = cpu_ns_per_value(
                    lambda n, k=opendp_kind, sc=scale: opendp_apply(
                        np.zeros(n, dtype=np.int64), k, sc, True), size, 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return {"load_average": os.getloadavg(), "cpu_count": os.cpu_count(), "rows": rows,
            "targets": {"discrete-laplace_ns": 250, "discrete-gaussian_ns": 1000}}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100_000, 10_000_000])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", help="write the JSON here too")
    args = p.parse_args(argv)
    result = bench(args.sizes, args.repeat)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
