from os import PathLike
from typing import Any, Iterable, Sequence

import numpy as np

def load(
    name: str,
    compute_srcs: Iterable[str | PathLike[str]],
    shape_srcs: Iterable[str | PathLike[str]],
    build_directory: str | PathLike[str] | None = ...,
    multicore: bool = ...,
    verbose: bool = ...,
    isa: str | None = ...,
    extra_cflags: Iterable[str] | None = ...,
    extra_include_paths: Iterable[str | PathLike[str]] | None = ...,
    check: bool | str | None = ...,
    all_cores_stdio: bool | None = ...,
    debug: int | None = ...,
    data_model: str | None = ...,
    suppress: str | PathLike[str] | None = ...,
) -> Library: ...
def load_library(
    path: str | PathLike[str],
    isa: str | None = ...,
    check: bool | str | None = ...,
    all_cores_stdio: bool | None = ...,
    debug: int | None = ...,
    suppress: str | PathLike[str] | None = ...,
) -> Library: ...

def register_autograd(
    forward: Any,
    backward: Any,
    *,
    saved: str | Any = ...,
    grad_of: int | Sequence[int] | None = ...,
) -> None: ...

def register_fake(op: Any, fake: Any) -> None: ...

class DeviceArray:
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> str: ...
    def numpy(self) -> np.ndarray: ...

class Op:
    kinds: tuple[str, ...]
    def __call__(
        self, *args: Any, cores: int | None = ..., out: DeviceArray | None = ..., check: bool | str | None = ...,
        debug: int | None = ..., profile: bool = ...
    ) -> Any: ...

class Library:
    ops: dict[str, Op]
    @property
    def path(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def multicore(self) -> bool: ...
    @property
    def cflags(self) -> list[str]: ...
    def suppressions(self) -> list[dict[str, Any]]: ...
    timeout: float
    all_cores_stdio: bool
    debug: int | None
    check: bool | str | None
    def device_array(self, shape: Sequence[int], dtype: Any = ...) -> DeviceArray: ...
    def to_device(self, array: Any) -> DeviceArray: ...
    def __getattr__(self, name: str) -> Op: ...

class _Namespace:
    def __getattr__(self, op: str) -> Op: ...

class _Ops:
    def __getattr__(self, namespace: str) -> _Namespace: ...

ops: _Ops
