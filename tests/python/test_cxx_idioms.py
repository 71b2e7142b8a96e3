"""The guide's C++ API in the forms users write it, on both backends: sizes from
mixed braced lists, std::vector<int64_t>, sizes(), a pointer and a length and one value;
TensorOptions spelled four ways; Scalars from int, double and bool; dimensions above 65535;
extra_cflags and extra_include_paths reaching host and device builds; the guide's limits
refused at build time naming the rule; a kernel's HBM heap running out, named. Every
result is checked against NumPy."""
import pathlib

import numpy as np
import pytest

from conftest import NRT_POOL, OPS, run
from gpsimd_open import DeviceFault, custom_op

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"
RNG = np.random.default_rng(24)


@pytest.fixture(scope="module", params=["host", "xtensa"])
def idioms(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"idioms_{request.param}")
    lib = custom_op.load("idiom_ops", [OPS / "idiom_ops.cpp"], [OPS / "idiom_shape.cpp"], build_directory=d,
                         isa=request.param, extra_cflags=["-DIDIOM_SCALE=3", "-DSTACK_SIZE=32768"],
                         extra_include_paths=[OPS / "idiom_include"])
    return lib, request.param


@pytest.mark.full
def test_flags_reach_the_build_and_are_recorded(idioms):
    lib, _ = idioms
    x = np.zeros((2, 2), np.float32)
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.flag_values(x), [3, 5, 32768])
    assert lib.cflags == [f"-I{OPS / 'idiom_include'}", "-DIDIOM_SCALE=3", "-DSTACK_SIZE=32768"]


def test_braced_lists_mixing_int_and_int64(idioms):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    got = custom_op.ops.idiom_ops.sized_2n(x)
    assert got.shape == (2, 15)
    np.testing.assert_array_equal(got, np.stack([x.ravel(), x.ravel() * np.float32(2)]))
    got = custom_op.ops.idiom_ops.mixed_full(x, 4)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.full((3, 4, 2), 3, np.int32))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int16])
def test_vector_of_sizes_and_options(idioms, dtype):
    x = (RNG.standard_normal((2, 3, 4)) * 10).astype(dtype)
    got = custom_op.ops.idiom_ops.vec_zeros(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, x + dtype(1))


@pytest.mark.parametrize("s", [3, -2, 0.5, 2.25])
def test_scalars_from_int_and_double(idioms, s):
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    got = custom_op.ops.idiom_ops.scalar_forms(x, s, 1.5)
    np.testing.assert_array_equal(got, x * np.float32(s) + np.float32(1.5))


def test_scalar_from_bool_and_integral_results(idioms):
    x = RNG.integers(-100, 100, size=(3, 7)).astype(np.int32)
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.bool_scalar(x), x)


def test_size_comparisons(idioms):
    a, b, c = np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32), np.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.sizes_equal(a, b), [1, 1, 2, 3, 0])
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.sizes_equal(a, c), [0, 0, 2, 3, 0])
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.sizes_equal(c, a), [0, 0, 2, 2, 1])


def test_eye_with_int64_arguments(idioms):
    x = np.array([2.5, 1], np.float32)
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.eye_n(x, 3), np.eye(3, 4, dtype=np.float32) * 2.5)


def test_pointer_and_length_sizes_and_const_views(idioms):
    x = RNG.uniform(-3, 3, size=(5, 6)).astype(np.float32)
    got = custom_op.ops.idiom_ops.ptr_len(x)
    np.testing.assert_allclose(got, np.exp(x), rtol=4e-7)


@pytest.mark.parametrize("n", [65536, 262144, 1_000_000])
def test_one_dimension_above_65535(idioms, n):
    x = RNG.standard_normal(n).astype(np.float32)
    np.testing.assert_array_equal(custom_op.ops.idiom_ops.relu_big(x), np.maximum(x, 0))


