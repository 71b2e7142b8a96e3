"""Checking mode: the gallery's faulty kernels (examples/check-gallery) are each
found, on host cores and on Xtensa cores, through Python (check=, CheckError, warnings,
GPSIMD_OPEN_CHECK) and `nrt-pool run --check` (exit 4, stderr lines, JSON records); the
clean kernel and the examples check clean."""
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import NRT_POOL, ROOT, run

GALLERY = ROOT / "examples" / "check-gallery"
N = 1003  # not a multiple of 8: the remainder is 3 elements


@pytest.fixture(scope="module")
def gallery_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("gallery")
    run(NRT_POOL, "build", "--name", "gallery", "--compute", GALLERY / "faulty.cpp",
        "--shape", GALLERY / "shape.cpp", "--multicore", "--build-directory", d, "--device-image")
    return d


@pytest.fixture(scope="module", params=["host", "xtensa"])
def gallery(gallery_build, request):
    from gpsimd_open import custom_op

    lib = custom_op.load_library(gallery_build / "libgallery.so", isa=request.param)
    lib.isa = request.param
    return lib


def load_op(tmp_path, name, kernel, shape, **kw):
    """Library `name` built in tmp_path from a kernel's and a shape function's source
    texts, as custom_op.load builds one."""
    from gpsimd_open import custom_op

    (tmp_path / "k.cpp").write_text(kernel)
    (tmp_path / "s.cpp").write_text(shape)
    return custom_op.load(name, [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                          build_directory=tmp_path, **kw)


def x():
    return np.linspace(-4.0, 4.0, N, dtype=np.float32)


def findings(op, check=True, **kw):
    from gpsimd_open import CheckError

    with pytest.raises(CheckError) as e:
        op(x(), check=check, **kw)
    return e.value


def test_never_written_elements_are_found_with_their_range(gallery):
    err = findings(gallery.ops["remainder"])
    init = [f for f in err.findings if f["check"] == "init"]
    assert len(init) == 1, err
    f = init[0]
    # 1003 // 8 = 125 per core: elements 1000, 1001, 1002 are nobody's.
    assert (f["ranges"], f["elements"], f["cores"]) == ([(1000, 1003)], 3, []), f
    assert "never written by any core" in f["message"] and "[1000, 1003)" in f["message"]
    assert f["kernel"] == "remainder"
    # The output is still given: the written part exact, the rest the poison (NaN).
    want = np.maximum(x(), 0)
    assert np.array_equal(err.result[:1000], want[:1000])
    assert np.isnan(err.result[1000:]).all()


def test_elements_two_cores_write_are_races_naming_both_cores(gallery):
    err = findings(gallery.ops["overlap"])
    races = [f for f in err.findings if f["check"] == "race" and "written by more than one core" in f["message"]]
    # 126 per core: each core's last+1 element is its neighbour's first.
    got = sorted((tuple(f["cores"]), tuple(map(tuple, f["ranges"]))) for f in races)
    assert got == [((c, c + 1), ((126 * (c + 1), 126 * (c + 1) + 1),)) for c in range(7)], err
    reads = [f for f in err.findings if f["check"] == "race" and "read by core" in f["message"]]
    if gallery.isa == "xtensa":
        # The map reads its output tile before writing it: each shared element is also read
        # by one core and written by the other, both ways (reads are seen on Xtensa cores).
        got = sorted((tuple(f["cores"]), tuple(map(tuple, f["ranges"]))) for f in reads)
        want = [((a, b), ((126 * (c + 1), 126 * (c + 1) + 1),)) for c in range(7) for a, b in [(c, c + 1), (c + 1, c)]]
        assert got == sorted(want), err
        assert all("tensor_to_tcm" in f["message"] for f in reads), reads[0]
    else:
        assert reads == [], err
    assert all(f["check"] != "init" for f in err.findings), err
    assert np.array_equal(err.result, np.maximum(x(), 0))


def test_reading_the_output_before_writing_it_is_an_uninitialised_read(gallery):
    err = findings(gallery.ops["accumulate"])
    init = [f for f in err.findings if f["check"] == "init"]
    # Every core's every element depends on the poison.
    assert sorted(c for f in init for c in f["cores"]) == list(range(8)), err
    assert sum(f["elements"] for f in init) == N
    assert all("depend on memory the kernel never wrote" in f["message"] for f in init)


def test_a_result_that_changes_with_the_core_count_is_found_by_the_cores_check(gallery):
    op = gallery.ops["per_core"]
    # Not by the default checks: each core alone computes what it computes in the launch.
    np.testing.assert_array_equal(op(x(), check=True), x() / np.float32(8))
    err = findings(op, check="cores")
    [f] = err.findings
    assert (f["check"], f["elements"]) == ("cores", N), f
    assert "differ between 8 core(s) and 7" in f["message"]
    err = findings(op, check="cores", cores=3)
    assert "differ between 3 core(s) and 2" in err.findings[0]["message"]
    # One core: nothing to compare, and said so.
    np.testing.assert_array_equal(op(x(), check="cores", cores=1), x())


def test_the_clean_kernel_checks_clean_with_every_check(gallery):
    y = gallery.ops["clean"](x(), check="all")
    np.testing.assert_array_equal(y, np.maximum(x(), 0))
    for cores in (1, 3, 8):
        gallery.ops["clean"](x(), check="all", cores=cores)


def test_warn_mode_warns_and_returns_the_output(gallery):
    from gpsimd_open import CheckWarning

    with pytest.warns(CheckWarning, match=r"never written by any core: elements \[1000, 1003\)"):
        y = gallery.ops["remainder"](x(), check="warn")
    assert y.shape == (N,) and np.isnan(y[1000:]).all()


def test_unchecked_calls_stay_unchecked_and_bad_check_values_are_refused(gallery):
    y = gallery.ops["remainder"](x())
    assert np.all(y[1000:] == 0), "unchecked: the output starts zeroed, as before"
    with pytest.raises(ValueError, match="unknown check 'raec'"):
        gallery.ops["clean"](x(), check="raec")
    with pytest.raises(TypeError, match="check=3"):
        gallery.ops["clean"](x(), check=3)


def test_a_library_loaded_with_check_checks_every_call_torch_ops_included(gallery_build):
    from gpsimd_open import CheckError, custom_op

    lib = custom_op.load_library(gallery_build / "libgallery.so", check=True)
    with pytest.raises(CheckError):
        lib.ops["remainder"](x())
    assert lib.ops["remainder"](x(), check=False)[1000] == 0, "a call's own check= wins"
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(CheckError):
        torch.ops.gallery.remainder(torch.from_numpy(x()))


def test_the_environment_variable_turns_checks_on_without_editing_code(gallery_build):
    script = (
        "import numpy as np, sys\n"
        "from gpsimd_open import custom_op, CheckError\n"
        f"lib = custom_op.load_library({str(gallery_build / 'libgallery.so')!r})\n"
        f"x = np.linspace(-4, 4, {N}, dtype=np.float32)\n"
        "try:\n    lib.ops['remainder'](x)\nexcept CheckError as e:\n"
        "    print(e.findings[0]['check'], e.findings[0]['ranges']); sys.exit(0)\n"
        "sys.exit(1)\n"
    )
    env = dict(__import__("os").environ, GPSIMD_OPEN_CHECK="1")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env)
    assert p.returncode == 0, p.stderr.decode()
    assert p.stdout.decode().strip() == "init [(1000, 1003)]"


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_nrt_pool_run_check_exits_4_writes_the_output_and_lists_findings(gallery_build, tmp_path, isa):
    np.save(tmp_path / "x.npy", x())
    lib = gallery_build / ("libgallery.so" if isa == "host" else "libgallery.pool")
    out = tmp_path / "y.npy"
    p = run(NRT_POOL, "run", lib, "gallery::remainder", "--arg", tmp_path / "x.npy", "--out", out,
            "--check", check=False)
    err = p.stderr.decode()
    assert p.returncode == 4, err
    assert "nrt-pool: check init: kernel 'remainder', the output: never written by any core" in err
    assert "elements [1000, 1003) (3 elements)" in err
    assert "note: memory: a store past a heap block's end is seen in the 32 bytes after it" in err, \
        "what the checks cannot see is said, not hidden"
    y = np.load(out)
    np.testing.assert_array_equal(y[:1000], np.maximum(x(), 0)[:1000])
    # JSON records, and the race of another op.
    p = run(NRT_POOL, "run", lib, "gallery::overlap", "--arg", tmp_path / "x.npy", "--out", out,
            "--check=race", "--json", check=False)
    assert p.returncode == 4, p.stderr.decode()
    doc = json.loads(p.stdout)
    assert doc["check"]["checks"] == ["race"]
    recs = doc["check"]["findings"]
    # Seven write-write races; on Xtensa cores, which see reads, fourteen read-write ones too.
    assert len(recs) == (7 if isa == "host" else 21) and {r["check"] for r in recs} == {"race"}
    assert recs[0]["cores"] == [0, 1] and recs[0]["ranges"] == [[126, 127]]
    # Clean: exit 0.
    run(NRT_POOL, "run", lib, "gallery::clean", "--arg", tmp_path / "x.npy", "--out", out, "--check=all")
    p = run(NRT_POOL, "run", lib, "gallery::clean", "--arg", tmp_path / "x.npy", "--out", out,
            "--check=bogus", check=False)
    assert p.returncode == 2 and "unknown check 'bogus'" in p.stderr.decode()


