"""The stack edge both ways: host cores overflow a kernel's stack exactly where Xtensa cores
do, judged by the device build's frames (D118).

Each case runs on both backends, checks off, with sizes on both sides of the device's edge:
a recursion 48 device bytes a call (16 bytes of locals), kernels with thousands of bytes
of locals and a small helper, the same recursion on an HBM stack (STACK_SIZE=32768), and
the guide's op API on int64 (and int32 and float) tensors, whose x86 frames are larger
than the device's (they overflowed host cores only before). Equal means: both give the
same bytes, or both report a stack overflow."""
import numpy as np
import pytest

from gpsimd_open import DeviceFault, custom_op

KERNELS = r"""
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// Recursion as deep as x has elements: a 48-byte frame a call on Xtensa cores.
static int deep(int n, volatile int *up) {
    volatile int pad[4];
    pad[0] = n;
    pad[1] = up ? up[0] : 0;
    return n == 0 ? 0 : 1 + deep(n - 1, pad) + (pad[1] - pad[1]);
}
torch::Tensor recurse(const torch::Tensor &x) {
    return torch::full({1}, (float)deep((int)x.numel(), nullptr), torch::kFloat);
}

// N bytes of locals, every one written, and a small helper below them.
static __attribute__((noinline)) int helper(volatile char *b, int n) {
    volatile int t[4];
    t[0] = n;
    return b[n] + t[0];
}
#define LOCALS(N)                                                     \
    torch::Tensor locals_##N(const torch::Tensor &x) {                \
        volatile char buf[N];                                         \
        int n = (int)x.numel();                                       \
        for (int i = 0; i < N; i++) buf[i] = (char)(i + n);           \
        torch::Tensor y = get_dst_tensor();                           \
        auto out = y.accessor<float, 1>();                            \
        out[0] = (float)helper(buf, N - 1);                           \
        return y;                                                     \
    }
LOCALS(4000)
LOCALS(6700)
LOCALS(6800)
LOCALS(6900)
LOCALS(7000)
LOCALS(7100)
"""

API = r"""
// The op API's integral families on x and y (int64 or int32), as the guide writes them.
torch::Tensor api_bits(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor r = torch::empty(x.sizes(), x.scalar_type());
    torch::Tensor a = torch::empty(x.sizes(), x.scalar_type());
    torch::bitwise_and_out(r, x, y);
    torch::bitwise_or_out(a, x, y);
    torch::bitwise_not_out(a, a);
    torch::bitwise_or_out(r, r, a);
    torch::add_out(a, x, y, 3);
    torch::bitwise_and_out(r, r, a);
    torch::sub_out(a, r, y);
    torch::mul_out(r, a, x);
    torch::clamp_out(a, r, -1000000, 1000000);
    torch::bitwise_or_out(a, a, 5);
    torch::abs_out(r, a);
    return torch::add(r, torch::bitwise_not(x));
}

// Every family on any dtype: arithmetic, division, powers, clamping, rounding, and (for
// floats) the unary functions.
torch::Tensor api_math(const torch::Tensor &x, const torch::Tensor &y) {
    torch::Tensor r = torch::empty(x.sizes(), x.scalar_type());
    torch::add_out(r, x, y, 2);
    torch::mul_out(r, r, x);
    torch::sub_out(r, r, 7);
    torch::clamp_out(r, r, -50, 50);
    torch::Tensor q = torch::div(r, torch::add(torch::abs(y), 1));
    torch::Tensor p = torch::pow(torch::abs(q), 2);
    if (x.scalar_type() == torch::kFloat) {
        p = torch::add(p, torch::exp(torch::sin(q)));
        p = torch::add(p, torch::floor(torch::cos(q)));
        p = torch::add(p, torch::ceil(torch::log(torch::add(torch::abs(q), 1))));
    }
    return torch::add(p, torch::abs(q));
}
"""

