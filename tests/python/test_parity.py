"""Host cores compute what the device computes, or fault as it does (issue #40).

Each op is ordinary C++ an op author writes, run on host cores and on Xtensa cores (the
device build) with checks off; both must give the device's answer: plain `char` is
unsigned on a Pool core, and a 2- or 4-byte access through a misaligned pointer faults
there (8-byte values move as two words), naming the source line (D92)."""
import re

import numpy as np
import pytest

from gpsimd_open import DeviceFault, custom_op

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
