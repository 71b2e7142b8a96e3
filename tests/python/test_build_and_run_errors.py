"""Mistakes an op author makes with the Custom C++ Operators API, and what they get back:
a build that fails naming both sides, or a run that fails with a clear message and no
output file."""
import pathlib

import numpy as np
import pytest

from conftest import NRT_POOL, ROOT, run
from gpsimd_open import custom_op

KERNEL = """
#include <torch/torch.h>
torch::Tensor negate(const torch::Tensor &x) {
    torch::Tensor out = torch::zeros(x.sizes(), torch::kFloat);
    auto in = x.accessor<float, 1>();
    auto o = out.accessor<float, 1>();
    for (int64_t i = 0; i < x.numel(); i++) o[i] = -in[i];
    return out;
}
"""

SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor negate_shape(torch::Tensor x) { return torch::zeros(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(my_ops, m) { m.def("negate", &negate_shape, "%s"); }
"""


def build(tmp_path, compute, shape, name="my_ops", check=False, *extra):
    (tmp_path / "k.cpp").write_text(compute)
    (tmp_path / "s.cpp").write_text(shape)
    out = tmp_path / "out"
    p = run(NRT_POOL, "build", "--name", name, "--compute", tmp_path / "k.cpp", "--shape",
            tmp_path / "s.cpp", "--build-directory", out, *extra, check=check)
    return p, out / f"lib{name}.so"


def test_a_good_library_builds_lists_and_runs(tmp_path):
    p, lib = build(tmp_path, KERNEL, SHAPE % "negate", check=True)
    assert b"my_ops::negate(torch::Tensor) -> torch::Tensor  [kernel negate]" in p.stdout
    assert run(NRT_POOL, "list", lib).stdout == b"my_ops::negate(torch::Tensor)\n"
    x = np.arange(5, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    for name in ("my_ops::negate", "negate"):
        run(NRT_POOL, "run", lib, name, "--arg", tmp_path / "x.npy", "--out", tmp_path / "y.npy")
        np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), -x)


@pytest.mark.parametrize(
    "compute,shape,message",
    [
        (KERNEL, SHAPE % "negate_kernel",
         b"op 'my_ops::negate': the shape function takes (torch::Tensor), but no compute source defines its kernel negate_kernel(torch::Tensor)"),
        (KERNEL.replace("const torch::Tensor &x)", "const torch::Tensor &x, double k)"), SHAPE % "negate",
         b"op 'my_ops::negate': the shape function takes (torch::Tensor), but its kernel is negate(torch::Tensor const&, double)"),
        (KERNEL + "torch::Tensor helper(const torch::Tensor &x) { return x; }\n", SHAPE % "negate",
         b"compute function helper(torch::Tensor const&) has no shape registration"),
        (KERNEL, "#include <torch/torch.h>\n",
         b"the shape sources have no NEURON_LIBRARY(ns, m) block"),
        (KERNEL, SHAPE.replace("torch::Tensor x)", "float x)") % "negate",
         b"an op's arguments must be torch::Tensor, torch::Scalar, double or int64_t"),
        (KERNEL.replace("torch::zeros(", "torch::matmul("), SHAPE % "negate", b"matmul"),
        (KERNEL, SHAPE.replace('m.def("negate"', 'm.def("negate", &negate_shape, "negate"); m.def("negate"') % "negate",
         b"op 'negate' is registered twice"),
        (KERNEL, SHAPE.replace("torch::Tensor negate_shape(torch::Tensor x) { return torch::zeros(x.sizes(), torch::kFloat); }",
                               "int negate_shape(torch::Tensor x) { return int(x.numel()); }") % "negate",
         b"a shape function returns torch::Tensor"),
    ],
    ids=["missing kernel", "other signature", "unregistered", "no registration", "float arg",
         "undocumented op", "twice", "shape returns no tensor"],
)
def test_build_failures_name_what_is_wrong_and_leave_nothing(tmp_path, compute, shape, message):
    p, lib = build(tmp_path, compute, shape)
    assert p.returncode == 1, p.stdout
    assert message in p.stderr, p.stderr
    assert not lib.exists()


def test_a_shape_function_that_throws_or_faults_is_reported_and_writes_nothing(tmp_path):
    throwing = SHAPE.replace("{ return torch::zeros", '{ if (x.numel() > 3) throw std::runtime_error("too long"); return torch::zeros')
    throwing = "#include <stdexcept>\n" + throwing
    # Exceptions exist in the host's data model only (a device build refuses `throw`, D97).
    _, lib = build(tmp_path, KERNEL, throwing % "negate", True, "my_ops", "--data-model=host")
    np.save(tmp_path / "x.npy", np.zeros(8, np.float32))
    p = run(NRT_POOL, "run", lib, "my_ops::negate", "--arg", tmp_path / "x.npy", "--out", tmp_path / "y.npy", check=False)
    assert p.returncode == 1
    assert b"op my_ops::negate: the shape function threw: too long" in p.stderr, p.stderr
    assert not (tmp_path / "y.npy").exists()
    p, _ = build(tmp_path, KERNEL, throwing % "negate")
    assert p.returncode != 0 and b"exception handling disabled" in p.stderr, p.stderr
    # In the device's model a failing assert in a shape function is the core's fault.
    asserting = "#include <assert.h>\n" + SHAPE.replace("{ return torch::zeros", "{ assert(x.numel() <= 3); return torch::zeros")
    _, lib = build(tmp_path, KERNEL, asserting % "negate", check=True)
    p = run(NRT_POOL, "run", lib, "my_ops::negate", "--arg", tmp_path / "x.npy", "--out", tmp_path / "y.npy", check=False)
    assert p.returncode != 0 and b"Assertion `x.numel() <= 3' failed" in p.stderr, p.stderr
    assert not (tmp_path / "y.npy").exists()


def test_run_time_mistakes(tmp_path):
    _, lib = build(tmp_path, KERNEL, SHAPE % "negate", check=True)
    np.save(tmp_path / "x.npy", np.zeros(4, np.float32))
    np.save(tmp_path / "i.npy", np.zeros(4, np.int32))
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    cases = [
        (["my_ops::nope", "--arg", x], 1, b"unknown op 'my_ops::nope'; the library registers: my_ops::negate"),
        (["other::negate", "--arg", x], 1, b"unknown op 'other::negate'"),
        (["my_ops::negate", "--arg", x, "--arg", x], 1, b"takes 1 argument(s) (torch::Tensor), got 2"),
        (["my_ops::negate", "--arg", "2.5"], 1, b"this parameter is a tensor; pass a .npy file"),
        (["my_ops::negate", "--arg", tmp_path / "i.npy"], 3, b"accessor<Float> on argument 0, a tensor of Int"),
    ]
    for args, code, message in cases:
        p = run(NRT_POOL, "run", lib, *args, "--out", y, check=False)
        assert p.returncode == code, (args, p.stderr)
        assert message in p.stderr, (args, p.stderr)
        assert not y.exists()


@pytest.mark.full
def test_device_objects_are_xtensa_objects(tmp_path):
    """`--device-objects` writes the op's objects compiled for Xtensa, when the Xtensa g++
    is installed (make tools installs it). Every reference-guide function compiles for the
    device too: test_torch_api.py runs them all from their Pool image."""
    import shutil

    if shutil.which("xtensa-lx106-elf-g++") is None:
        pytest.skip("UNSUPPORTED: xtensa-lx106-elf-g++ is not installed")
    dev = tmp_path / "device"
    mlp = ROOT / "examples" / "mlp"
    run(NRT_POOL, "build", "--name", "mlp_ops", "--compute", mlp / "relu.cpp", "--shape",
        mlp / "shape.cpp", "--build-directory", tmp_path, "--device-objects", dev)
    for obj in ("relu.o", "nrt_pool_op_wrapper.o"):
        elf = (dev / obj).read_bytes()
        # ELF32, little-endian, relocatable, EM_XTENSA (94).
        assert (elf[:4], elf[4], elf[5], elf[16], elf[18]) == (b"\x7fELF", 1, 1, 1, 94), obj


@pytest.mark.full
@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_an_op_double_is_rounded_once_by_every_front_end(tmp_path, isa):
    """D81: an op's double travels as f32 through one rule. The text below lies just under
    an f32 rounding midpoint but its nearest double is the midpoint itself: parsed straight
    to f32 it gives 1 + 2**-23, as a double rounded to f32 (a C++ double, Python's float)
    1 + 2**-22. `nrt-pool run` and Python agree on the latter, on both backends."""
    text = "1.000000178813934326171874"
    lib = custom_op.load("mlp_ops", [ROOT / "examples" / "mlp" / "relu.cpp"],
                         [ROOT / "examples" / "mlp" / "shape.cpp"], build_directory=tmp_path, isa=isa)
    x = np.ones(4, np.float32)
    want = np.full(4, np.float32(1 + 2**-22))
    np.testing.assert_array_equal(custom_op.ops.mlp_ops.axpb(x, float(text), 0.0), want)
    np.save(tmp_path / "x.npy", x)
    assert pathlib.Path(lib.path).suffix == (".so" if isa == "host" else ".pool")
    run(NRT_POOL, "run", lib.path, "mlp_ops::axpb", "--arg", tmp_path / "x.npy", "--arg", text, "--arg", "0",
        "--out", tmp_path / "y.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), want)


# Constructs the device lacks, each named at build time with its file and line:
# (what, the line that uses it, a word the message must have).
MISSING_CONSTRUCTS = [
    ("thread_local", "static thread_local int n = 0; n++;", "thread_local"),
    ("exceptions", "if (x.numel() < 0) throw 1;", "exception"),
    ("rtti", "(void)typeid(x).name();", "rtti"),
    ("wide-chars", "wchar_t w[2] = L\"a\"; (void)wcslen(w);", "wcslen"),
    ("int128", "__int128 v = 1; (void)v;", "__int128"),
]


@pytest.mark.parametrize("what,line,word", MISSING_CONSTRUCTS, ids=[m[0] for m in MISSING_CONSTRUCTS])
def test_constructs_the_device_lacks_are_named_at_build_time(tmp_path, what, line, word):
    src = tmp_path / "k.cpp"
    src.write_text("#include <torch/torch.h>\n#include <typeinfo>\n"
                   "torch::Tensor k(const torch::Tensor &x) {\n"
                   f"    {line}\n"
                   "    return torch::abs(x);\n}\n")
    shape = tmp_path / "s.cpp"
    shape.write_text('#include <torch/torch.h>\n#include "torchneuron/register.h"\n'
                     "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n"
                     'NEURON_LIBRARY(missing, m) { m.def("k", &s, "k"); }\n')
    with pytest.raises(RuntimeError) as raised:
        custom_op.load("missing", [src], [shape], build_directory=tmp_path / "b")
    said = str(raised.value)
    assert f"k.cpp:4:" in said and word in said.lower(), said
    assert not list((tmp_path / "b").glob("*.so")), "a library was left"
