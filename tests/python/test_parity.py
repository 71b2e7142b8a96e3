"""Host cores compute what the device computes, or fault as it does.

Each op is ordinary C++ an op author writes, run on host cores and on Xtensa cores (the
device build) with checks off; both must give the device's answer: plain `char` is
unsigned on a Pool core, and a 2- or 4-byte access through a misaligned pointer faults
there (8-byte values move as two words), naming the source line (D92)."""
import re
import shutil
import warnings

import numpy as np
import pytest

from gpsimd_open import DeviceFault, custom_op
from gpsimd_open._check import CheckError, CheckWarning

KERNELS = r"""
#include <stdint.h>
#include <string.h>
#include <torch/torch.h>

// Quantisation-style code: the low byte of each value as a plain char, summed.
torch::Tensor char_sum(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    long acc = 0;
    for (int64_t i = 0; i < x.numel(); i++) {
        char c = (int)in[i] & 0xff;
        acc += c;
    }
    return torch::full({1}, (float)acc, torch::kFloat);
}

// A char compared with a negative number: never true where char is unsigned.
torch::Tensor char_negative(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    int n = 0;
    for (int64_t i = 0; i < x.numel(); i++) {
        char c = (char)(int)in[i];
        if (c < 0) n++;
    }
    return torch::full({1}, (float)n, torch::kFloat);
}

// A word read from a byte buffer at `off` through a pointer the kernel keeps.
torch::Tensor word_at(const torch::Tensor &x, int64_t off) {
    unsigned char buf[16];
    for (int i = 0; i < 16; i++) buf[i] = (unsigned char)(i + 1);
    const int *p = reinterpret_cast<const int *>(buf + off);
    int v = *p;
    return torch::full({1}, (float)(v & 0xffffff), torch::kFloat);
}

// A 2-byte store through a misaligned pointer.
torch::Tensor half_store(const torch::Tensor &x, int64_t off) {
    alignas(4) unsigned char buf[8] = {0};
    uint16_t *p = (uint16_t *)(buf + off);
    *p = 0x0102;
    return torch::full({1}, (float)(buf[0] + buf[1] * 256 + buf[2] * 65536), torch::kFloat);
}

// The legal way: memcpy from any offset into a local.
torch::Tensor word_copied(const torch::Tensor &x, int64_t off) {
    unsigned char buf[16];
    for (int i = 0; i < 16; i++) buf[i] = (unsigned char)(i + 1);
    int v;
    memcpy(&v, buf + off, sizeof v);
    return torch::full({1}, (float)(v & 0xffffff), torch::kFloat);
}

// An 8-byte value at a 4-byte boundary: two word loads on the device, legal on both.
torch::Tensor double_at_word(const torch::Tensor &x, int64_t off) {
    alignas(8) unsigned char buf[24] = {0};
    double d = 2.5;
    memcpy(buf + 4, &d, sizeof d);
    const double *p = reinterpret_cast<const double *>(buf + off);
    return torch::full({1}, (float)*p, torch::kFloat);
}
"""
SHAPES = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
torch::Tensor one2(torch::Tensor x, int64_t off) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(parity_ops, m) {
    m.def("char_sum", &one, "char_sum");
    m.def("char_negative", &one, "char_negative");
    m.def("word_at", &one2, "word_at");
    m.def("half_store", &one2, "half_store");
    m.def("word_copied", &one2, "word_copied");
    m.def("double_at_word", &one2, "double_at_word");
}
"""


@pytest.fixture(scope="module", params=["host", "xtensa"])
def lib(tmp_path_factory, request):
    d = tmp_path_factory.mktemp("parity")
    (d / "k.cpp").write_text(KERNELS)
    (d / "s.cpp").write_text(SHAPES)
    return custom_op.load("parity_ops", [d / "k.cpp"], [d / "s.cpp"],
                          build_directory=d / "out", isa=request.param)


def line_of(function, text):
    """The 1-based line of k.cpp holding `text`, first after `function`'s definition."""
    lines = KERNELS.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(f"torch::Tensor {function}("))
    return 1 + next(i for i in range(start, len(lines)) if lines[i].strip() == text)


BYTES = np.arange(1000, dtype=np.float32)
X = np.zeros(4, np.float32)


