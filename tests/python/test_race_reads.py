"""The race check sees reads on Xtensa cores (D101): a kernel whose core reads
output elements another core writes in the same launch is a race naming both cores, the
tensor, the elements and the source line of the read; its twin that reads the input
instead checks clean; host cores, which cannot see reads, say so and name the way to the
Xtensa check."""
import re
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("xtensa-lx106-elf-g++") is None,
                                reason="UNSUPPORTED: xtensa-lx106-elf-g++ is not installed")

KERNELS = r"""
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// Each core writes its share of the output, then adds its neighbour's first element of
// `source` to each of its own: racy when the source is the output (the neighbour writes
// it in the same launch), clean when it is the input.
static void share(const torch::Tensor &x, torch::Tensor &y, bool from_output) {
    size_t n = x.numel(), cores = get_cpu_count(), me = get_cpu_id();
    size_t part = n / cores, first = part * me;
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    for (size_t i = first; i < first + part; i++) out[i] = in[i] * 2.0f;  // @write
    size_t next = (me + 1) % cores * part;
    float other = from_output ? out[next] : in[next];  // @read
    for (size_t i = first; i < first + part; i++) out[i] = out[i] + other * 0.0f;
}
torch::Tensor racy(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    share(x, y, true);
    return y;
}
torch::Tensor clean(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    share(x, y, false);
    return y;
}
"""
SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(reads, m) {
    m.def("racy", &s, "racy");
    m.def("clean", &s, "clean");
}
"""
def line_of(mark):
    return next(i + 1 for i, l in enumerate(KERNELS.lstrip("\n").splitlines()) if mark in l)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from gpsimd_open import custom_op

    d = tmp_path_factory.mktemp("reads")
    (d / "k.cpp").write_text(KERNELS.lstrip("\n"))
    (d / "s.cpp").write_text(SHAPE)
    custom_op.load("reads", [d / "k.cpp"], [d / "s.cpp"], build_directory=d, multicore=True, isa="xtensa")
    return d


def x():
    return np.arange(64, dtype=np.float32)


def test_a_read_of_what_another_core_writes_is_a_race_on_xtensa_cores(built):
    from gpsimd_open import CheckError, custom_op

    lib = custom_op.load_library(built / "libreads.pool")
    with pytest.raises(CheckError) as e:
        lib.ops["racy"](x(), check="race")
    races = [f for f in e.value.findings if f["check"] == "race"]
    # Core c reads element 8 * ((c + 1) % 8), which core c + 1 writes: eight pairs.
    pairs = sorted(tuple(f["cores"]) for f in races)
    assert pairs == [(c, (c + 1) % 8) for c in range(8)], races
    first = next(f for f in races if f["cores"] == [0, 1])
    assert [tuple(r) for r in first["ranges"]] == [(8, 9)], first
    assert "the output" in first["message"], first
    m = first["message"]
    assert re.search(rf"read by core 0 at \S*k\.cpp:{line_of('@read')} in share", m), m
    assert re.search(rf"written by core 1 at \S*k\.cpp:{line_of('@write')} in share", m), m


def test_its_twin_reading_the_input_checks_clean_on_xtensa_cores(built):
    from gpsimd_open import custom_op

    lib = custom_op.load_library(built / "libreads.pool")
    y = lib.ops["clean"](x(), check="race")
    np.testing.assert_array_equal(y, x() * 2)


def test_host_cores_say_they_do_not_see_reads_and_name_the_xtensa_check(built):
    from gpsimd_open import CheckWarning, _check, custom_op

    _check._SAID.clear()  # said once a process: this worker may have heard it already
    lib = custom_op.load_library(built / "libreads.so", isa="host")
    with pytest.warns(CheckWarning) as w:
        y = lib.ops["clean"](x(), check="race")
    np.testing.assert_array_equal(y, x() * 2)
    text = " ".join(str(m.message) for m in w)
    assert "do not see reads" in text and "--isa xtensa" in text, text
