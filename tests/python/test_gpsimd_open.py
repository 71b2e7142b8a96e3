"""gpsimd_open as an op author uses it from Python: custom_op.load / load_library, ops by
namespace on NumPy arrays, device arrays, errors as exceptions that leave the interpreter
and the engine working."""
import pathlib

import numpy as np
import pytest

gpsimd_open = pytest.importorskip("gpsimd_open")
from gpsimd_open import DeviceFault, bfloat16, bfloat16_to_float32, custom_op  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"
TILES = ROOT / "examples" / "multicore"
OPS = pathlib.Path(__file__).resolve().parent / "ops"
RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    return custom_op.load(name="mlp_ops", compute_srcs=[MLP / "relu.cpp"], shape_srcs=[MLP / "shape.cpp"],
                          build_directory=tmp_path_factory.mktemp("mlp"))


def test_load_builds_into_the_build_directory_and_registers_the_ops(mlp):
    assert pathlib.Path(mlp.path).name == "libmlp_ops.so"
    assert mlp.namespace == "mlp_ops" and not mlp.multicore
    assert sorted(mlp.ops) == ["axpb", "describe", "relu_backward", "relu_forward"]
    assert custom_op.ops.mlp_ops.relu_forward is mlp.ops["relu_forward"]
    assert "mlp_ops::axpb(torch::Tensor, double, double)" in custom_op.ops.mlp_ops.axpb.__doc__


def test_ops_on_numpy_arrays_of_any_layout(mlp):
    x = RNG.standard_normal((24, 40)).astype(np.float32)
    relu = custom_op.ops.mlp_ops.relu_forward
    for arg in (x, np.asfortranarray(x), x[:, ::3], x.astype(">f4")):
        np.testing.assert_array_equal(relu(arg), np.maximum(arg, 0))
    g = RNG.standard_normal(x.shape).astype(np.float32)
    np.testing.assert_array_equal(custom_op.ops.mlp_ops.relu_backward(g, x), np.where(x > 0, g, 0))
    np.testing.assert_array_equal(custom_op.ops.mlp_ops.axpb(x, 2, 0.5), x * np.float32(2) + np.float32(0.5))


def test_load_library_loads_a_built_one_and_calls_it_again(mlp):
    again = custom_op.load_library(mlp.path)
    x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(again.relu_forward(x), np.maximum(x, 0))


def test_multicore_libraries_run_on_eight_cores_and_cores_can_be_given(tmp_path):
    tiles = custom_op.load("tiles", [TILES / "relu_tiles.cpp"], [TILES / "shape.cpp"], build_directory=tmp_path,
                           multicore=True)
    assert tiles.multicore
    x = RNG.standard_normal((64, 100)).astype(np.float32)
    for cores in (None, 1, 3, 8):
        np.testing.assert_array_equal(custom_op.ops.tiles.relu(x, cores=cores), np.maximum(x, 0))
    with pytest.raises(ValueError, match="cores=9"):
        custom_op.ops.tiles.relu(x, cores=9)


def test_dtypes_and_bfloat16(api_build):
    custom_op.load_library(api_build / "libapi_ops.so")
    for dtype in (np.float32, np.float16, np.int8, np.uint8, np.int16, np.int32, np.int64):
        a = RNG.integers(-20, 20, size=(5, 6)).astype(dtype)
        b = RNG.integers(-20, 20, size=(5, 6)).astype(dtype)
        got = custom_op.ops.api_ops.binary(a, b, 2, 0)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, (a.astype(np.float64) * b).astype(dtype))
    x = RNG.standard_normal(16).astype(np.float32)
    bits = custom_op.ops.api_ops.unary(bfloat16(x), 0, 0)
    np.testing.assert_array_equal(bfloat16_to_float32(bits), np.abs(bfloat16_to_float32(bfloat16(x).bits)))
    # A Scalar argument takes an int or a float.
    np.testing.assert_array_equal(custom_op.ops.api_ops.with_scalar(np.arange(4, dtype=np.int32), 3, 0, 0),
                                  np.arange(4, dtype=np.int32) + 3)
    np.testing.assert_array_equal(custom_op.ops.api_ops.with_scalar(np.arange(4, dtype=np.int32), 0.5, 0, 0),
                                  np.arange(4, dtype=np.float32) + np.float32(0.5))


