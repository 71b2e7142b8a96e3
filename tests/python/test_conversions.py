"""Float-to-integer conversions of NaN and out-of-range values give the device's values on
host cores (D117): a Pool core saturates (NaN to 0, below the range to its minimum, 0 for
unsigned types, above it to its maximum; narrower types take the low bits of the 32-bit
result), x86 gives its "integer indefinite". Compared element by element with Xtensa cores,
for float and double to every integer width, with checks off; checking mode still names
the conversion (a `rules` finding)."""
import shutil
import subprocess

import numpy as np
import pytest

from conftest import NRT_POOL, run

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="UNSUPPORTED: no g++")

KERNEL = r"""
#include <torch/torch.h>
#include <stdint.h>
template <typename T> __attribute__((noinline)) int64_t conv(volatile double d, int from_float) {
    if (from_float) { volatile float f = (float)d; return (int64_t)(T)f; }
    return (int64_t)(T)d;
}
torch::Tensor cvt(const torch::Tensor &x) {
    int64_t n = x.numel();
    torch::Tensor y = torch::empty({n * 16}, torch::kLong);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<int64_t, 1>();
    for (int64_t i = 0; i < n; i++) {
        double d = (double)in[i];
        for (int f = 0; f < 2; f++) {
            int64_t *o = &out[i * 16 + f * 8];
            o[0] = conv<int32_t>(d, f);
            o[1] = conv<uint32_t>(d, f);
            o[2] = conv<int64_t>(d, f);
            o[3] = conv<uint64_t>(d, f);
            o[4] = conv<int16_t>(d, f);
            o[5] = conv<uint16_t>(d, f);
            o[6] = conv<int8_t>(d, f);
            o[7] = conv<uint8_t>(d, f);
        }
    }
    return y;
}
// A plain conversion in a loop (what -O3 would vectorise) and one of a long double.
torch::Tensor loop(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kInt);
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<int32_t, 1>();
    for (int64_t i = 0; i < x.numel(); i++) out[i] = (int32_t)in[i] + (int32_t)(long double)in[i] / 2;
    return y;
}
"""
SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty({x.numel() * 16}, torch::kLong); }
torch::Tensor l(torch::Tensor x) { return torch::empty(x.sizes(), torch::kInt); }
NEURON_LIBRARY(cv_ops, m) { m.def("cvt", &s, "cvt"); m.def("loop", &l, "loop"); }
"""
VALUES = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e10, -1e10, 3e9, -1.5, 2.0 ** 63, -2.0 ** 65, 1e20,
                   70000.7, -40000.3, 300.9, -200.2, 4294967296.0, 2147483648.0, -2147483904.0, -0.5, 1.8e19,
                   0.0, 1.0, 65535.9, 255.5], np.float32)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("conversions")
    (d / "k.cpp").write_text(KERNEL)
    (d / "s.cpp").write_text(SHAPE)
    run(NRT_POOL, "build", "--name", "cv_ops", "--compute", d / "k.cpp", "--shape", d / "s.cpp",
        "--build-directory", d, "--device-image")
    np.save(d / "x.npy", VALUES)
    np.save(d / "big.npy", np.tile(VALUES, 64))
    return d


def launch(d, lib, op, x, *extra):
    out = d / f"y-{lib}-{op}-{x}.npy"
    p = subprocess.run([str(NRT_POOL), "run", str(d / lib), f"cv_ops::{op}", "--arg", str(d / x), "--out", str(out),
                        *extra], capture_output=True, text=True)
    return p, out


@pytest.mark.parametrize("op,x", [("cvt", "x.npy"), ("loop", "big.npy")])
def test_host_cores_give_the_devices_values_with_checks_off(built, op, x):
    outs = {}
    for lib in ["libcv_ops.pool", "libcv_ops.so"]:
        p, out = launch(built, lib, op, x)
        assert p.returncode == 0, p.stderr
        outs[lib] = np.load(out)
    device, host = outs["libcv_ops.pool"], outs["libcv_ops.so"]
    assert (device != host).sum() == 0, np.argwhere(device != host)[:8]
    if op == "cvt":
        table = device.reshape(-1, 2, 8)
        nan, big = table[0], table[4]
        assert (nan == 0).all(), nan                       # NaN: 0 for every width
        assert big[0, 0] == 2 ** 31 - 1 and big[0, 1] == 2 ** 32 - 1  # 1e10: saturated
        assert (table[7, :, 1] == 0).all()                 # -1.5 to unsigned: 0


def test_checking_mode_still_names_the_conversion(built):
    p, _ = launch(built, "libcv_ops.so", "cvt", "x.npy", "--check")
    assert p.returncode == 4, p.stderr
    assert "float-to-integer conversion" in p.stderr, p.stderr
