"""The soak: many launches in one process, with the process's resources counted.

Runs `launches` calls in turn of the examples' ReLU and axpb (one core each) and the multicore
ReLU (eight cores), each NumPy-exact, on two loaded libraries, and samples, after a warm-up and then at the end: this process's resident memory,
the summed resident memory of its children (the emulated cores), its open file descriptors,
its threads and its child processes. The bounds (BOUNDS) are what the README states; a run
that exceeds one fails naming it. Standalone (make soak):

    python tests/python/soak.py --isa host --launches 100000
    python tests/python/soak.py --isa xtensa --launches 10000

test_soak.py runs it in a bounded form inside make test.
"""
import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"
TILES = ROOT / "examples" / "multicore"

# Growth allowed between the sample after warm-up and the last one. Memory: the allocator's
# high-water marks move by a few pages without a leak; a leak of one page a launch over
# 100,000 launches is 400 MiB, far past these.
BOUNDS = {
    "rss_kib": 4096,  # this process
    "cores_rss_kib": 4096,  # all its core processes together
    "fds": 0,
    "threads": 0,
    "children": 0,
}


def _count(path):
    return len(os.listdir(path))


def children():
    """Pids of this process's children (every thread's list: cores are forked by a thread)."""
    pids = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def rss_kib(pid="self"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_ticks(pid):
    """User + system time of a process, in clock ticks (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def sample():
    kids = children()
    return {
        "rss_kib": rss_kib(),
        "cores_rss_kib": sum(rss_kib(p) for p in kids),
        "fds": _count("/proc/self/fd"),
        "threads": _count("/proc/self/task"),
        "children": len(kids),
    }


def load(isa, directory):
    """The two libraries the soak calls: (mlp_ops, tiles), built for `isa` in `directory`."""
    from gpsimd_open import custom_op

    d = pathlib.Path(directory)
    mlp = custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=d / "mlp", isa=isa)
    tiles = custom_op.load("tiles", [TILES / "relu_tiles.cpp"], [TILES / "shape.cpp"], build_directory=d / "tiles",
                           multicore=True, isa=isa)
    return mlp, tiles


def soak(libs, launches, warmup, report=None):
    """Runs `launches` exact calls on `libs` (from load()); returns (samples after warm-up
    and at the end, seconds taken by the launches after warm-up)."""
    rng = np.random.default_rng(31)
    xs = [rng.standard_normal((17, 33)).astype(np.float32) for _ in range(8)]
    mlp, tiles = libs
    calls = [
        lambda x: (mlp.ops["relu_forward"](x), np.maximum(x, 0)),
        lambda x: (mlp.ops["axpb"](x, 3.0, -0.5), x * np.float32(3) + np.float32(-0.5)),
        lambda x: (tiles.ops["relu"](x), np.maximum(x, 0)),
    ]
    first = None
    started = None
    for i in range(launches):
        if i == warmup:
            first, started = sample(), time.perf_counter()
        got, want = calls[i % len(calls)](xs[i % len(xs)])
        if not np.array_equal(got, want):
            raise AssertionError(f"launch {i}: wrong result")
        if report and i and i % report == 0:
            print(f"  {i} launches: {sample()}", file=sys.stderr, flush=True)
    took = time.perf_counter() - started
    return first, sample(), took


def over_bounds(first, last):
    """The bounds a run exceeded, as sentences (empty: within all of them)."""
    return [
        f"{k} grew by {last[k] - first[k]} (from {first[k]} to {last[k]}; bound {BOUNDS[k]})"
        for k in BOUNDS
        if last[k] - first[k] > BOUNDS[k]
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isa", choices=["host", "xtensa"], default="host")
    ap.add_argument("--launches", type=int, default=100000)
    ap.add_argument("--warmup", type=int, default=None, help="launches before the first sample (default 5%%)")
    args = ap.parse_args()
    warmup = args.warmup if args.warmup is not None else max(1, args.launches // 20)
    with tempfile.TemporaryDirectory() as d:
        first, last, took = soak(load(args.isa, d), args.launches, warmup, report=max(1, args.launches // 10))
    n = args.launches - warmup
    print(f"soak {args.isa}: {args.launches} launches exact; after warm-up ({warmup}): {n} in {took:.1f} s "
          f"({took / n * 1e6:.0f} us each)")
    for k in BOUNDS:
        print(f"  {k:14} {first[k]:>8} -> {last[k]:>8} (bound +{BOUNDS[k]})")
    bad = over_bounds(first, last)
    for b in bad:
        print(f"FAIL: {b}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