def test_plain_char_is_unsigned_on_both_backends(lib):
    # The op: 124716 with an unsigned char, -212 with a signed one.
    expected = float(sum(i & 0xFF for i in range(1000)))
    assert expected == 124716
    np.testing.assert_array_equal(lib.ops["char_sum"](BYTES), [expected])
    np.testing.assert_array_equal(lib.ops["char_negative"](BYTES), [0])


def test_aligned_word_reads_agree(lib):
    # Bytes 5, 6, 7 of 1..16 (little-endian), masked to three bytes.
    np.testing.assert_array_equal(lib.ops["word_at"](X, 4), [0x070605])
    np.testing.assert_array_equal(lib.ops["word_copied"](X, 1), [0x040302])
    np.testing.assert_array_equal(lib.ops["double_at_word"](X, 4), [2.5])
    # 0x0102 stored little-endian at byte 2: buf[2] = 2.
    np.testing.assert_array_equal(lib.ops["half_store"](X, 2), [2 * 65536])


SEEN = r"""
#include <stdint.h>
#include <torch/torch.h>

// Misaligned at offsets the compiler sees (D105): GCC for Xtensa knows the buffer's
// alignment and moves these values bytewise, so the device build runs; host cores must
// give its bytes, not a fault. The bytes come from the input, so nothing folds away.
torch::Tensor u16_at_3(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    alignas(8) unsigned char b[16];
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i];
    return torch::full({1}, (float)*(uint16_t *)(b + 3), torch::kFloat);
}

torch::Tensor word_stored_at_1(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    alignas(8) unsigned char b[8] = {0};
    *(int *)(b + 1) = 0x01020304 + (int)in[0];
    return torch::full({1}, (float)(b[0] + b[1] * 256 + b[4] * 65536), torch::kFloat);
}

torch::Tensor float_at_2(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    alignas(8) unsigned char b[16];
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i];
    const float *f = reinterpret_cast<const float *>(b + 2);
    return torch::full({1}, f[0], torch::kFloat);
}

// No alignas: arrays and structs are word-aligned on the device, so the compiler knows
// these offsets too.
torch::Tensor u16_in_small_array(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)in[i];
    return torch::full({1}, (float)*(uint16_t *)(b + 1), torch::kFloat);
}

// Words at a fixed odd offset in a loop (the parity corpus's misaligned_loop_known): GCC
// for Xtensa follows the offset and reads halfwords; host cores judge by what the device
// build reads on the line (D125).
torch::Tensor words_in_a_loop(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    unsigned char b[40];
    for (int i = 0; i < 40; i++) b[i] = (unsigned char)in[i % 16];
    unsigned s = 0;
    for (int i = 0; i < 4; i++) s += *(uint32_t *)(b + 4 * i + 2);
    return torch::full({1}, (float)(s & 0xffff), torch::kFloat);
}

struct Pixel { unsigned char r, g, b, a; };
torch::Tensor u16_in_pixels(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    Pixel px[2];
    unsigned char *bytes = (unsigned char *)px;
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)in[i];
    return torch::full({1}, (float)*(uint16_t *)(bytes + 1), torch::kFloat);
}
"""
SEEN_SHAPES = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(seen_ops, m) {
    m.def("u16_at_3", &one, "u16_at_3");
    m.def("word_stored_at_1", &one, "word_stored_at_1");
    m.def("float_at_2", &one, "float_at_2");
    m.def("u16_in_small_array", &one, "u16_in_small_array");
    m.def("u16_in_pixels", &one, "u16_in_pixels");
    m.def("words_in_a_loop", &one, "words_in_a_loop");
}
"""


@pytest.fixture(scope="module", params=["host", "xtensa"])
def seen(tmp_path_factory, request):
    d = tmp_path_factory.mktemp("seen")
    (d / "k.cpp").write_text(SEEN)
    (d / "s.cpp").write_text(SEEN_SHAPES)
    return custom_op.load("seen_ops", [d / "k.cpp"], [d / "s.cpp"],
                          build_directory=d / "out", isa=request.param)


ONE_TO_16 = np.arange(1, 17, dtype=np.float32)


@pytest.mark.parametrize("op, expected", [
    ("u16_at_3", 4 + 5 * 256),
    # 0x01020305 stored little-endian from byte 1: b[1] = 5, b[4] = 1, b[0] untouched.
    ("word_stored_at_1", 5 * 256 + 1 * 65536),
    ("float_at_2", float(np.frombuffer(bytes([3, 4, 5, 6]), "<f4")[0])),
    ("u16_in_small_array", 2 + 3 * 256),
    ("u16_in_pixels", 2 + 3 * 256),
    ("words_in_a_loop", sum(int.from_bytes(bytes((k % 16) + 1 for k in range(o, o + 4)), "little")
                            for o in (2, 6, 10, 14)) & 0xFFFF),
])
def test_misalignment_the_compiler_sees_gives_the_device_builds_bytes(seen, op, expected):
    np.testing.assert_array_equal(seen.ops[op](ONE_TO_16), np.array([expected], np.float32))


# Through a pointer variable, GCC for Xtensa knows the misalignment only when optimising
# (it propagates the address); at -O0 it loads the pointer and reads a halfword, which
# faults on the device. Host cores must follow both (the plugin decides from what the
# compiler knows, not from the source's shape).
UNOPTIMISED = r"""
#include <stdint.h>
#include <torch/torch.h>
torch::Tensor u16_at_3(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    alignas(8) unsigned char b[16];
    for (int i = 0; i < 16; i++) b[i] = (unsigned char)in[i];
    const uint16_t *p = (const uint16_t *)(b + 3);
    uint16_t v = *p;
    return torch::full({1}, (float)v, torch::kFloat);
}
"""
UNOPTIMISED_SHAPES = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
NEURON_LIBRARY(unoptimised, m) { m.def("u16_at_3", &one, "u16_at_3"); }
"""