def test_a_4d_tensor_with_large_dimensions(idioms):
    x = RNG.standard_normal((70000, 2, 1, 1)).astype(np.float32)
    got = custom_op.ops.idiom_ops.vec_zeros(x)
    assert got.shape == x.shape
    np.testing.assert_array_equal(got, x + np.float32(1))


@pytest.fixture(scope="module", params=["host", "xtensa"])
def mlp(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"mlp_{request.param}")
    return custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=d, isa=request.param)


@pytest.mark.full
def test_the_examples_relu_takes_a_million_floats(mlp):
    x = RNG.standard_normal(1_000_000).astype(np.float32)
    np.testing.assert_array_equal(custom_op.ops.mlp_ops.relu_forward(x), np.maximum(x, 0))


def test_a_kernel_tensor_larger_than_the_hbm_heap_is_named(mlp):
    x = np.ones(2_000_000, np.float32)
    with pytest.raises(DeviceFault) as e:
        custom_op.ops.mlp_ops.relu_forward(x)
    text = str(e.value)
    assert "cannot allocate 8000000 bytes from core 0's HBM heap (6291456 bytes a core" in text, text
    assert "get_dst_tensor()" in text and "D74" in text, text


def test_shapes_beyond_both_forms_are_refused_naming_the_rule(mlp):
    x = np.ones((70000, 1, 1, 1, 1), np.float32)
    with pytest.raises(ValueError, match="rank|dimension"):
        custom_op.ops.mlp_ops.relu_forward(x)


def _lib(tmp_path, kernel, shape, name="lim_ops"):
    (tmp_path / "k.cpp").write_text("#include <torch/torch.h>\n" + kernel)
    (tmp_path / "s.cpp").write_text("#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n" + shape)
    return custom_op.load(name, [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path / "b")


def test_eleven_ops_are_refused_naming_the_guide(tmp_path):
    kernels = "".join(f"torch::Tensor k{i}(const torch::Tensor &x) {{ return torch::abs(x); }}\n" for i in range(11))
    defs = "".join(f'    m.def("op{i}", &s, "k{i}");\n' for i in range(11))
    shape = "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n" \
            f"NEURON_LIBRARY(lim_ops, m) {{\n{defs}}}\n"
    with pytest.raises(RuntimeError, match=r"more than 10 ops.*Building and executing operators"):
        _lib(tmp_path, kernels, shape)


def test_op_names_of_32_characters_are_refused(tmp_path):
    name = "n" * 32
    kernel = "torch::Tensor k(const torch::Tensor &x) { return torch::abs(x); }\n"
    shape = "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n" \
            f'NEURON_LIBRARY(lim_ops, m) {{ m.def("{name}", &s, "k"); }}\n'
    with pytest.raises(RuntimeError, match="32 characters.*refuses names of 32 or more"):
        _lib(tmp_path, kernel, shape)


def test_kernel_parameters_and_returns_outside_the_guide_are_refused(tmp_path):
    shape = "torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }\n" \
            'NEURON_LIBRARY(lim_ops, m) { m.def("f", &s, "k"); }\n'
    with pytest.raises(RuntimeError, match=r"does not return torch::Tensor.*Kernel Function"):
        _lib(tmp_path, "float k(const torch::Tensor &x) { return float(x.numel()); }\n", shape)
    bad_param = "torch::Tensor s(torch::Tensor x, double a) { (void)a; return torch::empty(x.sizes(), torch::kFloat); }\n" \
                'NEURON_LIBRARY(lim_ops, m) { m.def("f", &s, "k"); }\n'
    with pytest.raises(RuntimeError, match=r"takes a float.*Kernel Function"):
        _lib(tmp_path, "torch::Tensor k(const torch::Tensor &x, float a) { return torch::mul(x, a); }\n", bad_param)
    int_shape = "torch::Tensor s(torch::Tensor x, int a) { (void)a; return torch::empty(x.sizes(), torch::kFloat); }\n" \
                'NEURON_LIBRARY(lim_ops, m) { m.def("f", &s, "k"); }\n'
    with pytest.raises(RuntimeError, match="not float, int or other integral types"):
        _lib(tmp_path, "torch::Tensor k(const torch::Tensor &x, int64_t a) { return torch::mul(x, a); }\n", int_shape)


def test_operands_of_different_shapes_are_refused(tmp_path):
    kernel = "torch::Tensor k(const torch::Tensor &a, const torch::Tensor &b) { return torch::add(a, b); }\n"
    shape = "torch::Tensor s(torch::Tensor a, torch::Tensor b) { (void)b; return torch::empty(a.sizes(), torch::kFloat); }\n" \
            'NEURON_LIBRARY(shp_ops, m) { m.def("f", &s, "k"); }\n'
    _lib(tmp_path, kernel, shape, name="shp_ops")
    with pytest.raises(DeviceFault, match="shapes differ.*no broadcasting"):
        custom_op.ops.shp_ops.f(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))