WINDOW_WRITES = """
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>
// Each core writes its slice of y, and one element past it (its neighbour's first: a race),
// through pointers neuron_translate gives; after every Mi elements, and at the end, it takes
// all three dynamic windows to x's three 16 MiB regions: the windows it wrote through are
// replaced before the kernel returns.
torch::Tensor win(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    NeuronArgTensor dx = torch::neuron::detail::to_desc(x), dy = torch::neuron::detail::to_desc(y);
    unsigned long long xs = customop_tensor_soc_addr(&dx), ys = customop_tensor_soc_addr(&dy);
    void *ctx = neuron_translate_ctx();
    size_t n = size_t(y.numel()), cores = get_cpu_count(), per = (n + cores - 1) / cores;
    size_t begin = per * get_cpu_id() < n ? per * get_cpu_id() : n;
    size_t end = begin + per + 1 < n ? begin + per + 1 : n;
    for (size_t i = begin; i < end; i++) {
        *static_cast<float *>(neuron_translate(ctx, ys + 4 * i)) = float(i & 1023);
        if ((i & 0xFFFFF) == 0xFFFFF || i + 1 == end)
            for (unsigned long long k = 0; k < 3; k++) neuron_translate(ctx, xs + (k << 24));
    }
    return y;
}

// Each core writes its slice of y, and every core reads y[0] (and drops it): cores that run
// in a group meet there, and the group runs again core by core.
torch::Tensor peek(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    NeuronArgTensor dy = torch::neuron::detail::to_desc(y);
    unsigned long long ys = customop_tensor_soc_addr(&dy);
    void *ctx = neuron_translate_ctx();
    size_t n = size_t(y.numel()), cores = get_cpu_count(), per = (n + cores - 1) / cores;
    size_t begin = per * get_cpu_id() < n ? per * get_cpu_id() : n;
    size_t end = begin + per < n ? begin + per : n;
    for (size_t i = begin; i < end; i++)
        *static_cast<float *>(neuron_translate(ctx, ys + 4 * i)) = float(i & 1023);
    volatile float seen = *static_cast<const float *>(neuron_translate(ctx, ys));
    (void)seen;
    return y;
}
"""
WINDOW_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty({x.numel()}, torch::kFloat); }
NEURON_LIBRARY(win_ops, m) { m.def("win", &s, "win"); m.def("peek", &s, "peek"); }
"""


def test_writes_through_replaced_windows_are_seen_by_the_checks(tmp_path):
    """Host cores' checked runs compare only the output pages a core touched (D89), through
    its view of device memory or a dynamic window, one replaced mid-kernel included: the
    elements two cores write that way are races, on 8 cores and 3, and nothing else is
    found."""
    from gpsimd_open import CheckError

    lib = load_op(tmp_path, "win_ops", WINDOW_WRITES, WINDOW_SHAPE, multicore=True)
    x = np.zeros(12 << 20, np.float32)  # 48 MiB: three 16 MiB regions
    want = (np.arange(x.size) & 1023).astype(np.float32)
    for cores in (8, 3):
        with pytest.raises(CheckError) as e:
            lib.ops["win"](x, cores=cores, check="all")
        per = -(-x.size // cores)
        got = sorted((tuple(f["cores"]), tuple(map(tuple, f["ranges"])))
                     for f in e.value.findings)
        assert got == [((c, c + 1), ((per * (c + 1), per * (c + 1) + 1),))
                       for c in range(cores - 1)], (cores, e.value)
        np.testing.assert_array_equal(e.value.result, want)
    # Cores that run in a group (D90) and touch a common page run again alone: core 0's
    # elements there are not taken for writes of the cores that only read one of them.
    np.testing.assert_array_equal(lib.ops["peek"](x, check=True), want)


@pytest.mark.full
def test_the_examples_check_clean(tmp_path):
    """The repository's examples pass every check: the multicore TCM-tile ReLU on 8 and 3
    cores, the MLP ops (stream accessors, one core)."""
    from gpsimd_open import custom_op

    ex = ROOT / "examples" / "multicore"
    lib = custom_op.load("tiles_checked", [ex / "relu_tiles.cpp"], [ex / "shape.cpp"],
                         build_directory=tmp_path / "tiles", multicore=True, check="all")
    v = np.linspace(-3, 3, 5000, dtype=np.float32)
    for cores in (8, 3):
        np.testing.assert_array_equal(lib.ops["relu"](v, cores=cores), np.maximum(v, 0))
    ex = ROOT / "examples" / "mlp"
    mlp = custom_op.load("mlp_checked", [ex / "relu.cpp"], [ex / "shape.cpp"],
                         build_directory=tmp_path / "mlp", check="all")
    v, g = v.reshape(50, 100), np.cos(v).reshape(50, 100)
    np.testing.assert_array_equal(mlp.ops["relu_forward"](v), np.maximum(v, 0))
    np.testing.assert_array_equal(mlp.ops["relu_backward"](g, v), np.where(v > 0, g, 0))
    np.testing.assert_array_equal(mlp.ops["axpb"](v, 2.0, 0.5), v * np.float32(2) + np.float32(0.5))


INPLACE = """
#include <torch/torch.h>
torch::Tensor twice_in_place(const torch::Tensor &x) {
    torch::Tensor t = x;  // the same storage: the kernel writes its input
    auto a = t.accessor<float, 1>();
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto o = y.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) { a[i] = a[i] * 2.0f; o[i] = a[i] + 1.0f; }
    return y;
}
"""
INPLACE_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(inplace_ops, m) { m.def("twice", &s, "twice_in_place"); }
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_kernel_that_writes_its_input_is_checked_from_the_same_input(tmp_path, isa):
    """Every checked run starts from the caller's input, the caller sees the input as the
    launch left it (written once, not once per run), and the write is a `memory` finding
    naming the argument and the elements it changed."""
    from gpsimd_open import CheckError

    lib = load_op(tmp_path, "inplace_ops", INPLACE, INPLACE_SHAPE, isa=isa)
    v = np.arange(10, dtype=np.float32)
    d = lib.to_device(v)
    with pytest.raises(CheckError) as e:
        lib.ops["twice"](d, check=True)
    [f] = e.value.findings
    assert (f["check"], f["tensor"]) == ("memory", "argument 0"), f
    assert f["ranges"] == [(1, 10)] and f["elements"] == 9, f  # 0 * 2 is 0: unchanged
    np.testing.assert_array_equal(e.value.result, 2 * v + 1)
    np.testing.assert_array_equal(d.numpy(), 2 * v)
    with pytest.raises(CheckError) as e:
        lib.ops["twice"](v, check=True)  # a host array: the caller's stays as it was
    np.testing.assert_array_equal(e.value.result, 2 * v + 1)
    np.testing.assert_array_equal(v, np.arange(10, dtype=np.float32))


def test_a_tcm_block_read_before_it_is_written_is_found(gallery):
    """tcm_malloc blocks start poisoned in a checked launch (0xFF, then 0xA5 alone): each
    core's tiles end in an element the kernel never copied in."""
    err = findings(gallery.ops["stale_tile"])
    init = [f for f in err.findings if f["check"] == "init"]
    # 126 elements per core, tiles of 256: one tile per core, its last element.
    got = sorted((f["cores"][0], tuple(map(tuple, f["ranges"]))) for f in init)
    want = [(c, ((126 * c + 125, 126 * c + 126),)) for c in range(7)] + [(7, ((1002, 1003),))]
    assert got == want, err