LOCALS = [4000, 6700, 6800, 6900, 7000, 7100]


def shapes(api):
    """The registration: the stack kernels, and the API's when `api`."""
    ops = ["recurse", *(f"locals_{n}" for n in LOCALS)]
    text = ('#include <torch/torch.h>\n#include "torchneuron/register.h"\n'
            "torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }\n"
            "torch::Tensor same(torch::Tensor x, torch::Tensor y) { return torch::empty(x.sizes(), x.scalar_type()); }\n"
            "torch::Tensor real(torch::Tensor x, torch::Tensor y) { return torch::empty(x.sizes(), torch::kFloat); }\n"
            "NEURON_LIBRARY(stack_edges, m) {\n")
    text += "".join(f'    m.def("{op}", &one, "{op}");\n' for op in ops)
    if api:
        text += '    m.def("api_bits", &same, "api_bits");\n    m.def("api_math", &real, "api_math");\n'
    return text + "}\n"


def build(tmp, flags=(), api=True):
    """One build (the Pool image and the host library beside it): both backends."""
    (tmp / "k.cpp").write_text(KERNELS + (API if api else ""))
    (tmp / "s.cpp").write_text(shapes(api))
    out = tmp / "out"
    custom_op.load("stack_edges", [tmp / "k.cpp"], [tmp / "s.cpp"], build_directory=out,
                   isa="xtensa", extra_cflags=list(flags))
    return {"host": custom_op.load_library(out / "libstack_edges.so"),
            "xtensa": custom_op.load_library(out / "libstack_edges.pool")}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return build(tmp_path_factory.mktemp("edges"))


@pytest.fixture(scope="module")
def hbm_pair(tmp_path_factory):
    return build(tmp_path_factory.mktemp("edges_hbm"), ["-DSTACK_SIZE=32768"], api=False)


def outcome(lib, op, *args):
    """The bytes a launch gives, or "stack overflow" (any other fault fails the test)."""
    try:
        return np.asarray(lib.ops[op](*args)).tobytes()
    except DeviceFault as e:
        assert e.kind == "stack overflow", str(e)
        return "stack overflow"


def both(pair, op, *args):
    return {isa: outcome(lib, op, *args) for isa, lib in pair.items()}


def test_a_recursion_overflows_at_the_same_depth_on_both_backends(pair):
    seen = set()
    for n in (100, 149, 150, 151, 152, 200):
        got = both(pair, "recurse", np.zeros(n, np.float32))
        assert got["host"] == got["xtensa"], f"depth {n}: {got}"
        seen.add(got["host"] == "stack overflow")
    assert seen == {True, False}, "the depths lie on both sides of the edge"


def test_locals_and_a_helper_overflow_at_the_same_size_on_both_backends(pair):
    x = np.zeros(4, np.float32)
    results = {n: both(pair, f"locals_{n}", x) for n in LOCALS}
    for n, got in results.items():
        assert got["host"] == got["xtensa"], f"{n} bytes of locals: {got}"
    assert results[4000]["host"] != "stack overflow"
    assert results[7100]["host"] == "stack overflow", "7100 bytes and a helper: past the device's edge"


@pytest.mark.full
def test_an_hbm_stack_overflows_at_the_same_depth_on_both_backends(hbm_pair):
    seen = set()
    for n in (500, 666, 667, 668, 669, 670, 900):
        got = both(hbm_pair, "recurse", np.zeros(n, np.float32))
        assert got["host"] == got["xtensa"], f"depth {n}, STACK_SIZE=32768: {got}"
        seen.add(got["host"] == "stack overflow")
    assert seen == {True, False}
    # The HBM stack holds what the local stack does not.
    x = np.zeros(4, np.float32)
    got = both(hbm_pair, "locals_7100", x)
    assert got["host"] == got["xtensa"] != "stack overflow", got


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_the_op_apis_integral_families_run_on_host_cores_as_on_the_device(pair, dtype):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    x = rng.integers(info.min // 4, info.max // 4, size=(2, 3, 4), dtype=dtype)
    y = rng.integers(max(info.min, -1000), min(info.max, 1000), size=(2, 3, 4), dtype=dtype)
    got = both(pair, "api_bits", x, y)
    assert got["host"] != "stack overflow", "host cores have no overflow the device lacks"
    assert got["host"] == got["xtensa"]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8, np.float32])
