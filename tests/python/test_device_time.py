"""How long the op would take on the device (D100): a profile on Xtensa cores
estimates the launch's time on a trn1 Pool engine, as a band with what it rests on.

Two kinds of check, named as such. Regression guards: the model is fitted to AWS's
customop_mlp inference ladder (ReLU over a 32x4096 float tensor, our own kernels in the
tutorial's shape), so those kernels agree with it by construction; the guards only keep
them there as the runtime and compiler change. Held out: AWS's training tutorial (117.47
it/s with element-wise ReLU forward and backward on 32x120 and 32x84) bounds the four
launches of a step, a figure the fit never saw. And kernels outside the fitted shape
(arithmetic-heavy, copy-heavy) are flagged with a wide band, not priced with false
confidence. Host cores' profiles say they are no estimate."""
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import NRT_POOL
from gpsimd_open import custom_op

pytestmark = pytest.mark.skipif(shutil.which("xtensa-lx106-elf-g++") is None,
                                reason="UNSUPPORTED: xtensa-lx106-elf-g++ is not installed")

# (1/8.10 - 1/220.74) s per iteration over the 196,608 ReLU elements of one iteration
# (32x4096 + 32x2048), for the 131,072 of the 32x4096 layer.
ELEMENTWISE_MS = (1 / 8.098649744235592 - 1 / 220.73800131604054) * 131072 / 196608 * 1e3