EMPTY = """
#include <torch/torch.h>
torch::Tensor half_empty(const torch::Tensor &x) {
    torch::Tensor t = torch::empty(x.sizes(), torch::kFloat);
    auto a = t.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i += 2) a[i] = x.accessor<float, 1>()[i];
    return t;  // the odd elements are whatever the HBM heap held
}
"""
EMPTY_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(empty_ops, m) { m.def("half", &s, "half_empty"); }
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_torch_empty_starts_poisoned_and_its_unwritten_elements_are_found(tmp_path, isa):
    lib = load_op(tmp_path, "empty_ops", EMPTY, EMPTY_SHAPE, isa=isa)
    v = np.arange(1, 9, dtype=np.float32)
    from gpsimd_open import CheckError

    with pytest.raises(CheckError) as e:
        lib.ops["half"](v, check=True)
    # The copy of the tensor into the output carries the poison: in the launch 0xFF, alone
    # 0xA5, so no run shows those elements written with a value of the kernel's own.
    [f] = e.value.findings
    assert f["check"] == "init" and "never written" in f["message"], f
    assert f["ranges"] == [(1, 2), (3, 4), (5, 6), (7, 8)] and f["elements"] == 4, f
    got = e.value.result
    np.testing.assert_array_equal(got[0::2], v[0::2])
    assert np.isnan(got[1::2]).all(), "the launch's torch::empty held the poison, 0xFF bytes"