def test_the_op_apis_arithmetic_families_run_on_host_cores_as_on_the_device(pair, dtype):
    rng = np.random.default_rng(11)
    x = rng.integers(-20, 20, size=(2, 3, 4)).astype(dtype)
    y = rng.integers(-9, 9, size=(2, 3, 4)).astype(dtype)
    got = both(pair, "api_math", x, y)
    assert got["host"] != "stack overflow", "host cores have no overflow the device lacks"
    assert got["host"] == got["xtensa"]


PRINTS = r"""
#include <stdio.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// N bytes of locals, then printf: an integer conversion (about 900 bytes of a Pool core's
// stack below the call), or a float's (about 2.7 KiB), which host builds charge only when
// taken (D122).
#define PRINT(KIND, FMT, VAL, N)                                          \
    torch::Tensor print_##KIND##_##N(const torch::Tensor &x) {           \
        volatile char buf[N];                                             \
        int n = (int)x.numel();                                           \
        for (int i = 0; i < N; i++) buf[i] = (char)(i + n);               \
        printf(FMT, VAL);                                                 \
        return torch::full({1}, (float)buf[0], torch::kFloat);            \
    }
#define PRINT_INT(N) PRINT(int, "%d\n", buf[N - 1], N)
#define PRINT_FLOAT(N) PRINT(float, "%f\n", (double)buf[N - 1] / 3, N)
PRINT_INT(5800)
PRINT_INT(6200)
PRINT_FLOAT(4480)
PRINT_FLOAT(4600)

// A variable-length array as long as x has elements, every byte written, and a small
// helper below it: its bytes lie below the frame on both builds (D123).
static __attribute__((noinline)) int vla_helper(volatile char *b, int n) {
    volatile int t[4];
    t[0] = n;
    return b[n] + t[0];
}
// The same array, then printf's float conversion: its charged path at the stack's edge.
torch::Tensor vla_float(const torch::Tensor &x) {
    int n = (int)x.numel();
    volatile char buf[n];
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
    printf("%f\n", (double)buf[n - 1] / 3);
    return torch::full({1}, (float)buf[0], torch::kFloat);
}
// Then an integer conversion: its digits divide through a routine whose address rustc
// spilled to the stack and reloads before each call (the frames table follows it, D128).
torch::Tensor vla_int(const torch::Tensor &x) {
    int n = (int)x.numel();
    volatile char buf[n];
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
    printf("%d\n", (int)buf[n - 1]);
    return torch::empty({1}, torch::kFloat);
}
// Then torch::full as the deepest code: its fill copies through neuron_memcpy, whose
// checking-mode note a launch with checks off never takes (D128).
torch::Tensor vla_full(const torch::Tensor &x) {
    int n = (int)x.numel();
    volatile char buf[n];
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
    return torch::full({1}, (float)buf[n / 2], torch::kFloat);
}
torch::Tensor vla(const torch::Tensor &x) {
    int n = (int)x.numel();
    volatile char buf[n];
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
    torch::Tensor y = get_dst_tensor();
    auto out = y.accessor<float, 1>();
    out[0] = (float)vla_helper(buf, n - 1);
    return y;
}
// The same with the array aligned to 64 bytes (more than the stack's 16: the device
// compiler takes 48 bytes more before rounding, D126).
torch::Tensor vla_aligned(const torch::Tensor &x) {
    int n = (int)x.numel();
    alignas(64) volatile char buf[n];
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
    torch::Tensor y = get_dst_tensor();
    auto out = y.accessor<float, 1>();
    out[0] = (float)vla_helper(buf, n - 1);
    return y;
}
// Four arrays in turn, each in a scope of its own (its bytes given back as the scope ends),
// the last as long as x has elements.
torch::Tensor vla_scopes(const torch::Tensor &x) {
    int n = (int)x.numel(), s = 0;
    for (int k = 1; k <= 4; k++) {
        volatile char buf[n / 4 * k];
        for (int i = 0; i < n / 4 * k; i++) buf[i] = (char)(i + n);
        s += vla_helper(buf, n / 4 * k - 1);
    }
    torch::Tensor y = get_dst_tensor();
    auto out = y.accessor<float, 1>();
    out[0] = (float)s;
    return y;
}
"""
PRINT_OPS = ["print_int_5800", "print_int_6200", "print_float_4480", "print_float_4600",
             "vla", "vla_float", "vla_int", "vla_full", "vla_aligned", "vla_scopes"]