ELEMENTWISE = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    int64_t rows = t_in.sizes()[0], cols = t_in.sizes()[1];
    torch::Tensor t_out = torch::zeros({rows, cols}, torch::kFloat);
    auto in = t_in.accessor<float, 2>();
    auto out = t_out.accessor<float, 2>();
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            out[i][j] = in[i][j] > 0.0 ? in[i][j] : 0.0;
    return t_out;
}
"""
TCM = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    size_t total = t_in.numel();
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);
    const size_t chunk = 1024;
    float *buf = (float *)torch::neuron::tcm_malloc(sizeof(float) * chunk);
    if (buf) {
        auto src = t_in.tcm_accessor();
        auto dst = t_out.tcm_accessor();
        for (size_t at = 0; at < total; at += chunk) {
            size_t n = total - at < chunk ? total - at : chunk;
            src.tensor_to_tcm<float>(buf, at, n);
            for (size_t k = 0; k < n; k++) buf[k] = buf[k] > 0.0f ? buf[k] : 0.0f;
            dst.tcm_to_tensor<float>(buf, at, n);
        }
    }
    torch::neuron::tcm_free(buf);
    return t_out;
}
"""
MULTICORE = r"""
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    size_t total = t_in.numel();
    torch::Tensor t_out = get_dst_tensor();
    size_t cores = get_cpu_count(), me = get_cpu_id();
    size_t share = total / cores, first = share * me;
    if (me == cores - 1) share = total - first;
    const size_t chunk = 1024;
    float *buf = (float *)torch::neuron::tcm_malloc(sizeof(float) * chunk);
    if (buf) {
        auto src = t_in.tcm_accessor();
        auto dst = t_out.tcm_accessor();
        for (size_t at = 0; at < share; at += chunk) {
            size_t n = share - at < chunk ? share - at : chunk;
            src.tensor_to_tcm<float>(buf, first + at, n);
            for (size_t k = 0; k < n; k++) buf[k] = buf[k] > 0.0f ? buf[k] : 0.0f;
            dst.tcm_to_tensor<float>(buf, first + at, n);
        }
    }
    torch::neuron::tcm_free(buf);
    return t_out;
}
"""
SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor relu_shape(torch::Tensor t_in) { return torch::zeros(t_in.sizes(), torch::kFloat); }
NEURON_LIBRARY(tutorial_ops, m) { m.def("relu_forward", &relu_shape, "relu_forward"); }
"""


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    out = {}
    for name, src, multicore in [("elementwise", ELEMENTWISE, False), ("tcm", TCM, False),
                                 ("multicore", MULTICORE, True)]:
        d = tmp_path_factory.mktemp(name)
        (d / "relu.cpp").write_text(src)
        (d / "shape.cpp").write_text(SHAPE)
        lib = custom_op.load(name="tutorial_ops", compute_srcs=[str(d / "relu.cpp")],
                             shape_srcs=[str(d / "shape.cpp")], build_directory=str(d),
                             multicore=multicore, isa="xtensa")
        out[name] = (d, lib)
    return out


def x():
    # fc1's output in the tutorial: about half positive.
    return np.random.default_rng(44).standard_normal((32, 4096)).astype(np.float32)


def estimate(builds, name):
    d, lib = builds[name]
    y, prof = lib.ops["relu_forward"](x(), profile=True)
    np.testing.assert_array_equal(y, np.maximum(x(), 0))
    e = prof["estimate"]
    assert e is not None, prof["report"]
    assert "an estimate, not a measurement" in prof["report"] and e["fitted_to"] in prof["report"]
    assert e["low_seconds"] <= e["seconds"] <= e["high_seconds"], e
    return e


def test_regression_guard_the_elementwise_fit_point_stays_inside_its_band(builds):
    e = estimate(builds, "elementwise")
    ms = e["seconds"] * 1e3
    assert abs(ms - ELEMENTWISE_MS) <= 0.3 * ELEMENTWISE_MS, (ms, ELEMENTWISE_MS)
    assert e["low_seconds"] * 1e3 <= ELEMENTWISE_MS <= e["high_seconds"] * 1e3, e
    # One core on element-wise accessors: the fitted regime, nothing flagged.
    assert e["regime"] == [], e["regime"]
    # The time is in the accesses, and the report says so by function.
    assert e["functions"][0][0] == "[element-wise accessor accesses]", e["functions"][:3]


def test_regression_guard_the_tcm_fit_point_and_eight_cores_less_than_one(builds):
    one = estimate(builds, "tcm")["seconds"]
    eight = estimate(builds, "multicore")
    assert one <= 1.0e-3, one
    assert len(eight["cores"]) == 8 and eight["seconds"] < one, (eight["seconds"], one)
    elementwise = estimate(builds, "elementwise")["seconds"]
    assert elementwise > 20 * one, (elementwise, one)


def test_the_cli_prints_the_estimate_and_host_cores_say_they_give_none(builds, tmp_path):
    d, _ = builds["elementwise"]
    np.save(tmp_path / "x.npy", x())
    for lib, isa in [(d / "libtutorial_ops.pool", "xtensa"), (d / "libtutorial_ops.so", "host")]:
        p = subprocess.run([str(NRT_POOL), "run", str(lib), "tutorial_ops::relu_forward", "--arg",
                            str(tmp_path / "x.npy"), "--out", str(tmp_path / "y.npy"), "--profile"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        if isa == "xtensa":
            m = re.search(r"estimated time on a trn1 Pool engine: ~(\d+(?:\.\d)?) ms, between ([\d.]+) ms and "
                          r"([\d.]+) ms \(fitted to AWS's customop_mlp ReLU ladder on trn1: .*an estimate, not a measurement",
                          p.stderr)
            assert m and abs(float(m.group(1)) - ELEMENTWISE_MS) <= 0.3 * ELEMENTWISE_MS, p.stderr
            # Two significant figures: 79 ms, not 79.301 ms.
            assert len(m.group(1).replace(".", "").lstrip("0")) <= 2, m.group(1)
            assert re.search(r"core 0: ~[\d.]+ ms \([\d.]+ ms\.\.[\d.]+ ms\) = instructions .* \+ \d+ "
                             r"element-wise accesses", p.stderr), p.stderr
        else:
            assert "not an estimate of the device's time" in p.stderr, p.stderr
            assert "estimated time" not in p.stderr, p.stderr


# AWS's training tutorial for the same sample (customop_mlp, training on trn1, batch 32,
# hidden layers [120, 84], the ReLU's forward and backward as element-wise accessor
# kernels): 117.47 iterations a second. A step's four ReLU launches take part of it.
TRAINING_STEP_MS = 1e3 / 117.47

FORWARD = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &x) {
    torch::Tensor y = torch::zeros(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 2>();
    auto out = y.accessor<float, 2>();
    for (int64_t r = 0; r < x.sizes()[0]; r++)
        for (int64_t c = 0; c < x.sizes()[1]; c++)
            out[r][c] = in[r][c] > 0.0 ? in[r][c] : 0.0;
    return y;
}
torch::Tensor relu_backward(const torch::Tensor &grad, const torch::Tensor &x) {
    torch::Tensor y = torch::zeros(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 2>();
    auto g = grad.accessor<float, 2>();
    auto out = y.accessor<float, 2>();
    for (int64_t r = 0; r < x.sizes()[0]; r++)
        for (int64_t c = 0; c < x.sizes()[1]; c++)
            out[r][c] = in[r][c] > 0.0 ? g[r][c] : 0.0;
    return y;
}
"""
TRAINING_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor fwd(torch::Tensor x) { return torch::zeros(x.sizes(), torch::kFloat); }
torch::Tensor bwd(torch::Tensor g, torch::Tensor x) { return torch::zeros(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(train_ops, m) {
    m.def("relu_forward", &fwd, "relu_forward");
    m.def("relu_backward", &bwd, "relu_backward");
}
"""


def test_held_out_the_training_tutorials_step_bounds_its_four_relu_launches(tmp_path):
    """Held out (the fit never saw it): a training step at 117.47 it/s takes 8.5 ms, and its
    four element-wise ReLU launches are part of it, so the estimate for them must allow
    less. The central estimate is reported against the bound in the assertion message."""
    (tmp_path / "relu.cpp").write_text(FORWARD)
    (tmp_path / "shape.cpp").write_text(TRAINING_SHAPE)
    lib = custom_op.load(name="train_ops", compute_srcs=[str(tmp_path / "relu.cpp")],
                         shape_srcs=[str(tmp_path / "shape.cpp")], build_directory=str(tmp_path),
                         isa="xtensa")
    rng = np.random.default_rng(117)
    low = central = 0.0
    for width in (120, 84):
        x = rng.standard_normal((32, width)).astype(np.float32)
        g = rng.standard_normal((32, width)).astype(np.float32)
        for op, args, want in [("relu_forward", (x,), np.maximum(x, 0)),
                               ("relu_backward", (g, x), np.where(x > 0, g, 0).astype(np.float32))]:
            y, prof = lib.ops[op](*args, profile=True)
            np.testing.assert_array_equal(y, want)
            e = prof["estimate"]
            low += e["low_seconds"] * 1e3
            central += e["seconds"] * 1e3
    assert low <= TRAINING_STEP_MS, (low, central, TRAINING_STEP_MS)
    # Recorded for docs/device-time.md: where the central estimate falls against the bound.
    print(f"held out: four ReLU launches estimated {central:.2f} ms (low end {low:.2f} ms), "
          f"the step takes {TRAINING_STEP_MS:.2f} ms")


ARITHMETIC = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);
    auto out = t_out.accessor<float, 2>();
    float v = 1.0f;
    for (int i = 0; i < 200000; i++) v = v * 1.0000001f + 1e-7f;  // a dependent chain
    out[0][0] = v;
    return t_out;
}
"""
COPYING = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);
    float *buf = (float *)torch::neuron::tcm_malloc(sizeof(float) * 4096);
    auto src = t_in.tcm_accessor();
    auto dst = t_out.tcm_accessor();
    for (int rep = 0; rep < 16; rep++)
        for (size_t at = 0; at < (size_t)t_in.numel(); at += 4096) {
            src.tensor_to_tcm<float>(buf, at, 4096);
            dst.tcm_to_tensor<float>(buf, at, 4096);
        }
    torch::neuron::tcm_free(buf);
    return t_out;
}
"""


@pytest.mark.parametrize("kind,src,flag", [("arithmetic", ARITHMETIC, "instruction-bound"),
                                           ("copying", COPYING, "copy-bound")])
def test_kernels_outside_the_fitted_shape_are_flagged_with_a_wide_band(tmp_path, kind, src, flag):
    (tmp_path / "relu.cpp").write_text(src)
    (tmp_path / "shape.cpp").write_text(SHAPE)
    lib = custom_op.load(name="tutorial_ops", compute_srcs=[str(tmp_path / "relu.cpp")],
                         shape_srcs=[str(tmp_path / "shape.cpp")], build_directory=str(tmp_path),
                         isa="xtensa")
    x = np.ones((1, 4) if kind == "arithmetic" else (32, 4096), np.float32)
    _, prof = lib.ops["relu_forward"](x, profile=True)
    e = prof["estimate"]
    assert any(r.startswith(flag) for r in e["regime"]), e["regime"]
    assert f"outside the fitted regime: {flag}" in prof["report"], prof["report"]
    assert e["high_seconds"] / e["low_seconds"] >= 3, e


STACKED = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &t_in) {
    torch::Tensor t_out = torch::zeros(t_in.sizes(), torch::kFloat);
    auto in = t_in.accessor<float, 2>();
    auto out = t_out.accessor<float, 2>();
    volatile float local[LOCALS];
    for (int i = 0; i < LOCALS; i++) local[i] = in[0][i % 4];
    out[0][0] = local[LOCALS - 1];
    return t_out;
}
"""


