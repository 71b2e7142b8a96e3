"""`make bench`'s Python rows, as ratios measured in one run (median of repeats, spread;
JSON in target/bench/python.json, merged into target/bench.json by `make bench`):

- an empty op called from Python (gpsimd_open) vs a no-op function of the same binding;
- a 64 MiB ReLU from NumPy in and out vs np.maximum on the same array;
- the same op through ``torch.ops`` on a CPU tensor vs from NumPy (32x4096 floats);
- `nrt-pool run` of x*a+b over 64 MiB from and to .npy vs NumPy loading, computing and
  saving the same (issue #14's goal: at most 2x NumPy's time), and its peak memory;
- what users pay: the first result after `custom_op.load` and after
  `nrt-pool build` on each backend (a fresh process: cold cores, QEMU translating) vs the
  host compiler building the kernel's source alone; the first and a warm call on Xtensa
  cores at 1 MiB and 64 MiB; memory per host core and per QEMU core; checks on a small op,
  an interleaved split and on Xtensa cores.

`python bench.py [FILTER]` (or `$BENCH_FILTER`) runs only the rows whose name contains it.
"""
import json
import os
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
FILTER = next((a for a in sys.argv[1:] if not a.startswith("-")), None) or os.environ.get("BENCH_FILTER") or ""


def wants(name):
    return FILTER in name


def row(name, value, base, unit, scale, goal=None, limit=None):
    """goal: the least acceptable ratio baseline/ours; limit: the most ours may take, in
    the row's unit (neither: informational)."""
    v, lo, hi = value
    b, blo, bhi = base
    ratio = b / v
    if limit is not None:
        met = v * scale <= limit
        goal_text = f"<= {limit} {unit}"
    elif goal is not None:
        met = ratio >= goal
        goal_text = f">= {goal}x"
    else:
        met, goal_text = None, "-"
    verdict = "" if met is None else f"  goal {goal_text} {'met' if met else 'MISSED'}"
    print(f"{name:<44} {v * scale:10.2f} {unit} [{lo * scale:.2f}..{hi * scale:.2f}]  vs {b * scale:10.3f} {unit} [{blo * scale:.3f}..{bhi * scale:.3f}]  ratio {ratio:.4f}{verdict}")
    sample = lambda t: {"median_s": t[0], "min_s": t[1], "max_s": t[2]}
    ROWS.append({"suite": "python", "row": name, "ours": sample(value), "baseline": sample(base),
                 "ratio": ratio, "goal": goal_text, "met": met, "unit": unit, "scale": scale})


EMPTY = "#include <torch/torch.h>\ntorch::Tensor empty_op(const torch::Tensor &x) { return get_dst_tensor(); }\n"
EMPTY_SHAPE = ("#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n"
               "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), x.scalar_type()); }\n"
               "NEURON_LIBRARY(bench, m) { m.def(\"empty\", &s, \"empty_op\"); }\n")
# Cores take 1 KiB blocks in turn (core c: blocks c, c+8, ...): every page is shared by
# several cores, the case the checks' touched-page shortcuts do least for.
INTERLEAVED = r"""
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>
torch::Tensor twice(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = x.numel(), cores = get_cpu_count(), me = get_cpu_id(), block = 256;
    float *buf = (float *)torch::neuron::tcm_malloc(sizeof(float) * block);
    auto in = x.tcm_accessor();
    auto out = y.tcm_accessor();
    for (size_t at = me * block; at < n; at += cores * block) {
        size_t k = n - at < block ? n - at : block;
        in.tensor_to_tcm<float>(buf, at, k);
        for (size_t j = 0; j < k; j++) buf[j] *= 2.0f;
        out.tcm_to_tensor<float>(buf, at, k);
    }
    torch::neuron::tcm_free(buf);
    return y;
}
"""
INTERLEAVED_SHAPE = ("#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n"
                     "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n"
                     "NEURON_LIBRARY(inter, m) { m.def(\"twice\", &s, \"twice\"); }\n")