def build_pair(tmp, name, source, ops, flags=()):
    """`source`'s kernels `ops` (each registered with a one-float output) built both ways
    (with `flags`): the host library and the Pool image."""
    (tmp / "k.cpp").write_text(source)
    (tmp / "s.cpp").write_text(
        '#include <torch/torch.h>\n#include "torchneuron/register.h"\n'
        "torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }\n"
        f"NEURON_LIBRARY({name}, m) {{\n"
        + "".join(f'    m.def("{op}", &one, "{op}");\n' for op in ops) + "}\n")
    out = tmp / "out"
    custom_op.load(name, [tmp / "k.cpp"], [tmp / "s.cpp"], build_directory=out, isa="xtensa",
                   extra_cflags=list(flags))
    return {"host": custom_op.load_library(out / f"lib{name}.so"),
            "xtensa": custom_op.load_library(out / f"lib{name}.pool")}


def build_prints(tmp, flags=()):
    """PRINTS built both ways (with `flags`)."""
    return build_pair(tmp, "stack_prints", PRINTS, PRINT_OPS, flags)


@pytest.fixture(scope="module")
def print_pair(tmp_path_factory):
    return build_prints(tmp_path_factory.mktemp("edges_printf"))


def test_printf_is_charged_by_the_path_it_takes(print_pair):
    """An integer conversion does not pay for printf's float path (5800 bytes of locals and
    printf("%d") run on both backends: host cores overflowed there when every printf was
    charged its deepest path); a float conversion does, on both backends alike."""
    x = np.zeros(4, np.float32)
    got = {op: both(print_pair, op, x) for op in PRINT_OPS if op.startswith("print_")}
    for op, g in got.items():
        assert g["host"] == g["xtensa"], f"{op}: {g}"
    assert got["print_int_5800"]["host"] != "stack overflow"
    assert got["print_int_6200"]["host"] == "stack overflow"
    assert got["print_float_4480"]["host"] != "stack overflow"
    assert got["print_float_4600"]["host"] == "stack overflow"


def test_the_runtimes_paths_meet_the_stacks_edge_where_the_device_does(print_pair):
    """A kernel whose deepest point is inside the runtime, at the stack's edge: the longest
    variable-length array before printf("%f") (its charged float path, D122), printf("%d")
    (digits divided through a spilled routine address) and torch::full (a copy whose
    checking-mode note is charged only when taken), found by bisection on each backend, is
    the same byte count on both (D128; before, host cores stopped 16 and 64 bytes early on
    the first and last, and ran 48 bytes further than the device on the second)."""
    ops = ("vla_float", "vla_int", "vla_full")
    edges = {isa: {op: edge(print_pair, isa, op) for op in ops} for isa in ("host", "xtensa")}
    assert edges["host"] == edges["xtensa"], edges


