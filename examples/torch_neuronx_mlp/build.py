# Builds the mlp ops (examples/mlp) as a torch_neuronx project's build step does:
#   python -m gpsimd_open.run build.py          (GPSIMD_OPEN_ISA=xtensa: the Pool image too)
import os

import torch_neuronx  # noqa: F401 - as the project's scripts have it
from torch_neuronx.xla_impl import custom_op

HERE = os.path.dirname(os.path.abspath(__file__))
MLP = os.path.join(HERE, "..", "mlp")

custom_op.load(
    name="mlp_ops",
    compute_srcs=[os.path.join(MLP, "relu.cpp")],
    shape_srcs=[os.path.join(MLP, "shape.cpp")],
    build_directory=os.getcwd(),
)