def descendants(pid):
    """Every process below `pid` (core processes, QEMU cores, their helpers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in pathlib.Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def pss_bytes(pid):
    try:
        for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def core_memory(lib, isa, elems):
    """Proportional memory per core (bytes) of a library's 8 cores after one call, in a
    process of its own (so no other library's cores are counted)."""
    script = (f"import os, sys, numpy as np\nsys.path.insert(0, {str(pathlib.Path(__file__).parent)!r})\n"
              f"import bench\nfrom gpsimd_open import custom_op\n"
              f"lib = custom_op.load_library({str(lib)!r}, isa={isa!r})\n"
              f"lib.ops['relu'](np.ones({elems}, np.float32), cores=8)\n"
              f"print(sum(bench.pss_bytes(p) for p in bench.descendants(os.getpid())) / 8)\n")
    r = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
    return float(r.stdout.split()[-1])


def idle_pss():
    """A minimal process's proportional memory: the baseline of the memory rows."""
    p = subprocess.Popen(["sleep", "30"])
    time.sleep(0.2)
    v = pss_bytes(p.pid)
    p.kill()
    p.wait()
    return v


def peak_pss(argv):
    """The most memory a command and every process it starts hold at once (bytes): the sum
    of their proportional set sizes, sampled every few milliseconds while it runs (device
    memory the cores share counts once, split between them)."""
    p = subprocess.Popen([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        tree = [p.pid] + descendants(p.pid)
        peak = max(peak, sum(pss_bytes(q) for q in tree))
        time.sleep(0.005)
    assert p.returncode == 0, argv
    return peak


def first_result_rows(work, nrt_pool):
    """What a user waits for from a source to a result, in a fresh process, against the
    host compiler compiling the kernel's source alone."""
    mc = ROOT / "examples" / "multicore"
    compile_only = ["g++", "-std=c++17", "-O2", "-c", str(mc / "relu_tiles.cpp"), "-I", str(ROOT / "include"),
                    "-o", str(work / "plain.o")]
    base = timed(lambda: subprocess.run(compile_only, check=True, capture_output=True), 3)
    n = [0]

    def fresh(isa):
        n[0] += 1
        d = work / f"first{n[0]}"
        script = (f"import numpy as np\nfrom gpsimd_open import custom_op\n"
                  f"custom_op.load('tiles', [{str(mc / 'relu_tiles.cpp')!r}], [{str(mc / 'shape.cpp')!r}], "
                  f"build_directory={str(d)!r}, multicore=True, isa={isa!r})\n"
                  f"x = np.arange(-512, 512, dtype=np.float32)\n"
                  f"assert (custom_op.ops.tiles.relu(x) == np.maximum(x, 0)).all()\n")
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)

    def cli(isa):
        n[0] += 1
        d = work / f"first{n[0]}"
        image = ["--device-image"] if isa == "xtensa" else []
        subprocess.run([nrt_pool, "build", "--name", "tiles", "--compute", mc / "relu_tiles.cpp", "--shape",
                        mc / "shape.cpp", "--build-directory", d, "--multicore", *image], check=True,
                       capture_output=True)
        lib = d / ("libtiles.pool" if isa == "xtensa" else "libtiles.so")
        subprocess.run([nrt_pool, "run", lib, "tiles::relu", "--arg", work / "small.npy", "--out", d / "y.npy"],
                       check=True, capture_output=True)

    np.save(work / "small.npy", np.arange(-512, 512, dtype=np.float32))
    for isa, limit in [("host", 10), ("xtensa", 20)]:
        name = f"first result: custom_op.load + first call, {isa} cores, vs g++ -c of the kernel (s)"
        if wants(name):
            row(name, timed(lambda: fresh(isa), 3), base, "s", 1, limit=limit)
        name = f"first result: nrt-pool build + run, {isa} cores, vs g++ -c of the kernel (s)"
        if wants(name):
            row(name, timed(lambda: cli(isa), 3), base, "s", 1, limit=limit)


def xtensa_rows(work):
    """Xtensa cores: a call on fresh cores (QEMU starting and translating) against a warm
    one, and a warm one against host cores, at 1 MiB and 64 MiB; memory per core."""
    mc = ROOT / "examples" / "multicore"
    both = work / "xt"
    custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=both,
                   multicore=True, isa="xtensa")
    host = custom_op.load_library(both / "libtiles.so", isa="host")
    for label, elems in [("1 MiB", 256 * 1024), ("64 MiB", 16 * 1024 * 1024)]:
        x = np.random.default_rng(2).standard_normal(elems).astype(np.float32)
        reps = 3 if elems > 1 << 20 else 5
        first_name = f"xtensa {label} relu, 8 cores: first call on fresh cores vs a warm call (ms)"
        warm_name = f"xtensa {label} relu, 8 cores: warm call vs host cores (ms)"
        if not (wants(first_name) or wants(warm_name)):
            continue
        firsts = []
        for _ in range(reps):
            lib = custom_op.load_library(both / "libtiles.pool", isa="xtensa")
            t = time.perf_counter()
            y = lib.ops["relu"](x)
            firsts.append(time.perf_counter() - t)
            np.testing.assert_array_equal(y, np.maximum(x, 0))
        warm_op = lib.ops["relu"]
        warm = timed(lambda: warm_op(x), reps)
        if wants(first_name):
            # What a user's first call pays for QEMU starting and translating: at most a second.
            row(first_name, (statistics.median(firsts), min(firsts), max(firsts)), warm, "ms", 1e3, limit=1000)
        if wants(warm_name):
            row(warm_name, warm, timed(lambda: host.ops["relu"](x), reps), "ms", 1e3, goal=1 / 40)
        del lib, warm_op
    name = "memory per QEMU core (PSS) vs an idle process (MiB)"
    if wants(name):
        v = [core_memory(both / "libtiles.pool", "xtensa", 256 * 1024) for _ in range(3)]
        row(name, (statistics.median(v), min(v), max(v)), (idle_pss(),) * 3, "MiB", 1 / 2**20, limit=256)
    name = "memory per host core (PSS) vs an idle process (MiB)"
    if wants(name):
        v = [core_memory(both / "libtiles.so", "host", 256 * 1024) for _ in range(3)]
        row(name, (statistics.median(v), min(v), max(v)), (idle_pss(),) * 3, "MiB", 1 / 2**20, limit=32)


def check_rows(work):
    """The default checks on shapes other than the 64 MiB contiguous split: a small op, an
    interleaved split (every page shared by cores), and Xtensa cores."""
    (work / "inter.cpp").write_text(INTERLEAVED)
    (work / "inter_shape.cpp").write_text(INTERLEAVED_SHAPE)
    d = work / "inter"
    custom_op.load("inter", [work / "inter.cpp"], [work / "inter_shape.cpp"], build_directory=d, multicore=True,
                   isa="xtensa")
    cases = [("checks on a 4 KiB op, 8 host cores, --check vs unchecked (ms)", "libinter.so", 1024),
             ("checks on a 4 MiB interleaved split, 8 host cores, --check vs unchecked (ms)", "libinter.so", 1 << 20),
             ("checks on a 1 MiB op, 8 Xtensa cores, --check vs unchecked (ms)", "libinter.pool", 1 << 18)]
    for name, lib_name, elems in cases:
        if not wants(name):
            continue
        lib = custom_op.load_library(d / lib_name)
        op = lib.ops["twice"]
        x = np.random.default_rng(3).standard_normal(elems).astype(np.float32)
        np.testing.assert_array_equal(op(x, check=True), x * 2)
        row(name, timed(lambda: op(x, check=True), 5), timed(lambda: op(x), 5), "ms", 1e3, goal=0.2)
        del lib, op


def view_rows(work, nrt_pool):
    """What the views cost (D113, D124): a profiled launch on 8 cores through the CLI,
    writing its trace and SVG flame graph, against the same launch printing its profile:
    on Xtensa cores, and on host cores, whose trace holds each copy and the sampled
    functions."""
    names = {"pool": "trace + flame graph vs a profiled launch, 8 Xtensa cores (ms)",
             "so": "trace + flame graph vs a profiled launch, 8 host cores (ms)"}
    if not any(wants(n) for n in names.values()):
        return
    (work / "inter.cpp").write_text(INTERLEAVED)
    (work / "inter_shape.cpp").write_text(INTERLEAVED_SHAPE)
    d = work / "views"
    custom_op.load("inter", [work / "inter.cpp"], [work / "inter_shape.cpp"], build_directory=d, multicore=True,
                   isa="xtensa")
    np.save(work / "views-x.npy", np.random.default_rng(5).standard_normal(1 << 16).astype(np.float32))
    for ext, name in names.items():
        if not wants(name):
            continue
        base = [nrt_pool, "run", d / f"libinter.{ext}", "inter::twice", "--arg", work / "views-x.npy",
                "--out", work / "views-y.npy", "--cores", "8"]
        svg, trace = work / "views.svg", work / "views.json"
        plain = lambda: subprocess.run(base + ["--profile"], check=True, capture_output=True)
        viewed = lambda: subprocess.run(base + [f"--profile={svg}", "--trace", trace], check=True,
                                        capture_output=True)
        viewed()
        assert svg.stat().st_size > 0 and trace.stat().st_size > 0
        # Goal: the views add at most 10% to the profiled launch (a ratio of at least 1/1.1).
        row(name, timed(viewed, 7), timed(plain, 7), "ms", 1e3, goal=round(1 / 1.1, 3))


def main():
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpsimd_open_bench_"))
    nrt_pool = ROOT / "target" / "release" / "nrt-pool"
    mc = ROOT / "examples" / "multicore"
    x = np.random.default_rng(0).standard_normal(16 * 1024 * 1024).astype(np.float32).reshape(4096, 4096)
    name = "python call: empty op, 1 core (us)"
    if wants(name):
        (work / "empty.cpp").write_text(EMPTY)
        (work / "shape.cpp").write_text(EMPTY_SHAPE)
        custom_op.load("bench", [work / "empty.cpp"], [work / "shape.cpp"], build_directory=work)
        one = np.zeros(1, np.float32)
        empty = custom_op.ops.bench.empty
        empty(one)
        row(name, timed(lambda: empty(one), 15, 200), timed(_native.noop, 15, 200000), "us", 1e6, limit=50)
    name = "python 64 MiB relu, 8 cores (ms)"
    if wants(name):
        tiles = custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=work,
                               multicore=True)
        relu = custom_op.ops.tiles.relu
        np.testing.assert_array_equal(relu(x), np.maximum(x, 0))
        row(name, timed(lambda: relu(x), 7), timed(lambda: np.maximum(x, 0), 7), "ms", 1e3, goal=0.1)
        del tiles, relu

    # torch.ops: the same op called through torch's dispatcher on a CPU tensor
    # (its storage passed as a NumPy view, the output shared, no copy either way) vs from
    # NumPy; at most 1.1x the NumPy call's time.
    name = "torch.ops call 32x4096 f32 vs NumPy call (ms)"
    if wants(name):
        try:
            import torch
        except ImportError:
            print(f"{name}: skipped (torch is not installed)")
        else:
            tiles = custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=work,
                                   multicore=True)
            small = np.random.default_rng(2).standard_normal((32, 4096)).astype(np.float32)
            t = torch.from_numpy(small.copy())
            relu = custom_op.ops.tiles.relu
            via_torch = torch.ops.tiles.relu
            assert torch.equal(via_torch(t), torch.from_numpy(relu(small)))
            row(name, timed(lambda: via_torch(t), 15, 20), timed(lambda: relu(small), 15, 20), "ms", 1e3,
                goal=0.91)  # ours at most 1.1x the NumPy call
            del tiles, relu, via_torch

    # The parity check: a call checked against the Pool image beside the host
    # build (both built as custom_op.load(..., isa="xtensa") does), on 8 cores, 1 MiB,
    # against the same call unchecked. Warm: the twin's QEMU cores start on the first call.
    name = "python check=parity 1 MiB relu, 8 cores (ms)"
    if wants(name):
        both = work / "both"
        custom_op.load("tiles", [mc / "relu_tiles.cpp"], [mc / "shape.cpp"], build_directory=both,
                       multicore=True, isa="xtensa")
        host_tiles = custom_op.load_library(both / "libtiles.so", isa="host")
        m = np.random.default_rng(1).standard_normal(256 * 1024).astype(np.float32)
        checked = host_tiles.ops["relu"]
        np.testing.assert_array_equal(checked(m, check="parity"), np.maximum(m, 0))
        row(name, timed(lambda: checked(m, check="parity"), 5), timed(lambda: checked(m), 5), "ms", 1e3, goal=0.1)
        del host_tiles, checked

    # nrt-pool run, .npy to .npy, vs NumPy doing the same load, compute and save.
    time_row = "nrt-pool run 64 MiB x*a+b .npy->.npy (ms)"
    peak_row = "nrt-pool run 64 MiB x*a+b: peak memory (PSS, with its cores) vs NumPy's (MiB)"
    if wants(time_row) or wants(peak_row):
        ex = ROOT / "examples" / "ops"
        lib = work / "libops.so"
        subprocess.run([nrt_pool, "build", "--schema", ex / "ops.schema", "--out", lib,
                        ex / "scale_add.cpp", ex / "scale_add_mc.cpp", ex / "hello.cpp"],
                       check=True, capture_output=True)
        xin, yout, npout = work / "x.npy", work / "y.npy", work / "np.npy"
        np.save(xin, x.reshape(-1))
        cli = [nrt_pool, "run", lib, "scale_add_mc", "--arg", xin, "--arg", "2", "--arg", "1",
               "--out", yout, "--cores", "8"]
        (work / "numpy_way.py").write_text(
            "import numpy as np, sys\n"
            "a = np.load(sys.argv[1])\nnp.save(sys.argv[2], a * np.float32(2) + np.float32(1))\n")

        def numpy_way():
            a = np.load(xin)
            np.save(npout, a * np.float32(2) + np.float32(1))

        if wants(time_row):
            # 11 back-to-back runs each: single runs on this VM move by 2-5x (D66).
            t_cli = timed(lambda: subprocess.run(cli, check=True, capture_output=True), 11)
            t_np = timed(numpy_way, 11)
            np.testing.assert_array_equal(np.load(yout), np.load(npout))
            # Goal: at most 2x NumPy's time, i.e. a ratio (NumPy / ours) of at least 0.5.
            row(time_row, t_cli, t_np, "ms", 1e3, goal=0.5)
        # Peak memory: the nrt-pool process (device memory is mapped there; its core
        # processes share it) against a Python process doing it with NumPy.
        if wants(peak_row):
            ours = [peak_pss(cli) for _ in range(3)]
            theirs = [peak_pss([sys.executable, work / "numpy_way.py", xin, npout]) for _ in range(3)]
            sample = lambda v: (statistics.median(v), min(v), max(v))
            row(peak_row, sample(ours), sample(theirs), "MiB", 1 / 2**20, goal=0.5)

    first_result_rows(work, nrt_pool)
    xtensa_rows(work)
    check_rows(work)
    view_rows(work, nrt_pool)

    out = ROOT / "target" / "bench"
    out.mkdir(parents=True, exist_ok=True)
    if ROWS or not FILTER:
        (out / "python.json").write_text(json.dumps(ROWS, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