def test_device_arrays_chain_ops_without_host_copies(mlp):
    x = RNG.standard_normal((32, 32)).astype(np.float32)
    d = mlp.to_device(x)
    mid = mlp.device_array((32, 32), "f32")
    out = mlp.device_array((32, 32), "f32")
    # Device arrays belong to their library's engine: call its ops (custom_op.ops.NS.OP
    # serves the library of NS loaded last).
    assert mlp.axpb(d, -1.0, 0.0, out=mid) is mid
    mlp.relu_forward(mid, out=out)
    np.testing.assert_array_equal(out.numpy(), np.maximum(-x, 0))
    with pytest.raises(ValueError, match="the shape function gives"):
        mlp.relu_forward(d, out=mlp.device_array((4, 4), "f32"))
    other = custom_op.load_library(mlp.path)
    with pytest.raises(ValueError, match="another library's device memory"):
        other.relu_forward(d)


def test_device_arrays_take_the_dtype_in_numpys_spellings_too(mlp):
    from gpsimd_open import bfloat16

    # (dtype as given, the device's name, what .numpy() gives: bf16 as its uint16 bits)
    cases = [("f32", "f32", np.float32), (np.float32, "f32", np.float32),
             ("float32", "f32", np.float32), (np.dtype(">f4"), "f32", np.float32),
             (np.int8, "i8", np.int8), ("uint16", "u16", np.uint16),
             (np.float16, "f16", np.float16), (np.int64, "i64", np.int64),
             (bfloat16, "bf16", np.uint16), ("bf16", "bf16", np.uint16)]
    for dtype, name, host in cases:
        a = mlp.device_array((2, 3), dtype)
        assert (a.dtype, a.shape) == (name, (2, 3)), dtype
        np.testing.assert_array_equal(a.numpy(), np.zeros((2, 3), host))
        assert a.numpy().dtype == host, dtype
    for bad in (np.float64, "complex64", object, "f33", None):
        with pytest.raises(ValueError, match="has no device type"):
            mlp.device_array((2,), bad)


def test_array_arguments_are_copied_in_and_released_each_call(tmp_path):
    # An array argument is copied once, straight into device memory, and freed when the
    # call ends: 40 calls with 64 MiB each (2.5 GiB in all) fit a 1 GiB device, and a
    # device array made in between keeps its contents.
    tiles = custom_op.load("tiles_rel", [TILES / "relu_tiles.cpp"], [TILES / "shape.cpp"],
                           build_directory=tmp_path, multicore=True)
    x = RNG.standard_normal((4096, 4096)).astype(np.float32)
    want = np.maximum(x, 0)
    kept = tiles.to_device(x[:16])
    for i in range(40):
        if i == 20:
            np.testing.assert_array_equal(tiles.relu(x), want)
        else:
            tiles.relu(x)
    np.testing.assert_array_equal(kept.numpy(), x[:16])
    out = tiles.device_array((16, 4096), "f32")
    tiles.relu(kept, out=out)
    np.testing.assert_array_equal(out.numpy(), want[:16])


def test_dropped_device_arrays_give_their_memory_back(mlp):
    # 40 device arrays of 64 MiB made and dropped one after another (2.5 GiB in all) fit
    # the 1 GiB device; one kept throughout keeps its contents.
    x = RNG.standard_normal((64, 64)).astype(np.float32)
    kept = mlp.to_device(x)
    for i in range(40):
        d = mlp.device_array((4096, 4096), "f32")
        if i % 10 == 0:
            assert not d.numpy()[::512, ::512].any(), "a fresh device array is zeroed"
        del d
    big = [mlp.device_array((4096, 4096), "f32") for _ in range(10)]
    np.testing.assert_array_equal(kept.numpy(), x)
    del big