@pytest.mark.full
@pytest.mark.parametrize("isa", ["host", "xtensa"])
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_a_pointer_the_compiler_follows_only_when_optimising(tmp_path, isa, opt):
    (tmp_path / "k.cpp").write_text(UNOPTIMISED)
    (tmp_path / "s.cpp").write_text(UNOPTIMISED_SHAPES)
    lib = custom_op.load("unoptimised", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                         build_directory=tmp_path / "out", isa=isa, extra_cflags=[opt])
    if opt == "-O2":
        np.testing.assert_array_equal(lib.ops["u16_at_3"](ONE_TO_16), [4 + 5 * 256])
        return
    with pytest.raises(DeviceFault) as e:
        lib.ops["u16_at_3"](ONE_TO_16)
    msg = str(e.value)
    assert "unaligned load/store" in msg, msg
    line = 1 + UNOPTIMISED.splitlines().index("    uint16_t v = *p;")
    assert re.search(rf"k\.cpp:{line}\b", msg), (line, msg)


@pytest.mark.parametrize("op, off, line", [
    ("word_at", 1, "int v = *p;"),
    ("word_at", 2, "int v = *p;"),
    ("half_store", 1, "*p = 0x0102;"),
])
def test_misaligned_accesses_fault_as_on_the_device_naming_the_line(lib, op, off, line):
    number = line_of(op, line)
    with pytest.raises(DeviceFault) as e:
        lib.ops[op](X, off)
    msg = str(e.value)
    assert "unaligned load/store" in msg, msg
    assert re.search(rf"k\.cpp:{number}\b", msg), (number, msg)
    # The core stays usable: the next launch is exact.
    np.testing.assert_array_equal(lib.ops["word_at"](X, 4), [0x070605])


# ---- the parity check (--check=parity, check="parity"): what the build cannot make equal
# is named, with the first differing element (D93) ----

