"""A kernel's stack as on the device, and faults that stay in their core.

On Xtensa cores a kernel runs on the core's 8 KiB local stack when its STACK_SIZE (4196
unless -DSTACK_SIZE) fits there, else on an HBM block of STACK_SIZE bytes; a guard below
either turns an overflow into a reported fault. Host cores give kernels the same budget
with a guard, judged for x86's frames (D94). No store of a core reaches another core's image or scratch, the board's code
or vectors: each is a reported fault, and later launches on all cores stay exact (D79)."""
import re

import numpy as np
import pytest

from gpsimd_open import DeviceFault, custom_op

KERNELS = """
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// 16 KiB of locals: every output element is the sum of them.
torch::Tensor big(const torch::Tensor &x) {
    volatile float buf[4096];
    auto in = x.accessor<float, 1>();
    for (int i = 0; i < 4096; i++) buf[i] = in[i % x.numel()];
    float s = 0;
    for (int i = 0; i < 4096; i++) s += buf[i];
    torch::Tensor y = torch::empty({x.numel()}, torch::kFloat);
    auto out = y.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = s;
    return y;
}

// 1 MiB of locals.
torch::Tensor huge(const torch::Tensor &x) {
    volatile char buf[1 << 20];
    for (int i = 0; i < (1 << 20); i += 4096) buf[i] = (char)i;
    return torch::full({1}, (float)buf[4096 * 3], torch::kFloat);
}

// Recursion as deep as x has elements (frames the compiler cannot fold into a loop).
static int deep(int n, volatile int *up) {
    volatile int pad[32];
    pad[0] = n;
    pad[1] = up ? up[0] : 0;
    return n == 0 ? 0 : 1 + deep(n - 1, pad) + (pad[1] - pad[1]);
}
torch::Tensor recurse(const torch::Tensor &x) {
    return torch::full({1}, (float)deep((int)x.numel(), nullptr), torch::kFloat);
}

// Core 0 stores a word at the core-local address `where`; every core then writes its slice
// of |x| (so the other cores' work is checked).
torch::Tensor vandal(const torch::Tensor &x, int64_t where) {
    if (get_cpu_id() == 0 && where != 0) *(volatile uint32_t *)(uintptr_t)where = 0xdeadbeefu;
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), cores = get_cpu_count(), id = get_cpu_id();
    size_t per = (n + cores - 1) / cores, lo = per * id < n ? per * id : n;
    size_t hi = lo + per < n ? lo + per : n;
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    for (size_t i = lo; i < hi; i++) out[i] = in[i] < 0 ? -in[i] : in[i];
    return y;
}
"""
SHAPES = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor like(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
torch::Tensor like2(torch::Tensor x, int64_t w) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(stack_ops, m) {
    m.def("big", &like, "big");
    m.def("huge", &one, "huge");
    m.def("recurse", &one, "recurse");
    m.def("vandal", &like2, "vandal");
}
"""


def build(tmp_path, isa, flags=()):
    (tmp_path / "k.cpp").write_text(KERNELS)
    (tmp_path / "s.cpp").write_text(SHAPES)
    d = tmp_path / f"{isa}{len(flags)}"
    return custom_op.load("stack_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=d,
                          isa=isa, extra_cflags=list(flags))


@pytest.fixture(scope="module")
def xtensa(tmp_path_factory):
    return build(tmp_path_factory.mktemp("stack_x"), "xtensa")


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return build(tmp_path_factory.mktemp("stack_h"), "host")


X = np.arange(8, dtype=np.float32) - 3
BIG_SUM = np.float32(np.tile(X, 512).sum())


def test_a_16_kib_local_array_overflows_the_local_stack_naming_stack_size(xtensa):
    with pytest.raises(DeviceFault) as e:
        xtensa.ops["big"](X)
    msg = str(e.value)
    assert e.value.kind == "stack overflow", msg
    assert "on core 0: stack overflow: more than the core's 8 KiB of local stack (STACK_SIZE=4196" in msg, msg
    # The PC symbolized (the frame that crossed the limit: here a helper big() calls).
    assert re.search(r"at pc 0x8[0-9a-f]{7} \([^()]+(\(.*\))?[^()]*\+0x[0-9a-f]+\); build with -DSTACK_SIZE=N", msg), msg
    np.testing.assert_array_equal(xtensa.ops["vandal"](X, 0), np.abs(X)), "the next launch is exact"


def test_with_stack_size_32768_it_runs_exactly_on_an_hbm_stack(tmp_path):
    lib = build(tmp_path, "xtensa", ["-DSTACK_SIZE=32768"])
    assert lib.cflags == ["-DSTACK_SIZE=32768"]
    for _ in range(3):
        np.testing.assert_array_equal(lib.ops["big"](X), np.full(8, BIG_SUM, np.float32))
    np.testing.assert_array_equal(lib.ops["recurse"](np.zeros(50, np.float32)), [50])
    # Deeper than 32 KiB: the HBM stack's guard page.
    with pytest.raises(DeviceFault, match=r"stack overflow: more than STACK_SIZE=32768 bytes \(its HBM stack\)"):
        lib.ops["recurse"](np.zeros(100000, np.float32))
    np.testing.assert_array_equal(lib.ops["big"](X), np.full(8, BIG_SUM, np.float32))


@pytest.mark.parametrize("n", [100000])
def test_deep_recursion_and_a_1_mib_array_are_stack_overflows_on_xtensa(xtensa, n):
    np.testing.assert_array_equal(xtensa.ops["recurse"](np.zeros(10, np.float32)), [10])
    for op, arg in (("recurse", np.zeros(n, np.float32)), ("huge", X)):
        with pytest.raises(DeviceFault) as e:
            xtensa.ops[op](arg)
        assert e.value.kind == "stack overflow", str(e.value)
        assert "STACK_SIZE=4196" in str(e.value)
    np.testing.assert_array_equal(xtensa.ops["recurse"](np.zeros(10, np.float32)), [10])


def test_host_cores_give_a_kernel_the_devices_stack(host):
    """Host cores size and guard a kernel's stack as a Pool core would (D94): what
    overflows on Xtensa cores overflows here, naming STACK_SIZE and the line."""
    np.testing.assert_array_equal(host.ops["recurse"](np.zeros(10, np.float32)), [10])
    for op, arg in (("big", X), ("huge", X), ("recurse", np.zeros(100000, np.float32))):
        with pytest.raises(DeviceFault) as e:
            host.ops[op](arg)
        msg = str(e.value)
        assert e.value.kind == "stack overflow", msg
        assert "more than a Pool core's 8 KiB of local stack leaves a kernel" in msg, msg
        assert "STACK_SIZE=4196 fitted there" in msg and "-DSTACK_SIZE=N" in msg, msg
        assert re.search(r"k\.cpp:\d+ in ", msg), msg
    np.testing.assert_array_equal(host.ops["recurse"](np.zeros(10, np.float32)), [10])


@pytest.mark.full
@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_with_stack_size_32768_both_backends_run_what_fits_and_stop_what_does_not(tmp_path, isa):
    lib = build(tmp_path, isa, ["-DSTACK_SIZE=32768"])
    np.testing.assert_array_equal(lib.ops["big"](X), np.full(8, BIG_SUM, np.float32))
    np.testing.assert_array_equal(lib.ops["recurse"](np.zeros(50, np.float32)), [50])
    with pytest.raises(DeviceFault, match=r"stack overflow: more than STACK_SIZE=32768 bytes \(its HBM stack\)"):
        lib.ops["recurse"](np.zeros(100000, np.float32))
    np.testing.assert_array_equal(lib.ops["big"](X), np.full(8, BIG_SUM, np.float32))


EDGE = """
#include <torch/torch.h>
#define LOCALS(N) \\
    torch::Tensor s##N(const torch::Tensor &x) { \\
        volatile char buf[N]; \\
        auto in = x.accessor<float, 1>(); \\
        for (int i = 0; i < N; i++) buf[i] = (char)in[i % x.numel()]; \\
        int s = 0; \\
        for (int i = 0; i < N; i += 64) s += buf[i]; \\
        return torch::full({1}, (float)s, torch::kFloat); \\
    }
