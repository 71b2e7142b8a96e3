"""`make bench`'s Python rows, as ratios measured in one run (median of repeats, spread;
JSON in target/bench/python.json, merged into target/bench.json by `make bench`):

- an empty op called from Python (gpsimd_open) vs a no-op function of the same binding;
- a 64 MiB ReLU from NumPy in and out vs np.maximum on the same array;
- `nrt-pool run` of x*a+b over 64 MiB from and to .npy vs NumPy loading, computing and
  saving the same (issue #14's goal: at most 2x NumPy's time).
"""
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from gpsimd_open import _native, custom_op

ROOT = pathlib.Path(__file__).resolve().parents[3]


def timed(f, repeats, inner=1):
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            f()
        runs.append((time.perf_counter() - t) / inner)
    return statistics.median(runs), min(runs), max(runs)


ROWS = []


def row(name, value, base, unit, scale, goal=None):
    """goal: the least acceptable ratio baseline/ours (None: informational)."""
    v, lo, hi = value
    b, blo, bhi = base
    ratio = b / v
    met = None if goal is None else ratio >= goal
    verdict = "" if goal is None else f"  goal >= {goal}x {'met' if met else 'MISSED'}"
    print(f"{name:<44} {v * scale:10.2f} {unit} [{lo * scale:.2f}..{hi * scale:.2f}]  vs {b * scale:10.3f} {unit} [{blo * scale:.3f}..{bhi * scale:.3f}]  ratio {ratio:.4f}{verdict}")
    sample = lambda t: {"median_s": t[0], "min_s": t[1], "max_s": t[2]}
    ROWS.append({"suite": "python", "row": name, "ours": sample(value), "baseline": sample(base),
                 "ratio": ratio, "goal": "-" if goal is None else f">= {goal}x", "met": met})


def main():
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpsimd_open_bench_"))
    (work / "empty.cpp").write_text("#include <torch/torch.h>\ntorch::Tensor empty_op(const torch::Tensor &x) { return get_dst_tensor(); }\n")
    (work / "shape.cpp").write_text("#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n"
                                    "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), x.scalar_type()); }\n"
                                    "NEURON_LIBRARY(bench, m) { m.def(\"empty\", &s, \"empty_op\"); }\n")
    custom_op.load("bench", [work / "empty.cpp"], [work / "shape.cpp"], build_directory=work)
    mc = ROOT / "examples" / "multicore"
    tiles = custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=work, multicore=True)
    one = np.zeros(1, np.float32)
    empty = custom_op.ops.bench.empty
    empty(one)
    row("python call: empty op, 1 core (us)", timed(lambda: empty(one), 15, 200), timed(_native.noop, 15, 200000), "us", 1e6)
    x = np.random.default_rng(0).standard_normal(16 * 1024 * 1024).astype(np.float32).reshape(4096, 4096)
    relu = custom_op.ops.tiles.relu
    np.testing.assert_array_equal(relu(x), np.maximum(x, 0))
    row("python 64 MiB relu, 8 cores (ms)", timed(lambda: relu(x), 7), timed(lambda: np.maximum(x, 0), 7), "ms", 1e3)
    del tiles

    # The parity check (issue #40): a call checked against the Pool image beside the host
    # build (both built as custom_op.load(..., isa="xtensa") does), on 8 cores, 1 MiB,
    # against the same call unchecked. Warm: the twin's QEMU cores start on the first call.
    both = work / "both"
    custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=both,
                   multicore=True, isa="xtensa")
    host_tiles = custom_op.load_library(both / "libtiles.so")
    m = np.random.default_rng(1).standard_normal(256 * 1024).astype(np.float32)
    checked = host_tiles.ops["relu"]
    np.testing.assert_array_equal(checked(m, check="parity"), np.maximum(m, 0))
    row("python check=parity 1 MiB relu, 8 cores (ms)", timed(lambda: checked(m, check="parity"), 5),
        timed(lambda: checked(m), 5), "ms", 1e3)
    del host_tiles

    # nrt-pool run, .npy to .npy, vs NumPy doing the same load, compute and save.
    nrt_pool = ROOT / "target" / "release" / "nrt-pool"
    ex = ROOT / "examples" / "ops"
    lib = work / "libops.so"
    subprocess.run([nrt_pool, "build", "--schema", ex / "ops.schema", "--out", lib,
                    ex / "scale_add.cpp", ex / "scale_add_mc.cpp", ex / "hello.cpp"],
                   check=True, capture_output=True)
    xin, yout, npout = work / "x.npy", work / "y.npy", work / "np.npy"
    np.save(xin, x.reshape(-1))
    cli = [nrt_pool, "run", lib, "scale_add_mc", "--arg", xin, "--arg", "2", "--arg", "1",
           "--out", yout, "--cores", "8"]

    def numpy_way():
        a = np.load(xin)
        np.save(npout, a * np.float32(2) + np.float32(1))

    # 11 back-to-back runs each: single runs on this VM move by 2-5x (D66).
    t_cli = timed(lambda: subprocess.run(cli, check=True, capture_output=True), 11)
    t_np = timed(numpy_way, 11)
    np.testing.assert_array_equal(np.load(yout), np.load(npout))
    # Goal: at most 2x NumPy's time, i.e. a ratio (NumPy / ours) of at least 0.5.
    row("nrt-pool run 64 MiB x*a+b .npy->.npy (ms)", t_cli, t_np, "ms", 1e3, goal=0.5)

    out = ROOT / "target" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    (out / "python.json").write_text(json.dumps(ROWS, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