MODEL = r"""
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>

// A counter in `long`: 64-bit on host cores, 32-bit on the device.
torch::Tensor long_sum(const torch::Tensor &x) {
    auto in = x.accessor<float, 1>();
    long acc = 0;
    for (int64_t i = 0; i < x.numel(); i++) acc += (long)in[i] * 100000;
    return torch::full({1}, (float)(acc % 1000003), torch::kFloat);
}

// What the data model prints.
torch::Tensor sizes(const torch::Tensor &x) {
    printf("long %d size_t %d pointer %d\n", (int)sizeof(long), (int)sizeof(size_t), (int)sizeof(void *));
    return torch::full({1}, 1.0f, torch::kFloat);
}

// A control: float arithmetic both builds compute alike.
torch::Tensor scale(const torch::Tensor &x) {
    torch::Tensor y = torch::empty({x.numel()}, torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] * 0.5f + 1.0f;
    return y;
}

// A misaligned word in a local buffer at a constant offset: the device compiler sees the
// misalignment and reads bytes; host cores report the access (D92).
torch::Tensor folded(const torch::Tensor &x) {
    unsigned char buf[16];
    auto in = x.accessor<float, 1>();
    for (int i = 0; i < 16; i++) buf[i] = (unsigned char)in[i];
    return torch::full({1}, (float)(*(int *)(buf + 1) & 0xffff), torch::kFloat);
}
"""
MODEL_SHAPES = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
torch::Tensor like(torch::Tensor x) { return torch::empty({x.numel()}, torch::kFloat); }
NEURON_LIBRARY(model_ops, m) {
    m.def("long_sum", &one, "long_sum");
    m.def("sizes", &one, "sizes");
    m.def("scale", &like, "scale");
    m.def("folded", &one, "folded");
}
"""


def build_both(d, ns, kernels, shapes, data_model=None):
    """lib{ns}.so and lib{ns}.pool side by side in d/out, from the two sources."""
    (d / "k.cpp").write_text(kernels)
    (d / "s.cpp").write_text(shapes)
    custom_op.load(ns, [d / "k.cpp"], [d / "s.cpp"], build_directory=d / "out", isa="xtensa",
                   data_model=data_model)
    return d / "out"


@pytest.fixture(scope="module")
def model_build(tmp_path_factory):
    """The host library in the host's data model (x86-64, D97): what parity names."""
    return build_both(tmp_path_factory.mktemp("model"), "model_ops", MODEL, MODEL_SHAPES, data_model="host")


def test_in_the_devices_data_model_the_model_kernels_agree(tmp_path):
    """The default build (the device's data model, D97): the same `long` counter and sizes
    on both backends, parity silent."""
    out = build_both(tmp_path, "model_ops", MODEL, MODEL_SHAPES)
    want = c_mod(wrap32(sum(i * 100000 for i in range(1000))), 1000003)
    for name in ("libmodel_ops.so", "libmodel_ops.pool"):
        lib = custom_op.load_library(out / name)
        np.testing.assert_array_equal(lib.ops["long_sum"](XS, check="parity"), [want])
        np.testing.assert_array_equal(lib.ops["sizes"](XS, check="parity"), [1.0])


@pytest.fixture(scope="module", params=["host", "xtensa"])
def model(model_build, request):
    name = "libmodel_ops.so" if request.param == "host" else "libmodel_ops.pool"
    return custom_op.load_library(model_build / name)


XS = np.arange(1000, dtype=np.float32)


def wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


def c_mod(a, m):
    """C's % (the sign of the dividend)."""
    r = abs(a) % m
    return -r if a < 0 else r


def test_parity_names_the_first_differing_element_of_a_long_counter(model):
    host = c_mod(sum(i * 100000 for i in range(1000)), 1000003)
    device = c_mod(wrap32(sum(i * 100000 for i in range(1000))), 1000003)
    assert host != device
    with pytest.raises(CheckError) as e:
        model.ops["long_sum"](XS, check="parity")
    f = e.value.findings
    assert [x["check"] for x in f] == ["parity"], f
    msg = f[0]["message"]
    assert "element [0]" in msg and "the output" in msg, msg
    mine, theirs = (host, device) if model.path.endswith(".so") else (device, host)
    assert f"is {float(mine)!r} on " in msg and f", {float(theirs)!r} on " in msg, msg
    assert "class: data model" in msg, msg
    # The output is this backend's all the same.
    np.testing.assert_array_equal(e.value.result, [mine])


def test_parity_names_what_core_0_printed_differently(model):
    with pytest.raises(CheckError) as e:
        model.ops["sizes"](XS, check="parity")
    [f] = e.value.findings
    assert f["tensor"] == "stdout", f
    assert "long 8 size_t 8 pointer 8" in f["message"] and "long 4 size_t 4 pointer 4" in f["message"], f


def test_parity_is_silent_where_the_builds_agree(model):
    np.testing.assert_array_equal(model.ops["scale"](XS, check="parity"), XS * 0.5 + 1)
    np.testing.assert_array_equal(model.ops["scale"](XS, check="all"), XS * 0.5 + 1)