LOCALS(4000)
LOCALS(5000)
LOCALS(7000)
LOCALS(9000)
LOCALS(28000)
LOCALS(36000)
"""
EDGE_SHAPES = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(edge_ops, m) {
    m.def("s4000", &one, "s4000"); m.def("s5000", &one, "s5000"); m.def("s7000", &one, "s7000");
    m.def("s9000", &one, "s9000"); m.def("s28000", &one, "s28000"); m.def("s36000", &one, "s36000");
}
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
@pytest.mark.parametrize("stack_size, runs, overflows", [
    (None, ["s4000", "s5000"], ["s7000", "s9000"]),
    (32768, ["s9000", "s28000"], ["s36000"]),
])
@pytest.mark.full
def test_both_sides_of_the_stack_edge_agree_on_both_backends(tmp_path, isa, stack_size, runs, overflows):
    (tmp_path / "k.cpp").write_text(EDGE)
    (tmp_path / "s.cpp").write_text(EDGE_SHAPES)
    flags = [] if stack_size is None else [f"-DSTACK_SIZE={stack_size}"]
    lib = custom_op.load("edge_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                         build_directory=tmp_path / "out", isa=isa, extra_cflags=flags)
    x = np.ones(8, np.float32)
    for op in runs:
        n = int(op[1:])
        np.testing.assert_array_equal(lib.ops[op](x), [len(range(0, n, 64))], err_msg=op)
    for op in overflows:
        with pytest.raises(DeviceFault) as e:
            lib.ops[op](x)
        assert e.value.kind == "stack overflow", (op, str(e.value))
        assert f"STACK_SIZE={stack_size or 4196}" in str(e.value), str(e.value)


@pytest.mark.parametrize("flag", ["-DSTACK_SIZE=0", "-DSTACK_SIZE=409601", "-DSTACK_SIZE=0x100000"])
def test_a_stack_size_outside_the_guides_limit_fails_the_build(tmp_path, flag):
    with pytest.raises(RuntimeError, match=r"STACK_SIZE must be 1 to 409600 bytes \(the guide supports at most 400 KB"):
        build(tmp_path, "xtensa", [flag])


# Core-local addresses core 0 stores to (pool-core.ld, nrt-pool.c): core 1's and core 7's
# op images, core 3's and core 7's hbm_scratch, the board's code and vectors, and far below
# the local stack.
TARGETS = {
    "core 1's image": 0x84200100,
    "core 7's image": 0x84E00000,
    "core 3's hbm_scratch": 0x85000000 + 3 * (6 << 20) + 64,
    "core 7's hbm_scratch": 0x85000000 + 7 * (6 << 20),
    "the board's code": 0x88000040,
    "the board's vectors": 0x60000000,
    "below the stack": 0x40000000,
}


def test_stores_outside_the_core_are_faults_and_every_later_launch_is_exact(xtensa):
    rng = np.random.default_rng(25)
    x = rng.standard_normal(4096).astype(np.float32)
    np.testing.assert_array_equal(xtensa.ops["vandal"](x, 0, cores=8), np.abs(x))
    for what, where in TARGETS.items():
        with pytest.raises(DeviceFault) as e:
            xtensa.ops["vandal"](x, where, cores=8)
        assert e.value.core == 0, (what, str(e.value))
        assert "store to no memory" in str(e.value) or e.value.kind == "stack overflow", (what, str(e.value))
    for i in range(100):
        y = rng.standard_normal(4096).astype(np.float32)
        np.testing.assert_array_equal(xtensa.ops["vandal"](y, 0, cores=8), np.abs(y), err_msg=f"launch {i}")


def image_size(stdout):
    m = re.search(rb"core images: (\d+) bytes loaded \(text (\d+), data (\d+), bss (\d+)\) each", stdout)
    assert m, stdout
    total, *parts = map(int, m.groups())
    assert total == sum(parts)
    return total


@pytest.mark.full
def test_the_build_prints_each_core_images_loaded_size_and_warns_above_64_kib(tmp_path):
    from conftest import NRT_POOL, ROOT, run

    mlp = ROOT / "examples" / "mlp"
    p = run(NRT_POOL, "build", "--name", "mlp_ops", "--compute", mlp / "relu.cpp", "--shape", mlp / "shape.cpp",
            "--build-directory", tmp_path / "relu", "--device-image")
    relu = image_size(p.stdout)
    assert relu <= 64 << 10, "the examples' ReLU fits the vendor's 64 KiB staged-library limit"
    assert b"above the 65536 (64 KiB)" not in p.stderr, p.stderr
    # A 256 KiB table: loads, with the warning; a 3 MiB one does not fit a core's 2 MiB slot.
    for kib, ok in ((256, True), (3072, False)):
        src = tmp_path / f"t{kib}.cpp"
        src.write_text(KERNELS.replace("// 16 KiB of locals", f"float table[{kib} * 256] = {{1.0f}};\n// 16 KiB of locals")
                       .replace("float s = 0;", "float s = table[x.numel() % 7] - 1.0f;"))
        (tmp_path / "s.cpp").write_text(SHAPES)
        p = run(NRT_POOL, "build", "--name", "stack_ops", "--compute", src, "--shape", tmp_path / "s.cpp",
                "--build-directory", tmp_path / f"b{kib}", "--device-image", check=False)
        if ok:
            assert p.returncode == 0, p.stderr
            assert image_size(p.stdout) > kib << 10
            assert b"would not load on the device" in p.stderr, p.stderr
        else:
            assert p.returncode != 0
            assert b"exceeds its core's 2 MiB slot" in p.stderr, p.stderr
            assert not (tmp_path / f"b{kib}" / "libstack_ops.pool").exists()