def runs(lib, op, n):
    """Whether `op` of `lib` runs on an array of `n` floats; False when the stack
    overflows (any other fault fails the test)."""
    try:
        lib.ops[op](np.zeros(n, np.float32))
        return True
    except DeviceFault as e:
        assert "stack overflow" in str(e), str(e)
        return False


def edge(pair, isa, op):
    """The longest array `op` takes before the stack overflows on backend `isa` (bisection
    over the tensor's length, which sizes the kernel's variable-length array)."""
    def runs_with(n):
        return runs(pair[isa], op, n)

    lo, hi = 1000, 9000
    assert runs_with(lo) and not runs_with(hi), (isa, op)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if runs_with(mid) else (lo, mid)
    return lo


def test_variable_length_arrays_take_the_bytes_the_device_compiler_gives_them(print_pair):
    """Host cores count an array's bytes by the device compiler's rule (D126), not by how
    far x86 moved its stack pointer, and the launcher's frames above the kernel are the
    same in every library: the longest array each kernel takes is the same byte count on
    both backends, aligned to 64 bytes or in scopes that end (before: the aligned one's
    edge lay 28 bytes apart, and in a library with many kernels host cores ran 16 bytes
    further than the device)."""
    edges = {isa: {op: edge(print_pair, isa, op) for op in ("vla", "vla_aligned", "vla_scopes")}
             for isa in ("host", "xtensa")}
    host, device = edges["host"], edges["xtensa"]
    assert host == device, edges


def test_a_variable_length_array_overflows_at_the_same_size_on_both_backends(print_pair):
    """`char buf[n]` with n from the tensor: host cores count its bytes below the frame as
    the device's `movsp` takes them (D123); before, they ran every size the device
    overflowed."""
    results = {n: both(print_pair, "vla", np.zeros(n, np.float32)) for n in (1000, 4000, 6900, 7100, 9000)}
    for n, got in results.items():
        assert got["host"] == got["xtensa"], f"{n} bytes: {got}"
    assert results[6900]["host"] != "stack overflow"
    assert results[7100]["host"] == "stack overflow"


def test_a_variable_length_array_at_o0_runs_on_xtensa_cores_as_on_the_device(tmp_path):
    """At -O0 the device build's MOVSP meets its caller's frame spilled: the alloca
    exception, which the vendor's firmware serves and the board now does too (D123); it
    was reported as a trap before. The edge agrees both ways at -O0 as well."""
    pair = build_prints(tmp_path, ["-O0"])
    results = {n: both(pair, "vla", np.zeros(n, np.float32)) for n in (16, 1000, 4000, 6600, 9000)}
    for n, got in results.items():
        assert got["host"] == got["xtensa"], f"{n} bytes at -O0: {got}"
    assert results[4000]["xtensa"] != "stack overflow"
    assert results[9000]["xtensa"] == "stack overflow"


STALE = r"""
#include <torch/torch.h>
#include <stdio.h>
// 5000 bytes of locals: printf("%d") runs here, its float path would not; then a
// `__builtin_clz(0)`, whose rule check reaches the runtime's note writer by a call the
// build sets no charged depth for.
torch::Tensor stale(const torch::Tensor &x) {
    volatile char buf[5000];
    int n = (int)x.numel();
    for (int i = 0; i < 5000; i++) buf[i] = (char)(i + n);
    printf("%d\n", (int)buf[n]);
    volatile unsigned z = (unsigned)n - 4;
    return torch::full({1}, (float)__builtin_clz(z), torch::kFloat);
}
"""


def test_a_charged_depth_is_not_left_pending_after_its_call_returns(tmp_path):
    """The depth a charged call would reach (printf's float path here) is set before the call
    and cleared when it returns (D128): a later charged function reached without one (the
    note writer, from a rule check) must not meet it. Before, host cores reported a stack
    overflow here that the device does not have, checks on or off."""
    pair = build_pair(tmp_path, "stale_ops", STALE, ["stale"])
    host, device = pair["host"], pair["xtensa"]
    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(host.ops["stale"](x), device.ops["stale"](x))
    from gpsimd_open import CheckError
    with pytest.raises(CheckError) as e:
        host.ops["stale"](x, check=True)
    assert [f["check"] for f in e.value.findings] == ["rules"], e.value.findings
    assert "__builtin_clz(0)" in e.value.findings[0]["message"]