def test_kernel_output_reaches_python_byte_for_byte(mlp, capfd):
    mlp.describe(np.arange(4, dtype=np.float32))
    assert capfd.readouterr().out == "describe: 4 elements, sum 6.000\n"


def test_shape_function_output_reaches_python_before_the_kernels(tmp_path, capfd):
    (tmp_path / "k.cpp").write_text(
        "#include <stdio.h>\n#include <torch/torch.h>\n"
        "torch::Tensor twice(const torch::Tensor &x) {\n"
        "    printf(\"kernel\\n\");\n"
        "    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);\n"
        "    torch::mul_out(y, x, 2);\n"
        "    return y;\n}\n")
    (tmp_path / "s.cpp").write_text(
        "#include <stdio.h>\n#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n"
        "torch::Tensor twice_shape(torch::Tensor x) {\n"
        "    printf(\"shape of %lld elements\\n\", (long long)x.numel());\n"
        "    return torch::empty(x.sizes(), torch::kFloat);\n}\n"
        "NEURON_LIBRARY(printing_ops, m) { m.def(\"twice\", &twice_shape, \"twice\"); }\n")
    lib = custom_op.load("printing_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path)
    capfd.readouterr()
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_array_equal(lib.twice(x), x * 2)
    np.testing.assert_array_equal(lib.twice(x[:3]), x[:3] * 2)
    assert capfd.readouterr().out == "shape of 6 elements\nkernel\nshape of 3 elements\nkernel\n"


def test_mistakes_raise_and_the_engine_keeps_working(mlp, tmp_path):
    x = RNG.standard_normal((4, 4)).astype(np.float32)
    relu = custom_op.ops.mlp_ops.relu_forward
    with pytest.raises(TypeError, match=r"takes 1 argument\(s\) \(torch::Tensor\), got 2"):
        relu(x, x)
    with pytest.raises(TypeError, match="argument 0 is a torch::Tensor, got a str"):
        relu("x")
    with pytest.raises(TypeError, match="argument 1 is a double"):
        custom_op.ops.mlp_ops.axpb(x, x, 1.0)
    with pytest.raises(TypeError, match="cannot be passed to a kernel"):
        relu(x.astype(np.float64))
    with pytest.raises(DeviceFault) as fault:
        relu(x.astype(np.int32))
    assert fault.value.kernel == "relu_forward" and fault.value.core == 0
    assert "read_stream_accessor<Float> on argument 0, a tensor of Int" in str(fault.value)
    with pytest.raises(AttributeError, match="no op mlp_ops.nope is loaded"):
        custom_op.ops.mlp_ops.nope
    with pytest.raises(AttributeError, match="no custom op library with namespace 'nobody'"):
        custom_op.ops.nobody
    with pytest.raises(RuntimeError, match="no such file"):
        custom_op.load_library(tmp_path / "missing.so")
    np.testing.assert_array_equal(relu(x), np.maximum(x, 0))


def load_faulty(tmp_path, namespace, isa="host"):
    """An op `bad(x, how)`: how 1 stores to address 16, how 2 spins, else it returns zeros."""
    (tmp_path / "k.cpp").write_text(
        "#include <torch/torch.h>\n"
        "torch::Tensor bad(const torch::Tensor &x, int64_t how) {\n"
        "    if (how == 1) { volatile int *p = (volatile int *)16; *p = 1; }\n"
        "    if (how == 2) for (;;) asm volatile(\"\");\n"
        "    return torch::zeros(x.sizes(), torch::kFloat);\n}\n")
    (tmp_path / "s.cpp").write_text(
        "#include <torch/torch.h>\n#include \"torchneuron/register.h\"\n"
        "torch::Tensor bad_shape(torch::Tensor x, int64_t how) { (void)how; return torch::zeros(x.sizes(), torch::kFloat); }\n"
        f"NEURON_LIBRARY({namespace}, m) {{ m.def(\"bad\", &bad_shape, \"bad\"); }}\n")
    return custom_op.load(namespace, [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path / "b",
                          isa=isa)


def test_a_faulting_kernel_and_a_timeout_are_device_faults(tmp_path):
    lib = load_faulty(tmp_path, "faulty")
    x = np.ones(3, np.float32)
    with pytest.raises(DeviceFault) as f:
        custom_op.ops.faulty.bad(x, 1)
    assert f.value.kind == "memory fault" and f.value.address == 16
    lib.timeout = 0.5
    with pytest.raises(DeviceFault, match="timeout"):
        custom_op.ops.faulty.bad(x, 2)
    np.testing.assert_array_equal(custom_op.ops.faulty.bad(x, 0), np.zeros(3, np.float32))


def test_compile_errors_carry_the_compilers_message_and_leave_nothing(tmp_path):
    (tmp_path / "k.cpp").write_text("#include <torch/torch.h>\ntorch::Tensor f(const torch::Tensor &x) { return x.nope(); }\n")
    (tmp_path / "s.cpp").write_text("#include <torch/torch.h>\n")
    with pytest.raises(RuntimeError, match="nope"):
        custom_op.load("broken", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path / "out")
    assert not (tmp_path / "out" / "libbroken.so").exists()


def test_help_reads_like_the_vendors():
    doc = custom_op.load.__doc__
    for word in ("compute_srcs", "shape_srcs", "build_directory", "multicore", "NEURON_LIBRARY"):
        assert word in doc
    assert "load" in dir(custom_op) and custom_op.load_library.__doc__


def test_xtensa_pool_images_run_on_qemu_cores_like_the_host_build(tmp_path):
    """load(..., isa="xtensa") builds the Pool image too and runs the ops on emulated Xtensa
    cores: the same bytes as the host build and NumPy, faults as DeviceFault."""
    xt = custom_op.load("mlp_xt", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path, isa="xtensa")
    assert pathlib.Path(xt.path).name == "libmlp_xt.pool"
    host = custom_op.load_library(tmp_path / "libmlp_xt.so")
    x = RNG.standard_normal((12, 33)).astype(np.float32)
    np.testing.assert_array_equal(xt.relu_forward(x), np.maximum(x, 0))
    np.testing.assert_array_equal(xt.axpb(x, 2, 0.5), host.axpb(x, 2, 0.5))
    tiles = custom_op.load("tiles_xt", [TILES / "relu_tiles.cpp"], [TILES / "shape.cpp"], build_directory=tmp_path,
                           multicore=True, isa="xtensa")
    np.testing.assert_array_equal(tiles.relu(x, cores=8), np.maximum(x, 0))
    with pytest.raises(ValueError, match="isa"):
        custom_op.load("bad", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path, isa="arm")


@pytest.mark.full
def test_xtensa_device_arrays_and_faults(tmp_path):
    """On QEMU Xtensa cores: device arrays chain ops as on host cores, a store to no memory
    and a timeout are DeviceFaults, and the library keeps working."""
    xt = custom_op.load("mlp_dev", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path / "m", isa="xtensa")
    x = RNG.standard_normal((16, 16)).astype(np.float32)
    d = xt.to_device(x)
    mid = xt.device_array((16, 16), "f32")
    out = xt.device_array((16, 16), "f32")
    assert xt.axpb(d, -1.0, 0.0, out=mid) is mid
    xt.relu_forward(mid, out=out)
    np.testing.assert_array_equal(out.numpy(), np.maximum(-x, 0))

    lib = load_faulty(tmp_path, "faulty_xt", isa="xtensa")
    v = np.ones(3, np.float32)
    with pytest.raises(DeviceFault) as f:
        lib.bad(v, 1)
    assert f.value.kind == "memory fault" and f.value.core == 0
    assert "store to no memory" in str(f.value) and "address 0x00000010" in str(f.value)
    assert "bad(" in str(f.value), "the PC named from the image"
    lib.timeout = 2
    with pytest.raises(DeviceFault, match="timeout"):
        lib.bad(v, 2)
    np.testing.assert_array_equal(lib.bad(v, 0), np.zeros(3, np.float32))