@pytest.mark.full
def test_a_stack_in_hbm_is_flagged_and_priced_by_its_accesses(tmp_path):
    """A kernel whose STACK_SIZE does not fit the local stack has its locals in HBM: the
    profile counts its loads and stores there (D121), the estimate prices each as an HBM
    round trip and says it lies outside the fitted regime; one on the local stack is
    neither flagged nor charged."""
    (tmp_path / "relu.cpp").write_text(STACKED)
    (tmp_path / "shape.cpp").write_text(SHAPE)
    runs = {}
    # 8 and 10 KiB of locals with STACK_SIZE=12000 (an HBM stack); 64 bytes on the local stack.
    for name, flags in (("hbm", ["-DLOCALS=2048", "-DSTACK_SIZE=12000"]),
                        ("hbm-more", ["-DLOCALS=2560", "-DSTACK_SIZE=12000"]), ("local", ["-DLOCALS=16"])):
        lib = custom_op.load(name="tutorial_ops", compute_srcs=[str(tmp_path / "relu.cpp")],
                             shape_srcs=[str(tmp_path / "shape.cpp")],
                             build_directory=str(tmp_path / name), isa="xtensa", extra_cflags=flags)
        _, prof = lib.ops["relu_forward"](np.ones((1, 4), np.float32), profile=True)
        runs[name] = prof
        if name != "local":
            assert "outside the fitted regime: stack in HBM (STACK_SIZE=12000" in prof["report"], prof["report"]
            assert "accesses to the stack in HBM" in prof["report"], prof["report"]
    regimes = {k: p["estimate"]["regime"] for k, p in runs.items()}
    assert any(r.startswith("stack in HBM") for r in regimes["hbm"]), regimes
    assert not any(r.startswith("stack in HBM") for r in regimes["local"]), regimes
    counted = {k: p["cores"][0]["hbm_stack_accesses"] for k, p in runs.items()}
    # Each volatile local is stored once: at least that many accesses, and 512 more locals
    # at least 512 more.
    assert counted["hbm"] >= 2048 and counted["hbm-more"] - counted["hbm"] >= 512, counted
    assert counted["local"] == 0, counted
    # Priced as HBM round trips, at the element-wise access's price.
    e = runs["hbm"]["estimate"]["cores"][0]
    assert e["stack_s"] == pytest.approx(counted["hbm"] * 322.0 / 1.4e9), e
    assert runs["local"]["estimate"]["cores"][0]["stack_s"] == 0