def test_extra_cflags_take_a_list(tmp_path):
    with pytest.raises(TypeError, match=r"extra_cflags takes a list"):
        custom_op.load("x", [OPS / "idiom_ops.cpp"], [OPS / "idiom_shape.cpp"], build_directory=tmp_path,
                       extra_cflags="-DX=1")
    with pytest.raises(RuntimeError, match="cannot be added"):
        custom_op.load("x", [OPS / "idiom_ops.cpp"], [OPS / "idiom_shape.cpp"], build_directory=tmp_path,
                       extra_cflags=["-o", "elsewhere"])


@pytest.mark.full
def test_the_cli_takes_defines_include_folders_and_flags(tmp_path):
    for isa in ["host", "xtensa"]:
        d = tmp_path / isa
        extra = ["--device-image"] if isa == "xtensa" else []
        run(NRT_POOL, "build", "--name", "idiom_ops", "--compute", OPS / "idiom_ops.cpp", "--shape",
            OPS / "idiom_shape.cpp", "--build-directory", d, "-D", "IDIOM_SCALE=7", "-I", OPS / "idiom_include",
            "--cflag=-DSTACK_SIZE=20000", "--cflag", "-O1", *extra)
        np.save(tmp_path / "x.npy", np.zeros(2, np.float32))
        lib = d / ("libidiom_ops.so" if isa == "host" else "libidiom_ops.pool")
        run(NRT_POOL, "run", lib, "idiom_ops::flag_values", "--arg", tmp_path / "x.npy", "--out", tmp_path / "f.npy")
        np.testing.assert_array_equal(np.load(tmp_path / "f.npy"), [7, 5, 20000])
        big = RNG.standard_normal(100_000).astype(np.float32)
        np.save(tmp_path / "big.npy", big)
        run(NRT_POOL, "run", lib, "idiom_ops::relu_big", "--arg", tmp_path / "big.npy", "--out", tmp_path / "r.npy")
        np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), np.maximum(big, 0))


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_libtorch_header_paths_build_and_run(tmp_path, isa):
    """An op that includes <ATen/ATen.h>, <c10/util/Half.h>, ... (not torch/torch.h) and a
    shape function through <torch/extension.h> build and run on both backends (#26)."""
    custom_op.load("libtorch_layout", [OPS / "libtorch_layout_ops.cpp"], [OPS / "libtorch_layout_shape.cpp"],
                   build_directory=tmp_path, isa=isa, extra_cflags=["-DSTACK_SIZE=16384"])
    x = np.concatenate([RNG.standard_normal(61).astype(np.float32) * 1000,
                        np.array([0.0, -0.0, 65504.0, 70000.0, 1e-7, np.inf, 3.0e38], np.float32)])
    got = custom_op.ops.libtorch_layout.rounded(x, 3)
    assert got.shape == (3, x.size) and got.dtype == np.float32
    bits = x.view(np.uint32).astype(np.uint64)
    bf16 = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got[0], x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(got[1], bf16)
    np.testing.assert_array_equal(got[2], x * np.float32(3))
