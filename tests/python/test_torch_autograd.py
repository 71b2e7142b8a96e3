"""The torch path (make test-torch installs torch into target/venv): ops registered as
torch.ops.NS.OP on CPU tensors, and a small MLP whose ReLU is the custom op trains for a
few steps with the same losses as the same MLP with torch.relu."""
import pathlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from gpsimd_open import custom_op  # noqa: E402

MLP = pathlib.Path(__file__).resolve().parents[2] / "examples" / "mlp"


@pytest.fixture(scope="module", autouse=True)
def mlp_ops(tmp_path_factory):
    return custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path_factory.mktemp("t"))


class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.ops.mlp_ops.relu_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.ops.mlp_ops.relu_backward(grad, x)


def make_mlp(relu):
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(16, 32)
            self.fc2 = torch.nn.Linear(32, 4)

        def forward(self, x):
            return self.fc2(relu(self.fc1(x)))

    return Net()


def train(relu, data, target, steps):
    """The losses of `steps` SGD steps of the MLP with `relu`."""
    net = make_mlp(relu)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_torch_ops_are_registered_on_cpu_tensors():
    x = torch.randn(5, 7)
    torch.testing.assert_close(torch.ops.mlp_ops.relu_forward(x), torch.relu(x), rtol=0, atol=0)


def test_a_small_mlp_trains_with_the_custom_relu_as_with_torch_relu():
    data = torch.randn(64, 16, generator=torch.Generator().manual_seed(1))
    target = torch.randn(64, 4, generator=torch.Generator().manual_seed(2))
    losses = [train(relu, data, target, 5) for relu in (Relu.apply, torch.relu)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=0, atol=1e-5)
    assert losses[0][-1] < losses[0][0]


def test_the_mlp_trains_the_same_with_the_relu_on_xtensa_cores(tmp_path):
    """The same autograd Function, with the op's Pool image on emulated Xtensa cores (the
    newest load of a namespace serves torch.ops)."""
    custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path, isa="xtensa")
    data = torch.randn(32, 16, generator=torch.Generator().manual_seed(3))
    target = torch.randn(32, 4, generator=torch.Generator().manual_seed(4))
    losses = [train(relu, data, target, 3) for relu in (Relu.apply, torch.relu)]
    np.testing.assert_allclose(losses[0], losses[1], rtol=0, atol=1e-5)
