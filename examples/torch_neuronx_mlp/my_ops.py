# The custom ReLU as an autograd function over the library's forward and backward ops.
import torch
import torch_neuronx  # noqa: F401
from torch_neuronx.xla_impl import custom_op

custom_op.load_library("libmlp_ops.so")


class Relu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.ops.mlp_ops.relu_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return torch.ops.mlp_ops.relu_backward(grad, x)
