from . import custom_op as custom_op
from ._arrays import bfloat16 as bfloat16, bfloat16_to_float32 as bfloat16_to_float32

class DeviceFault(RuntimeError):
    """A kernel, shape function or library start faulted on the emulated engine."""
    kernel: str
    core: int
    kind: str
    address: int | None
    stdout: bytes
    stderr: bytes

__version__: str