def copy_trace(lib, tmp_path):
    """A profiled launch's copies (the runtime's log, D120), its counts, the trace's copy
    and compute spans in order, and its kernel span; the steps checked to fill the kernel
    one after another, as the core's estimate."""
    import json

    trace = tmp_path / "copies.json"
    y, prof = lib.ops["relu_forward"](x(), profile=True, trace=trace)
    np.testing.assert_array_equal(y, np.maximum(x(), 0))
    (core,) = prof["cores"]
    events = json.loads(trace.read_text())["traceEvents"]
    steps = sorted((e for e in events if e["ph"] == "X" and e["cat"] in ("copy", "compute")),
                   key=lambda e: e["ts"])
    (kernel,) = [e for e in events if e.get("cat") == "kernel"]
    for before, after in zip(steps, steps[1:]):
        assert abs(before["ts"] + before["dur"] - after["ts"]) < 1e-6, (before, after)
    assert abs(steps[-1]["ts"] + steps[-1]["dur"] - kernel["dur"]) < 1e-6
    assert abs(kernel["dur"] - prof["estimate"]["cores"][0]["seconds"] * 1e6) < 1e-6
    a = core["accesses"]
    copies = [e for e in steps if e["cat"] == "copy"]
    moved = sum(e["args"]["bytes"] * e["args"].get("copies", 1) if e["args"].get("logged", True)
                else e["args"]["bytes"] for e in copies)
    assert moved == a["bytes_in"] + a["bytes_out"], (moved, a)
    return core, copies