TRIG = r"""
#include <torch/torch.h>
#include <math.h>
// A variable-length array as long as x has elements, then a trigonometric function: of a
// small argument (reduced inline), of one libm reduces by its medium path (rem_pio2f past
// 9*pi/4 for float, rem_pio2 past pi/4 for double), or of one so large that libm reduces
// it by its large path (about 860 bytes of a Pool core's stack below the medium one);
// float, double, and sinf with cosf of one argument (which GCC makes one sincosf).
#define VLA                                                                   \
    int n = (int)x.numel();                                                   \
    volatile char buf[n];                                                     \
    for (int i = 0; i < n; i++) buf[i] = (char)(i + n);
#define KEEP(v)                                                               \
    volatile float keep = (float)(v);                                         \
    (void)keep;                                                               \
    return torch::empty({1}, torch::kFloat);
torch::Tensor sin_small(const torch::Tensor &x) { VLA KEEP(sinf(0.01f * buf[n / 2])) }
torch::Tensor sin_medium(const torch::Tensor &x) { VLA KEEP(sinf(100.0f + buf[n / 2])) }
torch::Tensor sin_large(const torch::Tensor &x) { VLA KEEP(sinf(3.0e9f + buf[n / 2])) }
torch::Tensor sin_small_d(const torch::Tensor &x) { VLA KEEP(sin(0.001 * buf[n / 2])) }
torch::Tensor sin_medium_d(const torch::Tensor &x) { VLA KEEP(sin(100.0 + buf[n / 2])) }
torch::Tensor sin_large_d(const torch::Tensor &x) { VLA KEEP(sin(1.0e7 + buf[n / 2])) }
torch::Tensor sincos_large(const torch::Tensor &x) {
    VLA
    float a = 3.0e9f + buf[n / 2];
    KEEP(sinf(a) + cosf(a))
}
"""
TRIG_OPS = ["sin_small", "sin_medium", "sin_large", "sin_small_d", "sin_medium_d", "sin_large_d", "sincos_large"]


def test_libms_reductions_are_charged_when_taken(tmp_path):
    """sinf and sin reduce an argument by pi/2 inline when it is small, through libm's
    medium path past 9*pi/4 (float) or pi/4 (double), and a huge one through the large path
    below it, about 860 bytes deeper than any other: host builds charge each path when the
    argument takes it (D129, D132): the huge angles' edges are the same on both backends
    (before D129 every call was charged the large path: 600 bytes early). Small and medium
    angles reach no deeper than the kernel's torch::empty here, whose edge host cores meet
    up to 16 bytes early (D133)."""
    pair = build_pair(tmp_path, "trig_edges", TRIG, TRIG_OPS)
    edges = {isa: {op: edge(pair, isa, op) for op in TRIG_OPS} for isa in ("host", "xtensa")}
    host, device = edges["host"], edges["xtensa"]
    for op in ("sin_large", "sin_large_d", "sincos_large"):
        assert host[op] == device[op], edges
    for op in ("sin_small", "sin_medium", "sin_small_d", "sin_medium_d"):
        assert device[op] - 16 <= host[op] <= device[op], edges
    assert host["sin_small"] >= host["sin_medium"] > host["sin_large"] + 400, edges
    assert host["sin_small_d"] >= host["sin_medium_d"] > host["sin_large_d"] + 400, edges


RETURNS = {
    "empty": "    return torch::empty({1}, torch::kFloat);\n",
    "dst": "    torch::Tensor y = get_dst_tensor();\n    return y;\n",
}


