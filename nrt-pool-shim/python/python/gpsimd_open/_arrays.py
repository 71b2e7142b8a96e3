"""NumPy arrays to and from the engine (and bfloat16, which NumPy has no dtype for)."""
import numpy as np

_NUMPY = {
    "f32": np.float32,
    "f16": np.float16,
    "i8": np.int8,
    "u8": np.uint8,
    "i16": np.int16,
    "u16": np.uint16,
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
    # bfloat16 comes back as its raw uint16 bits (see bfloat16_to_float32).
    "bf16": np.uint16,
}


class bfloat16:
    """A bfloat16 tensor argument: its bits as a uint16 array. ``bfloat16(x)`` rounds a
    float array to nearest even, as c10 converts; ``bfloat16(bits, raw=True)`` takes bits."""

    def __init__(self, values, raw=False):
        if raw:
            self.bits = np.ascontiguousarray(values, dtype=np.uint16)
        else:
            b = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
            self.bits = np.ascontiguousarray(((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16))

    def __repr__(self):
        return f"bfloat16(shape={self.bits.shape})"


def bfloat16_to_float32(bits):
    """bfloat16 bits (a uint16 array, as bf16 outputs come back) as float32 values."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def dtype_name(dtype):
    """A dtype as the engine names it, from its own names ("f32", "bf16", ...), a NumPy
    dtype of one of them in any spelling (np.float32, "float32", np.dtype("<i4")) or
    :class:`bfloat16`; ValueError naming the dtype for anything else."""
    if dtype is bfloat16:
        return "bf16"
    if isinstance(dtype, str) and dtype in _NUMPY:
        return dtype
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    for name, t in _NUMPY.items():
        if dt is not None and name != "bf16" and np.dtype(t) == dt.newbyteorder("="):
            return name
    known = ", ".join(_NUMPY)
    raise ValueError(f"dtype {dtype!r} has no device type (the device's: {known}, or "
                     "NumPy's of the same; gpsimd_open.bfloat16 for bf16)")


def to_engine(value):
    """A call argument as the native module takes it: C-contiguous native-endian arrays,
    ("bf16", bits) for bfloat16, numbers and device arrays as they are."""
    if isinstance(value, bfloat16):
        return ("bf16", value.bits)
    if isinstance(value, np.ndarray):
        dt = value.dtype
        if dt.byteorder not in ("=", "|", "<" if np.little_endian else ">"):
            dt = dt.newbyteorder("=")
        # Copies only when the array is not already C-ordered and native (Fortran order and
        # strided views are copied; contiguous arrays are passed as they are).
        return np.ascontiguousarray(value, dtype=dt)
    if isinstance(value, np.generic):
        return value.item()
    return value


def from_engine(result):
    """(bytes, dtype name, shape) from the native module as a NumPy array."""
    data, dtype, shape = result
    return data.view(_NUMPY[dtype]).reshape(tuple(shape))