@pytest.fixture(scope="module")
def gallery_mem_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("gallery_mem")
    run(NRT_POOL, "build", "--name", "gallery_mem", "--compute", GALLERY / "faulty_memory.cpp",
        "--shape", GALLERY / "shape_memory.cpp", "--multicore", "--build-directory", d,
        "--device-image")
    return d


@pytest.fixture(scope="module", params=["host", "xtensa"])
def gallery_mem(gallery_mem_build, request):
    from gpsimd_open import custom_op

    return custom_op.load_library(gallery_mem_build / "libgallery_mem.so", isa=request.param)


def only(err, check):
    return [f for f in err.findings if f["check"] == check]


def test_tcm_blocks_held_at_the_kernels_end_are_leaks(gallery_mem):
    err = findings(gallery_mem.ops["leaky"], check="memory")
    [f] = only(err, "memory")
    assert f["cores"] == list(range(8)) and f["tensor"] == "tcm_malloc blocks", f
    assert "1 block(s), 1024 bytes, still held when the kernel returned" in f["message"], f
    np.testing.assert_array_equal(err.result, np.maximum(x(), 0))


def test_hbm_blocks_held_at_the_kernels_end_are_leaks(gallery_mem):
    err = findings(gallery_mem.ops["hbm_leaky"], check="memory")
    [f] = only(err, "memory")
    assert f["cores"] == list(range(8)) and f["tensor"] == "HBM blocks", f
    assert "1 block(s), 4096 bytes, still held when the kernel returned" in f["message"], f
    np.testing.assert_array_equal(err.result, np.maximum(x(), 0))