def fixed_locals(tmp, sizes, bodies=RETURNS):
    """Kernels with `volatile char buf[N]`, then `bodies[kind]`, named KIND_N for each N
    in `sizes[KIND]`, built both ways."""
    tmp.mkdir(parents=True)
    kernels = [(kind, n) for kind in sizes for n in sizes[kind]]
    src = "#include <torch/torch.h>\n#include <stdlib.h>\n" + "".join(
        f"torch::Tensor {kind}_{n}(const torch::Tensor &x) {{\n"
        f"    volatile char buf[{n}];\n"
        f"    for (int i = 0; i < {n}; i++) buf[i] = (char)i;\n" + bodies[kind] + "}\n"
        for kind, n in kernels)
    return build_pair(tmp, "fixed", src, [f"{k}_{n}" for k, n in kernels])


def edges_with_fixed_locals(tmp, bodies, early):
    """For each kind of `bodies`, the largest fixed array that runs on Xtensa cores, found
    in five rounds of five sizes (1024, 256, 64, 16 and 4 bytes apart, from 4000). At every size
    tried host cores never run what the device overflows, and overflow what it runs only
    within `early[kind]` bytes of its edge (0: both backends agree at every size)."""
    lo = {k: 4000 for k in bodies}
    for step in (1024, 256, 64, 16, 4):
        sizes = {k: [lo[k] + i * step for i in range(5)] for k in lo}
        pair = fixed_locals(tmp / str(step), sizes, bodies)
        for kind in lo:
            outcomes = {(n, isa): runs(pair[isa], f"{kind}_{n}", 4)
                        for n in sizes[kind] for isa in ("host", "xtensa")}
            ran = [n for n in sizes[kind] if outcomes[(n, "xtensa")]]
            assert ran and len(ran) < len(sizes[kind]), (kind, step, outcomes)
            lo[kind] = max(ran)
            for n in sizes[kind]:
                host, device = outcomes[(n, "host")], outcomes[(n, "xtensa")]
                assert device or not host, ("host cores ran what the device overflows", kind, n, outcomes)
                if early.get(kind) == 0:
                    assert host == device, (kind, n, outcomes)
                elif step == 4 and kind in early:
                    assert host or not device or n > lo[kind] - early[kind], (kind, n, outcomes)
    return lo


def test_fixed_locals_never_run_on_host_cores_where_the_device_overflows(tmp_path):
    """Large fixed local arrays (the usual way to a deep stack) before get_dst_tensor() and
    torch::empty: at every size tried, down to 4-byte steps at the edge, host cores never
    run what the device overflows, and stop at most 80 bytes before it (measured: 0 to 64
    bytes, by library; the checks' fault messages are formatted inline and their frames
    count, D133)."""
    edges_with_fixed_locals(tmp_path, RETURNS, {"dst": 80, "empty": 80})


PARSES = {
    # Rust's fast path: no charge.
    "short": '    volatile float v = strtof("1.5", nullptr); (void)v;\n' + RETURNS["dst"],
    # 2^53 + 1, then 25 digits: its first 19 and their successor round apart, so Rust's
    # parser takes its slow path, charged (D134).
    "long": '    volatile double v = strtod("9007199254740993000000001", nullptr); (void)v;\n'
            + RETURNS["dst"],
}


def test_strtod_is_charged_its_slow_path_only_for_text_that_may_take_it(tmp_path):
    """strtod and strtof parse short decimal text by Rust's fast path; only text beyond it
    may take the slow path's 768-digit decimal: host builds charge it only then (D134;
    before, every call was: a kernel calling strtof("1.5") stopped about 1 KiB early on
    host cores). Short text meets the device's edge exactly; text that takes the slow path
    is charged its whole decimal, of which the device touches only what the text fills, so
    host cores stop early there, never later."""
    edges_with_fixed_locals(tmp_path, PARSES, {"short": 0})