def test_a_fault_only_one_build_gives_says_so(model):
    if model.path.endswith(".so"):
        with pytest.raises(DeviceFault) as e:
            model.ops["folded"](XS, check="parity")
        msg = str(e.value)
        assert "unaligned load/store" in msg, msg
        assert "check parity: the launch completes on Xtensa cores" in msg and "class: alignment" in msg, msg
    else:
        with pytest.raises(CheckError) as e:
            model.ops["folded"](XS, check="parity")
        [f] = e.value.findings
        assert "completes on Xtensa cores (the device build) but faults on host cores (class: alignment)" in f["message"], f


@pytest.mark.skipif(shutil.which("xtensa-lx106-elf-g++") is None,
                    reason="UNSUPPORTED: xtensa-lx106-elf-g++ is not installed")
def test_a_load_that_asks_for_parity_builds_the_pool_image_too(tmp_path):
    """custom_op.load(..., check="parity") on host cores builds lib{name}.pool beside the
    host build ("building it when asked"), and every call compares with it."""
    (tmp_path / "k.cpp").write_text(MODEL)
    (tmp_path / "s.cpp").write_text(MODEL_SHAPES)
    lib = custom_op.load("model_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                         build_directory=tmp_path / "out", isa="host", data_model="host",
                         check="parity")
    assert lib.path.endswith("libmodel_ops.so"), lib.path
    assert (tmp_path / "out" / "libmodel_ops.pool").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckWarning)
        # The builds agree here; the comparison ran (no "not checked" warning).
        np.testing.assert_array_equal(lib.ops["scale"](XS), XS * 0.5 + 1)
        # In the host's data model the `long` counter differs from the device build's.
        with pytest.raises(CheckError, match=r"class: data model"):
            lib.ops["long_sum"](XS)


