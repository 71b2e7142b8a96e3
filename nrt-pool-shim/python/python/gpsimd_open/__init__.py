"""gpsimd_open: AWS Neuron GPSIMD custom C++ operators, built and run on an emulated Pool
engine, with the words torch_neuronx users know::

    from gpsimd_open import custom_op
    custom_op.load(name="my_ops", compute_srcs=["relu.cpp"], shape_srcs=["shape.cpp"])
    y = custom_op.ops.my_ops.relu_forward(x)          # NumPy in, NumPy out
    y = torch.ops.my_ops.relu_forward(t)               # when torch is installed

Kernels run in emulated cores (separate processes): a kernel that faults raises
:class:`DeviceFault` and the next call works. ``GPSIMD_OPEN_ISA=host|xtensa`` picks the
backend without editing code; :func:`set_cores` the core count of calls that give none;
``python -m gpsimd_open.run SCRIPT`` runs a script written for torch_neuronx;
``check=`` (or ``GPSIMD_OPEN_CHECK=1``) checks calls for what the device would hide
(:class:`CheckError`).
"""
from ._native import DeviceFault
from ._check import CheckError, CheckWarning
from ._arrays import bfloat16, bfloat16_to_float32
from ._cores import current as get_cores, set_cores
from . import custom_op

__all__ = ["custom_op", "DeviceFault", "CheckError", "CheckWarning", "bfloat16", "bfloat16_to_float32", "set_cores", "get_cores"]
__version__ = "0.1.0"
