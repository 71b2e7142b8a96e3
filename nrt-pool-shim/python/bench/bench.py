"""`make bench`'s Python rows, as ratios measured in one run (median of repeats, spread):

- an empty op called from Python (gpsimd_open) vs a no-op function of the same binding;
- a 64 MiB ReLU from NumPy in and out vs np.maximum on the same array.
"""
import pathlib
import statistics
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


def row(name, value, base, unit, scale):
    v, lo, hi = value
    b, blo, bhi = base
    print(f"{name:<44} {v * scale:10.2f} {unit} [{lo * scale:.2f}..{hi * scale:.2f}]  vs {b * scale:10.3f} {unit} [{blo * scale:.3f}..{bhi * scale:.3f}]  ratio {b / v:.4f}")


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


if __name__ == "__main__":
    sys.exit(main())