def test_parity_without_the_other_build_is_a_warning_not_silence(tmp_path):
    (tmp_path / "k.cpp").write_text(MODEL)
    (tmp_path / "s.cpp").write_text(MODEL_SHAPES)
    lib = custom_op.load("model_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                         build_directory=tmp_path / "out", isa="host")
    with pytest.warns(CheckWarning, match=r"parity: not checked: no .*libmodel_ops\.pool beside"):
        np.testing.assert_array_equal(lib.ops["scale"](XS, check="parity"), XS * 0.5 + 1)


DIVIDE = r"""
#include <limits.h>
#include <torch/torch.h>
torch::Tensor divide(const torch::Tensor &x, int64_t d) {
    auto in = x.accessor<float, 1>();
    int a = INT_MIN + (int)in[0], b = (int)d;
    long long wa = LLONG_MIN + (long long)in[0], wb = d;
    torch::Tensor y = torch::empty({4}, torch::kInt);
    auto o = y.accessor<int, 1>();
    o[0] = a / b;
    o[1] = a % b;
    long long q = wa / wb;
    o[2] = (int)(q >> 32);
    o[3] = (int)(wa % wb);
    return y;
}
"""
DIVIDE_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor four(torch::Tensor x, int64_t d) { return torch::empty({4}, torch::kInt); }
NEURON_LIBRARY(divide_ops, m) { m.def("divide", &four, "divide"); }
"""


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_int_min_over_minus_one_is_the_devices_int_min_and_zero_still_traps(tmp_path, isa):
    (tmp_path / "k.cpp").write_text(DIVIDE)
    (tmp_path / "s.cpp").write_text(DIVIDE_SHAPE)
    lib = custom_op.load("divide_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"],
                         build_directory=tmp_path / "out", isa=isa)
    x = np.zeros(4, np.float32)
    # The quotient does not fit: a Pool core gives INT_MIN (LLONG_MIN) and remainder 0.
    np.testing.assert_array_equal(lib.ops["divide"](x, -1), [-2**31, 0, -2**31, 0])
    np.testing.assert_array_equal(lib.ops["divide"](x, 2), [-2**30, 0, -2**30, 0])
    with pytest.raises(DeviceFault, match="divi"):
        lib.ops["divide"](x, 0)


CORNERS = r"""
#include <stdint.h>
#include <torch/torch.h>
torch::Tensor corners(const torch::Tensor &x, int64_t which) {
    auto in = x.accessor<float, 1>();
    torch::Tensor y = torch::empty({2}, torch::kInt);
    auto o = y.accessor<int, 1>();
    o[0] = 0;
    o[1] = 0;
    if (which == 1) o[0] = (int)(in[0] / in[0]);
    if (which == 2) o[0] = (uint8_t)(-in[1]);
    if (which == 3) o[0] = __builtin_clz((unsigned)in[0]);
    if (which == 4) o[0] = (int)(in[1] * 2.5f);
    return y;
}
"""
CORNERS_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor two(torch::Tensor x, int64_t w) { return torch::empty({2}, torch::kInt); }
NEURON_LIBRARY(corner_ops, m) { m.def("corners", &two, "corners"); }
"""


@pytest.fixture(scope="module")
def corners(tmp_path_factory):
    out = build_both(tmp_path_factory.mktemp("corners"), "corner_ops", CORNERS, CORNERS_SHAPE)
    return (custom_op.load_library(out / "libcorner_ops.so"),
            custom_op.load_library(out / "libcorner_ops.pool"))


@pytest.mark.parametrize("which, line, what", [
    (1, "if (which == 1)", "float-to-integer conversion of NaN"),
    (2, "if (which == 2)", "float-to-integer conversion of NaN or of a value outside"),
    (3, "if (which == 3)", "__builtin_clz(0)"),
])
def test_checks_name_arithmetic_the_device_answers_otherwise_with_its_line(corners, which, line, what):
    host, device = corners
    x = np.array([0.0, 1.0], np.float32)
    number = 1 + CORNERS.splitlines().index(next(l for l in CORNERS.splitlines() if l.strip().startswith(line)))
    with pytest.raises(CheckError) as e:
        host.ops["corners"](x, which, check=True)
    [f] = e.value.findings
    assert f["check"] == "rules" and what in f["message"], f
    assert re.search(rf"k\.cpp:{number}:\d+", f["message"]), (number, f)
    # Unchecked, the call returns: a conversion with the device's value (D117), clz(0) with
    # x86's; the device build's run has nothing to say.
    unchecked = host.ops["corners"](x, which)
    on_device = device.ops["corners"](x, which, check=True)
    if which in (1, 2):
        np.testing.assert_array_equal(unchecked, on_device)


def test_a_conversion_in_range_is_not_named(corners):
    host, _ = corners
    np.testing.assert_array_equal(host.ops["corners"](np.array([0.0, 1.0], np.float32), 4, check=True), [2, 0])


DATA_MODEL = r"""
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <new>
#include <torch/torch.h>

static int which(int) { return 4; }
static int which(signed char) { return 1; }

// What the data model says of its types, as an op author's code sees it.
torch::Tensor model(const torch::Tensor &x) {
    torch::Tensor y = torch::empty({12}, torch::kInt);
    auto o = y.accessor<int32_t, 1>();
    int_fast8_t f8 = 0;
    o[0] = (int)sizeof(int_fast8_t);
    o[1] = (int)sizeof(uint_fast8_t);
    o[2] = INT_FAST8_MAX == 0x7fffffff;
    o[3] = (int)__STDCPP_DEFAULT_NEW_ALIGNMENT__;
    o[4] = (int)alignof(max_align_t);
    o[5] = (int)sizeof(long);
    o[6] = (int)sizeof(void *);
    o[7] = (int)sizeof(long double);
    o[8] = (int)alignof(long long);
    o[9] = CHAR_MIN == 0;
    o[10] = (int)sizeof(wchar_t);
    o[11] = which(f8);
    return y;
}
"""
DATA_MODEL_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty({12}, torch::kInt); }
NEURON_LIBRARY(data_model, m) { m.def("model", &s, "model"); }
"""


def test_the_data_model_says_the_same_of_its_types_on_both_backends(tmp_path):
    """int_fast8_t (an overload sees it), new's default alignment, max_align_t and the
    other sizes are the device's on host cores too, with checks off."""
    (tmp_path / "m.cpp").write_text(DATA_MODEL)
    (tmp_path / "s.cpp").write_text(DATA_MODEL_SHAPE)
    custom_op.load("data_model", [tmp_path / "m.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path, isa="xtensa")
    x = np.zeros(1, np.float32)
    got = {isa: custom_op.load_library(tmp_path / "libdata_model.so", isa=isa).ops["model"](x, check=False)
           for isa in ("host", "xtensa")}
    np.testing.assert_array_equal(got["host"], got["xtensa"])
    assert list(got["host"][:5]) == [4, 4, 1, 8, 8] and got["host"][11] == 4, got