def test_each_copy_is_on_the_trace_where_it_began(builds, tmp_path):
    """The 1-core TCM ReLU: torch::zeros fills its output with 1024 like copies of 512
    bytes (one run, one span), then each of 128 chunks is copied in, the loop runs, and it
    is copied out: each copy a span where it began, with its bytes, the loop between."""
    _, lib = builds["tcm"]
    core, copies = copy_trace(lib, tmp_path)
    logged = core["copies"]
    assert [(c["direction"], c["bytes"], c["copies"]) for c in logged] == \
        [("out", 512, 1024)] + [("in", 4096, 1), ("out", 4096, 1)] * 128
    assert core["copies_unlogged"] == 0
    # Each chunk's loop (1024 elements) runs between its copy in and its copy out.
    assert all(c["instructions_before"] > 1024 for c in logged[2::2]), logged[2]
    assert [e["name"] for e in copies[:3]] == \
        ["1024 copies out: 512 B each", "copy in: 4096 B", "copy out: 4096 B"]
    assert [e["args"]["direction"] for e in copies] == ["out"] + ["in", "out"] * 128


SMALL_CHUNKS = TCM.replace("const size_t chunk = 1024;", "const size_t chunk = 32;")


@pytest.mark.full
def test_copies_past_the_log_are_one_span_that_says_so(tmp_path):
    """4096 chunks of 32 floats make 8193 runs of copies: the log holds the first 1024
    (D120), the rest are one span at the end with their count and bytes."""
    (tmp_path / "relu.cpp").write_text(SMALL_CHUNKS)
    (tmp_path / "shape.cpp").write_text(SHAPE)
    lib = custom_op.load(name="tutorial_ops", compute_srcs=[str(tmp_path / "relu.cpp")],
                         shape_srcs=[str(tmp_path / "shape.cpp")], build_directory=str(tmp_path),
                         isa="xtensa")
    core, copies = copy_trace(lib, tmp_path)
    assert len(core["copies"]) == 1024
    a = core["accesses"]
    unlogged = a["copies_in"] + a["copies_out"] - sum(c["copies"] for c in core["copies"])
    assert core["copies_unlogged"] == unlogged > 0
    assert len(copies) == 1025
    last = copies[-1]
    assert last["args"]["logged"] is False and last["args"]["copies"] == unlogged
    assert "after the log filled" in last["name"]


def test_tensors_in_sbuf_are_flagged(builds, tmp_path):
    """An argument in SBUF (`x.npy@sbuf`) is priced as HBM's: the report says so."""
    d, _ = builds["tcm"]
    np.save(tmp_path / "x.npy", x())
    for arg, flagged in [("x.npy@sbuf", True), ("x.npy", False)]:
        p = subprocess.run([str(NRT_POOL), "run", str(d / "libtutorial_ops.pool"), "tutorial_ops::relu_forward",
                            "--arg", str(tmp_path / arg), "--out", str(tmp_path / "y.npy"), "--profile"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.maximum(x(), 0))
        said = "1 tensor(s) in SBUF: their copies and accesses are priced as HBM's" in p.stderr
        assert said == flagged, p.stderr
