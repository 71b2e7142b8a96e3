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
    stack: list[tuple[str | None, int | None, str | None]]
    """The op author's frames at the fault, innermost first: (file, line, function)."""

class set_cores:
    """Sets the core count of op calls that give no ``cores=`` (None: each library's
    default); a context manager restoring the previous count."""
    def __init__(self, n: int | None) -> None: ...
    def __enter__(self) -> set_cores: ...
    def __exit__(self, *exc: object) -> bool: ...

def get_cores() -> int | None: ...

__version__: str
