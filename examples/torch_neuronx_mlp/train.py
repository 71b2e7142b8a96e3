# A small classifier trained with the custom ReLU, written as for torch_neuronx (XLA device,
# mark_step, xm.save); the only change for the emulator is the device string (xla_device()).
#   python -m gpsimd_open.run build.py && python -m gpsimd_open.run train.py [STEPS]
import os
import sys

import torch
import torch_xla.core.xla_model as xm

from my_ops import Relu

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
FEATURES, HIDDEN, CLASSES, BATCH = 32, 24, 4, 16


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(FEATURES, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        return torch.log_softmax(self.fc2(Relu.apply(self.fc1(x))), dim=1)


def batches(steps):
    """A fixed synthetic task: the class is the quarter of the input's first feature."""
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(BATCH, FEATURES, generator=g)
        y = ((x[:, 0] + 2).clamp(0, 3.999)).long()
        yield x, y


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    loss_fn = torch.nn.NLLLoss()
    model.train()
    for step, (x, y) in enumerate(batches(STEPS)):
        optimizer.zero_grad()
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if step % 10 == 0 or step == STEPS - 1:
            print(f"step {step} loss {loss.detach().to('cpu').item():.6f}")
    os.makedirs("checkpoints", exist_ok=True)
    xm.save({"state_dict": model.state_dict()}, "checkpoints/checkpoint.pt")
    print("saved checkpoints/checkpoint.pt")


if __name__ == "__main__":
    main()