def test_a_kernel_that_writes_its_input_is_found_and_the_twin_is_clean(gallery):
    """Squares staged in the kernel's own input: a `memory` finding naming argument 0 and
    the elements it changed (each core's slice), on both backends; the caller's NumPy array
    is as it was; the twin that stages them in TCM only checks clean."""
    v = x()
    before = v.copy()
    err = findings(gallery.ops["input_staged"], check="memory")
    [f] = only(err, "memory")
    assert f["tensor"] == "argument 0", f
    assert "written by the kernel: on the device the caller's tensor changes" in f["message"], f
    # x * x differs from x except where x is 0 or 1.
    changed = np.flatnonzero((v * v) != v)
    assert f["elements"] == len(changed), (f, len(changed))
    assert f["ranges"][0][0] == changed[0], f
    np.testing.assert_array_equal(v, before)
    np.testing.assert_array_equal(err.result, v * v)
    np.testing.assert_array_equal(gallery.ops["input_kept"](v, check="all"), v * v)
    # Unchecked, nothing is said and the numbers are the same.
    np.testing.assert_array_equal(gallery.ops["input_staged"](v), v * v)


def test_output_that_depends_on_an_earlier_launch_is_found_and_the_twin_is_clean(gallery):
    """A sum kept in a static across launches: run again right after itself, every element
    changes (`leftovers`, only when named or with all); the twin summing into a local
    checks clean under every check but `cores` (a slice's mean depends on the core count by
    design), on both backends."""
    v = x()
    err = findings(gallery.ops["leftover_sum"], check="leftovers")
    [f] = err.findings
    assert (f["check"], f["tensor"]) == ("leftovers", "the output"), f
    assert "change when the launch runs again right after itself" in f["message"], f
    assert f["elements"] == N, f
    # Not among the default checks, whose runs of each core alone see the output move too.
    err = findings(gallery.ops["leftover_sum"], check=True)
    assert {f["check"] for f in err.findings} == {"init"}, err.findings
    assert "or on what its earlier run left (--check=leftovers tells)" in err.findings[0]["message"]
    # The twin: y = x - the slice's mean, clean.
    y = gallery.ops["leftover_clean"](v, check="init,race,memory,rules,parity,leftovers")
    per = -(-N // 8)
    want = np.concatenate([s - s.sum(dtype=np.float32) / np.float32(len(s))
                           for s in (v[i:i + per] for i in range(0, N, per))])
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_malloc_blocks_held_at_the_kernels_end_are_leaks_and_the_twin_is_clean(gallery_mem):
    err = findings(gallery_mem.ops["malloc_leaky"], check="memory")
    held = [f for f in only(err, "memory") if "still held when the kernel returned" in f["message"]]
    [f] = held
    assert f["cores"] == list(range(8)) and f["tensor"] == "malloc/new blocks", f
    assert "1 block(s), 1024 bytes, still held when the kernel returned" in f["message"], f
    # Both backends name the line that made the block (D104: the site is kept in the
    # block's red zone).
    sites = [f for f in only(err, "memory") if "made at" in f["message"]]
    src = (GALLERY / "faulty_memory.cpp").read_text().splitlines()
    start = next(i for i, l in enumerate(src) if l.startswith("torch::Tensor malloc_leaky("))
    line = next(i + 1 for i in range(start, len(src)) if "malloc(TILE" in src[i])
    [site] = sites
    assert site["cores"] == list(range(8)), site
    assert re.search(rf"1 of the blocks still held were made at \S*faulty_memory\.cpp:{line} in malloc_leaky\(",
                     site["message"]), site
    np.testing.assert_array_equal(err.result, np.maximum(x(), 0))
    np.testing.assert_array_equal(gallery_mem.ops["malloc_clean"](x(), check="all"), np.maximum(x(), 0))


LEAKS = r"""
#include <torch/torch.h>
#include <stdlib.h>
static char *kept;
static long *counters(long n) {
    long *p = new long[n];
    for (long i = 0; i < n; i++) p[i] = i;
    return p;
}
torch::Tensor leaks(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    long *c = counters(x.numel());
    char *bytes = (char *)calloc(16, 1);
    kept = (char *)malloc(100);
    char *grown = (char *)realloc(bytes, 64);
    int *one = new int(7);
    for (long i = 0; i < x.numel(); i++) out[i] = in[i] + (float)c[i] + (float)(*one - 7) + grown[0];
    return y;
}
"""
LEAKS_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(leak_ops, m) { m.def("leaks", &s, "leaks"); }
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_every_allocation_entry_point_names_the_line_that_made_a_leaked_block(isa, tmp_path):
    """new[] in a helper, calloc grown by realloc, malloc kept in a static, new: each leaked
    block's line, on both backends (D104), and the same output bytes on both."""
    from gpsimd_open import CheckError

    lib = load_op(tmp_path, "leak_ops", LEAKS, LEAKS_SHAPE, isa=isa)
    v = np.arange(8, dtype=np.float32)
    with pytest.raises(CheckError) as e:
        lib.ops["leaks"](v, check="memory")
    np.testing.assert_array_equal(e.value.result, v + np.arange(8, dtype=np.float32))
    sites = sorted(re.search(r"made at (\S+?):(\d+) in (\w+)", f["message"]).group(2, 3)
                   for f in e.value.findings if "made at" in f["message"])
    src = LEAKS.splitlines()
    line = {what: next(i + 1 for i, l in enumerate(src) if what in l) for what in
            ("new long[n]", "malloc(100)", "realloc(bytes", "new int(7)")}
    assert sites == sorted([(str(line["new long[n]"]), "counters"), (str(line["malloc(100)"]), "leaks"),
                            (str(line["realloc(bytes"]), "leaks"), (str(line["new int(7)"]), "leaks")]), \
        e.value.findings


@pytest.mark.parametrize("op,block,size", [("tile_overrun", "a tcm_malloc block", 1024),
                                           ("new_overrun", "a malloc/new block", 64)])
def test_a_store_past_a_heap_blocks_end_is_found(gallery_mem, op, block, size):
    err = findings(gallery_mem.ops[op], check="memory")
    [f] = only(err, "memory")
    assert f["cores"] == list(range(8)) and f["tensor"] == block, f
    said = f"a store past the end of the block's {size} bytes (byte +0 after its end changed)"
    assert said in f["message"], f
    np.testing.assert_array_equal(err.result, np.maximum(x(), 0))
    # Unchecked, the launch runs as on the device: nothing seen, the same numbers.
    np.testing.assert_array_equal(gallery_mem.ops[op](x()), np.maximum(x(), 0))


TEMPS = r"""
#include <torch/torch.h>
// A temporary tensor per tile: 4096 tiles of 4 KiB, 16 MiB in all, more than a core's
// 6 MiB HBM heap holds at once; each goes back to the heap when its tile ends.
torch::Tensor tile_temps(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    float sum = 0;
    for (int t = 0; t < 4096; t++) {
        torch::Tensor tmp = torch::empty({1024}, torch::kFloat);
        torch::Tensor alias = tmp;  // a copy shares the storage
        auto a = alias.accessor<float, 1>();
        a[t % 1024] = float(t);
        sum += tmp.accessor<float, 1>()[t % 1024];
    }
    for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] + sum;
    return y;
}

// A tensor kept in a static variable past its launch: the next launch's heaps are fresh,
// so it owns nothing then (replacing it frees nothing of the new launch's).
static torch::Tensor kept;
torch::Tensor keep_last(const torch::Tensor &x) {
    torch::Tensor fresh = torch::empty(x.sizes(), torch::kFloat);
    kept = fresh;
    auto in = x.accessor<float, 1>();
    auto out = kept.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] + 1.0f;
    return fresh;
}
"""

TEMPS_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor temps_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(temps_ops, m) {
    m.def("tile_temps", &temps_shape, "tile_temps");
    m.def("keep_last", &temps_shape, "keep_last");
}
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_kernels_tensors_give_their_hbm_back_when_their_last_copy_goes(isa, tmp_path):
    lib = load_op(tmp_path, "temps_ops", TEMPS, TEMPS_SHAPE, isa=isa)
    v = np.arange(16, dtype=np.float32)
    want = v + np.float32(sum(range(4096)))
    # Checked: no HBM block is left held (every temporary went back).
    np.testing.assert_array_equal(lib.ops["tile_temps"](v, check="memory"), want)
    np.testing.assert_array_equal(lib.ops["tile_temps"](v), want)
    # A tensor kept past its launch: every launch right, the checked one names the block.
    for _ in range(3):
        np.testing.assert_array_equal(lib.ops["keep_last"](v), v + 1)
    from gpsimd_open import CheckError
    with pytest.raises(CheckError) as e:
        lib.ops["keep_last"](v, check="memory")
    # The tensor's HBM block, and its storage's control block from the core's heap (new).
    held = [f for f in e.value.findings if "made at" not in f["message"]]
    hbm, storage = sorted(held, key=lambda f: f["tensor"])
    # Both backends also say where the heap block was made (D104).
    assert len(e.value.findings) - len(held) == 1, e.value.findings
    assert hbm["tensor"] == "HBM blocks" and "1 block(s), 64 bytes, still held" in hbm["message"], hbm
    assert storage["tensor"] == "malloc/new blocks" and "1 block(s)" in storage["message"], storage
    np.testing.assert_array_equal(lib.ops["keep_last"](v), v + 1)


def test_a_tcm_block_freed_twice_is_found(gallery_mem):
    err = findings(gallery_mem.ops["double_free"], check="memory")
    [f] = only(err, "memory")
    assert f["cores"] == list(range(8)), f
    assert "tcm_free of a block already freed" in f["message"], f


def test_a_copy_into_a_freed_tcm_block_is_found(gallery_mem):
    err = findings(gallery_mem.ops["stale_free"], check="memory")
    # 126 elements on cores 0-6 (504 bytes), 121 on core 7 (484 bytes).
    got = sorted((f["what"], tuple(f["cores"])) for f in only(err, "memory"))
    said = "a copy of {} bytes {} TCM, in a block already freed (tcm_free)"
    assert got == sorted([
        (said.format(484, "into"), (7,)),
        (said.format(484, "out of"), (7,)),
        (said.format(504, "into"), tuple(range(7))),
        (said.format(504, "out of"), tuple(range(7))),
    ]), err


def test_standard_accessors_on_several_cores_and_a_missing_get_dst_tensor_break_rules(gallery_mem):
    err = findings(gallery_mem.ops["standard_mc"], check="rules")
    [f] = only(err, "rules")
    assert "a standard accessor while 8 cores run" in f["message"] and f["cores"] == list(range(8)), f
    assert f["tensor"].startswith("argument 0"), f
    err = findings(gallery_mem.ops["no_dst"], check="rules,race")
    [f] = only(err, "rules")
    assert "never called get_dst_tensor()" in f["message"], f
    assert only(err, "race"), "every core writes the whole output"


BIG_VECTOR = """
#include <vector>
#include <torch/torch.h>
torch::Tensor big(const torch::Tensor &x) {
    std::vector<float> small(100, 1.0f);  // fits the device heap
    std::vector<float> v(size_t(1) << 20, 2.0f);  // 4 MiB: the device heap holds 36352 bytes
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] * v[size_t(i)] + small[0];
    return y;
}
"""
BIG_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(big_ops, m) { m.def("big", &s, "big"); }
"""


def test_host_cores_hold_new_to_the_device_heap_in_a_checked_launch(tmp_path):
    """A 4 MiB std::vector faults the device build and, in the device's data model, host
    cores too (their new is the device heap's, D97); in the host's model it passes
    unchecked, and checked the host build's new takes the device heap and the check says
    where it runs out."""
    from gpsimd_open import CheckError, DeviceFault

    v = np.arange(8, dtype=np.float32)
    (tmp_path / "device").mkdir()
    device_model = load_op(tmp_path / "device", "big_ops", BIG_VECTOR, BIG_SHAPE)
    with pytest.raises(DeviceFault, match="operator new: out of memory for 4194304 bytes"):
        device_model.ops["big"](v)
    lib = load_op(tmp_path, "big_ops", BIG_VECTOR, BIG_SHAPE, data_model="host")
    np.testing.assert_array_equal(lib.ops["big"](v), v * 2 + 1)  # unchecked: glibc's heap
    with pytest.raises(CheckError) as e:
        lib.ops["big"](v, check="memory")
    [f] = e.value.findings
    assert "new of 4194304 bytes finds the device heap" in f["message"], f
    assert f["cores"] == [0] and f["tensor"] == "the core's heap", f
    np.testing.assert_array_equal(e.value.result, v * 2 + 1)
    np.testing.assert_array_equal(lib.ops["big"](v, check=False), v * 2 + 1)


STALE_WINDOW = """
#include <torch/torch.h>
// Reads through a pointer neuron_translate gave before its dynamic window was reprogrammed:
// the three dynamic windows are taken by +64, +80 and +96 MiB, and +112 MiB takes the
// first one back. On the device the old pointer then reads +112 MiB's bytes.
torch::Tensor stale(const torch::Tensor &x) {
    NeuronArgTensor d = torch::neuron::detail::to_desc(x);
    unsigned long long soc = customop_tensor_soc_addr(&d);
    void *ctx = neuron_translate_ctx();
    const float *old = static_cast<const float *>(neuron_translate(ctx, soc + (64ull << 20)));
    for (unsigned long long mib : {80ull, 96ull, 112ull}) neuron_translate(ctx, soc + (mib << 20));
    torch::Tensor y = torch::empty({1}, torch::kFloat);
    y.accessor<float, 1>()[0] = old[0];
    return y;
}
"""
STALE_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(stale_ops, m) { m.def("stale", &s, "stale"); }
"""


def test_a_stale_translated_pointer_reads_what_the_device_reads_in_a_checked_launch(tmp_path):
    """Host cores hand out pointers into one view of device memory, where an old pointer
    keeps reading its old bytes; a checked launch maps each dynamic window on its own, so
    it reads what the window shows now, as the Xtensa cores (and the device) do."""
    from gpsimd_open import custom_op

    lib = load_op(tmp_path, "stale_ops", STALE_WINDOW, STALE_SHAPE, isa="xtensa")
    # 128 MiB; element i holds i's 16 MiB segment number.
    x = (np.arange(32 << 20, dtype=np.int64) >> 22).astype(np.float32)
    host = custom_op.load_library(tmp_path / "libstale_ops.so")
    xtensa = custom_op.load_library(tmp_path / "libstale_ops.pool")
    assert host.ops["stale"](x)[0] == 4.0, "unchecked host cores: the old bytes (+64 MiB)"
    assert host.ops["stale"](x, check=True)[0] == 7.0, "checked: the window's bytes now"
    assert xtensa.ops["stale"](x)[0] == 7.0, "the device's answer"


PAST_END = """
#include <torch/torch.h>
torch::Tensor past_end(const torch::Tensor &x) {
    NeuronArgTensor d = torch::neuron::detail::to_desc(x);
    void *ctx = neuron_translate_ctx();
    const float *p = static_cast<const float *>(neuron_translate(ctx, customop_tensor_soc_addr(&d)));
    torch::Tensor y = torch::empty({1}, torch::kFloat);
    y.accessor<float, 1>()[0] = p[x.numel()];  // one past the end: the guard page
    return y;
}
"""
PAST_END_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(past_ops, m) { m.def("past_end", &s, "past_end"); }
"""


def test_guard_pages_hold_in_separately_mapped_windows(tmp_path):
    """A checked launch's windows keep the guard page after each tensor: a read past the
    end faults, named by the tensor, as unchecked."""
    from gpsimd_open import DeviceFault

    lib = load_op(tmp_path, "past_ops", PAST_END, PAST_END_SHAPE)
    x = np.ones(1000, np.float32)
    for check in (False, True):
        with pytest.raises(DeviceFault) as e:
            lib.ops["past_end"](x, check=check)
        assert "read past the end of argument 0" in str(e.value), (check, str(e.value))


@pytest.fixture(scope="module")
def reads_build(tmp_path_factory):
    d = tmp_path_factory.mktemp("gallery_reads")
    run(NRT_POOL, "build", "--name", "gallery_reads", "--compute", GALLERY / "faulty_reads.cpp",
        "--shape", GALLERY / "shape_reads.cpp", "--multicore", "--build-directory", d, "--device-image")
    return d


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_read_of_what_another_core_writes_is_found_on_xtensa_and_said_unseen_on_host(reads_build, isa):
    import warnings

    from gpsimd_open import CheckError, CheckWarning, _check, custom_op

    lib = custom_op.load_library(reads_build / "libgallery_reads.so", isa=isa)
    if isa == "xtensa":
        with pytest.raises(CheckError) as e:
            lib.ops["neighbour_read"](x(), check=True)
        reads = [f for f in e.value.findings if f["check"] == "race" and "read by core" in f["message"]]
        got = sorted((tuple(f["cores"]), tuple(map(tuple, f["ranges"]))) for f in reads)
        # Core c reads the first element of core c+1's slice (126 elements each).
        want = sorted(((c, (c + 1) % 8), ((126 * ((c + 1) % 8), 126 * ((c + 1) % 8) + 1),)) for c in range(8))
        assert got == want, e.value
        assert all(f["tensor"] == "the output" for f in reads), reads
    else:
        _check._SAID.clear()
        with pytest.warns(CheckWarning, match="do not see reads.*--isa xtensa"):
            y = lib.ops["neighbour_read"](x(), check=True)
        np.testing.assert_array_equal(y, 2 * x())
    # The twin reads the input instead: clean on both backends.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CheckWarning)
        np.testing.assert_array_equal(lib.ops["neighbour_clean"](x(), check="all"), 2 * x())
