"""Ops as torch 2 knows them: fake kernels from each op's own C++ shape function,
torch.library.opcheck, register_autograd, torch.compile(fullgraph=True), torch.export and
meta tensors, on host and Xtensa cores; tensors as torch sends them."""
import io
import pathlib
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from gpsimd_open import DeviceFault, custom_op  # noqa: E402
from gpsimd_open import _torch  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPS = pathlib.Path(__file__).resolve().parent / "ops"
ISAS = ["host", "xtensa"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each library's host build (.so) and Pool image (.pool), built once."""
    out = {}
    for name, compute, shape, multicore in [
        ("mlp_ops", ROOT / "examples/mlp/relu.cpp", ROOT / "examples/mlp/shape.cpp", False),
        ("tiles", ROOT / "examples/multicore/relu_tiles.cpp", ROOT / "examples/multicore/shape.cpp", True),
        ("torch2_ops", OPS / "torch2_ops.cpp", OPS / "torch2_shape.cpp", False),
    ]:
        d = tmp_path_factory.mktemp(name)
        pool = custom_op.load(name, [compute], [shape], build_directory=d, multicore=multicore, isa="xtensa")
        out[name] = pathlib.Path(pool.path).with_suffix(".so")
    return out


@pytest.fixture(scope="module")
def libraries(built):
    """The loaded libraries by (name, isa): each loaded once, on its own engine."""
    loaded = {}

    def get(name, isa):
        if (name, isa) not in loaded:
            loaded[name, isa] = custom_op.load_library(built[name], isa=isa)
        lib = loaded[name, isa]
        # The newest load of a namespace serves torch.ops: point it at this one.
        custom_op._register_torch(lib)
        return lib

    return get


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def ints(*shape, dtype=torch.int64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-(2**40), 2**40, shape, generator=g, dtype=torch.int64).to(dtype)


# (library, op, arguments, the reference result)
CASES = [
    ("mlp_ops", "relu_forward", lambda: (rand(8, 16),), lambda x: torch.relu(x)),
    ("mlp_ops", "relu_backward", lambda: (rand(8, 16, seed=1), rand(8, 16)),
     lambda g, x: torch.where(x > 0, g, torch.zeros_like(g))),
    ("mlp_ops", "axpb", lambda: (rand(4, 6), 1.5, -0.25), lambda x, a, b: x * a + b),
    ("mlp_ops", "describe", lambda: (rand(3, 5),), lambda x: x),
    ("tiles", "relu", lambda: (rand(64, 33),), lambda x: torch.relu(x)),
    ("torch2_ops", "relu_2d", lambda: (rand(8, 16),), lambda x: torch.relu(x)),
    ("torch2_ops", "relu_tcm", lambda: (rand(40, 33),), lambda x: torch.relu(x)),
    ("torch2_ops", "scale_shift", lambda: (rand(6, 7), 2.5, 0.5, 3), lambda x, s, d, k: x * s + d * k),
    ("torch2_ops", "scale_shift", lambda: (rand(6, 7), 2, -0.5, 4), lambda x, s, d, k: x * s + d * k),
    ("torch2_ops", "weighted", lambda: (rand(5, 9), rand(5, 9, seed=1), rand(5, 9, seed=2), 0.5),
     lambda a, b, c, w: a + b * w + c),
    ("torch2_ops", "long_bits", lambda: (ints(2, 3, 4), ints(2, 3, 4, seed=1)), lambda x, y: (x & y) + (x | y)),
    ("torch2_ops", "repeat_rows", lambda: (rand(3, 5), 4), lambda x, n: x.repeat(n, 1)),
    ("torch2_ops", "copy_any", lambda: (rand(4, 4).half(),), lambda x: x),
    ("torch2_ops", "copy_any", lambda: (rand(4, 4).bfloat16(),), lambda x: x),
    ("torch2_ops", "copy_any", lambda: (ints(3, 7, dtype=torch.int32),), lambda x: x),
    ("torch2_ops", "copy_any", lambda: (ints(3, 7),), lambda x: x),
    ("torch2_ops", "copy_any", lambda: (torch.arange(12, dtype=torch.uint8).reshape(3, 4),), lambda x: x),
]
IDS = [f"{lib}.{op}-{i}" for i, (lib, op, _, _) in enumerate(CASES)]


def torch_op(lib, name):
    return getattr(getattr(torch.ops, lib), name)


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("lib,name,make,reference", CASES, ids=IDS)
def test_opcheck_passes_every_default_test(libraries, isa, lib, name, make, reference):
    libraries(lib, isa)
    op = torch_op(lib, name)
    args = make()
    # Every default test: test_schema, test_autograd_registration, test_faketensor,
    # test_aot_dispatch_dynamic.
    result = torch.library.opcheck(op, args, raise_exception=False)
    assert all(v == "SUCCESS" for v in result.values()), result
    assert set(result) == {"test_schema", "test_autograd_registration", "test_faketensor",
                           "test_aot_dispatch_dynamic"}
    got = op(*args)
    want = reference(*args)
    assert got.dtype == (want.dtype if name in ("copy_any", "long_bits") else torch.float32)
    torch.testing.assert_close(got, want.to(got.dtype), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("isa", ISAS)
def test_register_autograd_pairs_the_relu_ops(libraries, isa):
    libraries("mlp_ops", isa)
    fwd, bwd = torch.ops.mlp_ops.relu_forward, torch.ops.mlp_ops.relu_backward
    custom_op.register_autograd(fwd, bwd)
    x = rand(6, 10).requires_grad_()
    result = torch.library.opcheck(fwd, (x,), raise_exception=False)
    assert all(v == "SUCCESS" for v in result.values()), result
    g = rand(6, 10, seed=5)
    (ours,) = torch.autograd.grad(fwd(x), x, g)
    (theirs,) = torch.autograd.grad(torch.relu(x), x, g)
    assert torch.equal(ours, theirs)


def test_register_autograd_with_several_tensors_and_saved_outputs(libraries):
    libraries("torch2_ops", "host")
    # d(a + b*w + c)/da = grad: "relu_2d" of a positive gradient is the gradient itself.
    custom_op.register_autograd("torch2_ops::weighted", [torch.ops.torch2_ops.copy_any] * 2, grad_of=[0, 2],
                                saved=lambda inputs, output: ())
    a, b, c = (rand(3, 4, seed=s).requires_grad_() for s in range(3))
    y = torch.ops.torch2_ops.weighted(a, b, c, 0.5)
    g = rand(3, 4, seed=9)
    ga, gc = torch.autograd.grad(y, (a, c), g)
    assert torch.equal(ga, g) and torch.equal(gc, g)
    with pytest.raises(RuntimeError):
        torch.autograd.grad(torch.ops.torch2_ops.weighted(a, b, c, 0.5).sum(), b)


@pytest.mark.parametrize("isa", ISAS)
def test_a_shape_function_after_a_launch_reads_its_scalars(libraries, isa):
    """A launch's guard pages are released for the next shape call, whose scalars may be
    placed on one of them (found by opcheck: a TCM ReLU, then scale_shift's shape function
    faulted reading its Scalar)."""
    lib = libraries("torch2_ops", isa)
    x = np.random.default_rng(0).standard_normal((6, 7)).astype(np.float32)
    for rows in (1, 8, 40, 200):
        lib.relu_tcm(np.ones((rows, 33), np.float32))
        np.testing.assert_allclose(lib.scale_shift(x, 2.5, 0.5, 3), x * 2.5 + 1.5, rtol=1e-6)


def test_register_autograd_refuses_what_it_cannot_pair(libraries):
    libraries("torch2_ops", "host")
    with pytest.raises(ValueError, match="argument 1 of torch2_ops::scale_shift is not a tensor"):
        custom_op.register_autograd(torch.ops.torch2_ops.scale_shift, torch.ops.torch2_ops.copy_any, grad_of=1)
    with pytest.raises(ValueError, match="not an op gpsimd_open loaded"):
        custom_op.register_autograd("nowhere::op", torch.ops.torch2_ops.copy_any)
    with pytest.raises(ValueError, match="saved="):
        custom_op.register_autograd(torch.ops.torch2_ops.relu_2d, torch.ops.torch2_ops.copy_any, saved="grads")


class SampleRelu(torch.autograd.Function):
    """The training sample's own autograd Function, unchanged."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.ops.mlp_ops.relu_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.ops.mlp_ops.relu_backward(grad, x)


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Linear(32, 4))


def training_steps(step, steps=3):
    """Losses and final weights of `steps` SGD steps through `step(net, x, target)`."""
    net = mlp()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    data = rand(32, 16, seed=3)
    target = rand(32, 4, seed=4)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = step(net, data, target)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses, [p.detach().clone() for p in net.parameters()]


def sample_step(net, x, target):
    h = SampleRelu.apply(net[0](x))
    return torch.nn.functional.mse_loss(net[1](h), target)


@pytest.mark.parametrize("isa", ISAS)
def test_the_samples_training_step_compiles_without_a_graph_break(libraries, isa):
    """The training sample's step (its own autograd Function around the forward and
    backward ops) under torch.compile(fullgraph=True): through AOT autograd's graph run as
    traced (aot_eager) it is bit-equal to eager; with inductor, which generates its own code
    for the torch parts (the linear layers' bias adds, the loss's sum), equal to float
    rounding (D107)."""
    libraries("mlp_ops", isa)
    torch._dynamo.reset()
    eager = training_steps(sample_step)
    traced = training_steps(torch.compile(sample_step, fullgraph=True, backend="aot_eager"))
    for a, b in zip(eager[0] + eager[1], traced[0] + traced[1]):
        assert torch.equal(a, b)
    inductor = training_steps(torch.compile(sample_step, fullgraph=True))
    for a, b in zip(eager[0] + eager[1], inductor[0] + inductor[1]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    explained = torch._dynamo.explain(sample_step)(mlp(), rand(32, 16), rand(32, 4))
    assert explained.graph_break_count == 0 and explained.graph_count == 1


@pytest.mark.parametrize("isa", ISAS)
def test_compiled_elementwise_around_the_op_is_bit_equal(libraries, isa):
    libraries("torch2_ops", isa)
    op = torch.ops.torch2_ops.relu_2d

    def f(t):
        return op(t * 2) + 1

    x = rand(8, 16)
    assert torch.equal(torch.compile(f, fullgraph=True)(x), f(x))


class InferenceModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.ops.torch2_ops.relu_2d(self.fc1(x)))


@pytest.mark.parametrize("isa", ISAS)
def test_export_gives_the_op_as_one_node_and_round_trips(libraries, isa):
    libraries("torch2_ops", isa)
    model = InferenceModel().eval()
    x = rand(8, 16)
    ep = torch.export.export(model, (x,))
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.torch2_ops.relu_2d.default) == 1
    want = model(x)
    assert torch.equal(ep.module()(x), want)
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    assert torch.equal(loaded.module()(x), want)


@pytest.mark.parametrize("isa", ISAS)
def test_meta_tensors_take_the_shape_functions_answer(libraries, isa):
    libraries("torch2_ops", isa)
    y = torch.ops.torch2_ops.repeat_rows(torch.empty(3, 5, device="meta"), 4)
    assert y.device.type == "meta" and y.shape == (12, 5) and y.dtype == torch.float32
    z = torch.ops.torch2_ops.long_bits(torch.empty(2, 3, dtype=torch.int64, device="meta"),
                                       torch.empty(2, 3, dtype=torch.int64, device="meta"))
    assert z.shape == (2, 3) and z.dtype == torch.int64


def test_the_fake_kernel_runs_a_signatures_shape_function_once(libraries):
    lib = libraries("torch2_ops", "host")
    calls = []

    class Counting:
        def __init__(self, native):
            self._inner = native

        def output_spec(self, *a):
            calls.append(a)
            return self._inner.output_spec(*a)

        def __getattr__(self, name):
            return getattr(self._inner, name)

    native = lib._native
    lib._native = Counting(native)
    try:
        op = lib.ops["repeat_rows"]
        op._specs.clear()
        for _ in range(3):
            torch.ops.torch2_ops.repeat_rows(torch.empty(3, 5, device="meta"), 2)
        torch.ops.torch2_ops.repeat_rows(torch.empty(3, 5, device="meta"), 3)
        torch.ops.torch2_ops.repeat_rows(torch.empty(4, 5, device="meta"), 2)
    finally:
        lib._native = native
    assert [c[1] for c in calls] == [(("f32", (3, 5)), 2), (("f32", (3, 5)), 3), (("f32", (4, 5)), 2)]


def test_symbolic_sizes_specialize_and_say_so(libraries):
    libraries("torch2_ops", "host")
    torch._dynamo.reset()
    op = torch.ops.torch2_ops.relu_2d

    def f(t):
        return op(t) * 2

    g = torch.compile(f, dynamic=True, fullgraph=True)
    _torch._SPECIALIZED.discard("torch2_ops::relu_2d")  # said once a process: say it again here
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for rows in (4, 5, 6):
            x = rand(rows, 8)
            assert torch.equal(g(x), f(x))
    assert any("specializes" in str(w.message) and "torch2_ops::relu_2d" in str(w.message) for w in said)


def test_a_symbolic_fake_given_by_the_user_keeps_sizes_dynamic(libraries):
    libraries("torch2_ops", "host")
    torch._dynamo.reset()
    custom_op.register_fake(torch.ops.torch2_ops.relu_tcm, lambda x: torch.empty_like(x))
    try:
        op = torch.ops.torch2_ops.relu_tcm
        frames = []

        def backend(gm, inputs):
            frames.append(gm)
            return gm

        g = torch.compile(lambda t: op(t) * 2, dynamic=True, fullgraph=True, backend=backend)
        for rows in (4, 5, 6):
            x = rand(rows, 8)
            assert torch.equal(g(x), torch.relu(x) * 2)
        assert len(frames) == 1
    finally:
        custom_op.register_fake(torch.ops.torch2_ops.relu_tcm, None)


@pytest.mark.parametrize("isa", ISAS)
def test_a_faulting_shape_function_fails_the_trace_with_its_fault(libraries, isa):
    libraries("torch2_ops", isa)
    torch._dynamo.reset()
    op = torch.ops.torch2_ops.broken_shape
    with pytest.raises(Exception) as raised:
        torch.compile(lambda t: op(t) + 1, fullgraph=True)(rand(3, 3))
    text = str(raised.value)
    assert "shape function of torch2_ops::broken_shape" in text and "torch2_shape.cpp" in text
    with pytest.raises(DeviceFault, match="shape function of torch2_ops::broken_shape"):
        op(torch.empty(3, 3, device="meta"))


@pytest.mark.parametrize("isa", ISAS)
def test_tensors_as_torch_sends_them(libraries, isa):
    libraries("torch2_ops", isa)
    relu, copy = torch.ops.torch2_ops.relu_2d, torch.ops.torch2_ops.copy_any
    # Non-contiguous views are laid out as the device's tensors are (C order).
    x = rand(16, 8).t()
    assert not x.is_contiguous()
    assert torch.equal(relu(x), torch.relu(x))
    assert torch.equal(relu(rand(8, 32)[:, ::2]), torch.relu(rand(8, 32)[:, ::2]))
    # A 0-d tensor is one element of shape [1] (a descriptor's rank counts one dimension).
    assert torch.equal(copy(torch.tensor(2.5)), torch.tensor([2.5]))
    # Zero-size tensors break the descriptor's rule, in eager and traced calls alike.
    with pytest.raises(ValueError, match="has no elements"):
        relu(torch.empty(0, 4))
    with pytest.raises(ValueError, match="has no elements"):
        relu(torch.empty(0, 4, device="meta"))
    # Dtypes the device has none of are named with the rule.
    for dt in (torch.float64, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match=f"{dt}.*float32, float16, bfloat16"):
            copy(torch.zeros(2, 2, dtype=dt))
    # A tensor that requires grad is read without it.
    w = rand(4, 4).requires_grad_()
    assert torch.equal(copy(w), w.detach())
    for t in (rand(5, 3).half(), rand(5, 3).bfloat16(), ints(5, 3, dtype=torch.int8), ints(5, 3, dtype=torch.int16)):
        y = copy(t)
        assert y.dtype == t.dtype and torch.equal(y, t)


def test_cpu_tensors_reach_the_engine_without_an_extra_copy(libraries):
    """The kernel's output is the engine's own array (torch shares its bytes), and inputs
    pass as NumPy views of the tensors' storage."""
    libraries("torch2_ops", "host")
    seen, made = [], []
    real_in, real_out = _torch._engine_tensor, _torch.from_engine

    def spy_in(qualified, i, t):
        a = real_in(qualified, i, t)
        seen.append((a, t))
        return a

    def spy_out(raw):
        a = real_out(raw)
        made.append(a)
        return a

    _torch._engine_tensor, _torch.from_engine = spy_in, spy_out
    try:
        x = rand(32, 64)
        y = torch.ops.torch2_ops.relu_2d(x)
    finally:
        _torch._engine_tensor, _torch.from_engine = real_in, real_out
    (a, t), = seen
    assert a.__array_interface__["data"][0] == t.data_ptr()
    (out,) = made
    assert y.data_ptr() == out.__array_interface__["data"][0]
    assert torch.equal(y, torch.relu(x))


RESIG = """
#include <torch/torch.h>
torch::Tensor f(const torch::Tensor &x{extra}) {{ return torch::abs(x); }}
"""
RESIG_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x{extra}) {{ return torch::empty(x.sizes(), torch::kFloat); }}
NEURON_LIBRARY(resig, m) {{ m.def("f", &s, "f"); }}
"""


@pytest.mark.full
def test_a_namespace_loaded_again_with_another_signature_keeps_torchs(tmp_path):
    """torch keeps an op's schema for the process: a later library whose op takes other
    arguments is said so, and torch.ops keeps serving the earlier one."""
    libs = []
    for version, extra in enumerate(["", ", double a"]):
        d = tmp_path / f"v{version}"
        d.mkdir()
        (d / "f.cpp").write_text(RESIG.format(extra=extra))
        (d / "s.cpp").write_text(RESIG_SHAPE.format(extra=extra))
        if version == 0:
            libs.append(custom_op.load("resig", [d / "f.cpp"], [d / "s.cpp"], build_directory=d))
        else:
            with pytest.warns(UserWarning, match=r"torch.ops.resig.f takes \(torch::Tensor\) in this process"):
                libs.append(custom_op.load("resig", [d / "f.cpp"], [d / "s.cpp"], build_directory=d))
    x = -torch.ones(2, 3)
    assert torch.equal(torch.ops.resig.f(x), torch.ones(2, 3))
    np.testing.assert_array_equal(custom_op.ops.resig.f(x.numpy(), 2.0), np.ones((2, 3), np.float32))
