"""Every function of the Custom C++ Operators reference guide against an independent NumPy
reference, run as an op author runs them: `nrt-pool run LIB api_ops::OP --arg ...`, on host
cores, on Xtensa cores, and on host cores with checking mode on, which finds nothing in them.

Integers and float32 +, -, *, / are exact; float32 transcendental functions allow a few
ulps (the device's and NumPy's float32 libm differ), float16 and bfloat16 one unit in their
last place (the device computes in float and rounds once, as c10 does; NumPy's float16
rounds after each operation).
"""
import os

import numpy as np
import pytest

from conftest import NRT_POOL, Checked, run

RNG = np.random.default_rng(20261201)

INT_TYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "i32": np.int32, "i64": np.int64}
FLOAT_TYPES = {"f32": np.float32, "f16": np.float16}


def bf16_bits(x32):
    """float32 -> bfloat16 bits, round to nearest even (as c10 converts)."""
    b = np.asarray(x32, np.float32).view(np.uint32).astype(np.uint64)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_float(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def launch(lib, tmp_path, op, *args, cores=None, check=True):
    """Runs api_ops::op; arrays become .npy files (bf16 as (\"bf16\", bits)); returns the
    output array, or the completed process when check is False."""
    argv = []
    for i, a in enumerate(args):
        if isinstance(a, tuple):  # ("bf16", bits)
            path = tmp_path / f"a{i}.npy"
            np.save(path, a[1])
            argv += ["--arg", f"{a[0]}:{path}"]
        elif isinstance(a, np.ndarray):
            path = tmp_path / f"a{i}.npy"
            np.save(path, a)
            argv += ["--arg", str(path)]
        else:
            argv += ["--arg", str(a)]
    out = tmp_path / "out.npy"
    if out.exists():
        out.unlink()
    extra = ["--cores", str(cores)] if cores else []
    env = dict(os.environ, GPSIMD_OPEN_CHECK="1") if isinstance(lib, Checked) else None
    p = run(NRT_POOL, "run", lib, f"api_ops::{op}", *argv, "--out", out, *extra, check=check, env=env)
    if not check:
        return p
    return np.load(out)


def sample(dtype, shape=(6, 7), lo=-50, hi=50):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(lo, info.min), min(hi, info.max), size=shape, endpoint=True).astype(dtype)
    return RNG.uniform(lo / 10, hi / 10, size=shape).astype(dtype)


# ---- unary ----

UNARY = {0: "abs", 1: "ceil", 2: "floor", 3: "sin", 4: "cos", 5: "tan", 6: "log", 7: "log2", 8: "log10", 9: "exp"}


@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("fn", sorted(UNARY))
@pytest.mark.parametrize("name", ["f32", "f16", "bf16", "i32", "i8"])
def test_unary(api_lib, tmp_path, name, fn, form):
    func = getattr(np, UNARY[fn])
    positive = fn in (6, 7, 8)
    lo, hi = (1, 40) if positive else (-40, 40)
    if name == "bf16":
        x32 = sample(np.float32, lo=lo, hi=hi)
        bits = bf16_bits(x32)
        got = launch(api_lib, tmp_path, "unary", ("bf16", bits), fn, form)
        want = bf16_float(bf16_bits(func(bf16_float(bits))))
        np.testing.assert_allclose(bf16_float(got), want, rtol=2 ** -7, atol=1e-6)
        return
    dtype = {**INT_TYPES, **FLOAT_TYPES}[name]
    x = sample(dtype, lo=lo, hi=hi)
    got = launch(api_lib, tmp_path, "unary", x, fn, form)
    if fn <= 2:
        want = func(x) if np.issubdtype(dtype, np.floating) else (np.abs(x) if fn == 0 else x)
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(got, want)
        return
    if np.issubdtype(dtype, np.integer):
        assert got.dtype == np.float32, "a float function of integers is Float"
        want = func(x.astype(np.float32))
    else:
        want = func(x.astype(np.float32)).astype(dtype)
    rtol = 4e-7 * 8 if dtype != np.float16 else 2 ** -10
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("name", ["i8", "u8", "i16", "i32", "i64"])
def test_bitwise_not(api_lib, tmp_path, name):
    x = sample(INT_TYPES[name], lo=-128, hi=127)
    for form in (0, 1):
        np.testing.assert_array_equal(launch(api_lib, tmp_path, "unary", x, 10, form), np.invert(x))


# ---- tensor-tensor ----

@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("name", ["f32", "f16", "i32", "i64", "i16", "i8", "u8"])
@pytest.mark.parametrize("fn", [0, 1, 2, 3, 4, 5, 6])
def test_binary(api_lib, tmp_path, name, fn, form):
    dtype = {**INT_TYPES, **FLOAT_TYPES}[name]
    is_int = np.issubdtype(dtype, np.integer)
    if fn in (5, 6) and not is_int:
        p = launch(api_lib, tmp_path, "binary", sample(dtype), sample(dtype), fn, form, check=False)
        assert p.returncode == 3 and b"must be of integral types" in p.stderr
        return
    a = sample(dtype, lo=-9, hi=9) if fn == 4 else sample(dtype)
    b = sample(dtype, lo=0, hi=4) if fn == 4 else sample(dtype)
    if fn == 3:
        b[b == 0] = 3
    got = launch(api_lib, tmp_path, "binary", a, b, fn, form)
    with np.errstate(over="ignore"):
        if fn == 0:
            want = a + (dtype(2) * b) if is_int else (a.astype(np.float32) + np.float32(2) * b.astype(np.float32)).astype(dtype)
        elif fn == 1:
            want = a - (dtype(3) * b) if is_int else (a.astype(np.float32) - np.float32(3) * b.astype(np.float32)).astype(dtype)
        elif fn == 2:
            want = a * b if is_int else (a.astype(np.float32) * b.astype(np.float32)).astype(dtype)
        elif fn == 3:
            want = a.astype(np.float32) / b.astype(np.float32)
            want = want if is_int else want.astype(dtype)
        elif fn == 4:
            want = np.power(a, b) if is_int else np.power(a.astype(np.float32), b.astype(np.float32)).astype(dtype)
        else:
            want = (a & b) if fn == 5 else (a | b)
    if fn == 4 and not is_int:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5 if dtype == np.float32 else 2 ** -10)
    else:
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_array_equal(got, want)


def test_binary_shapes_and_dtypes_must_match(api_lib, tmp_path):
    a = sample(np.float32)
    p = launch(api_lib, tmp_path, "binary", a, sample(np.float32, shape=(7, 6)), 0, 0, check=False)
    assert p.returncode == 3 and b"shapes differ" in p.stderr and b"no broadcasting" in p.stderr
    p = launch(api_lib, tmp_path, "binary", a, sample(np.float16), 2, 0, check=False)
    assert p.returncode == 3 and b"dtypes differ (Float and Half)" in p.stderr


# ---- tensor-scalar and scalar-tensor ----

@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("fn", range(10))
@pytest.mark.parametrize("name,scalar", [("f32", 2.5), ("f16", 1.5), ("i32", 3), ("i64", 5), ("u8", 6), ("i32", 2.5)])
def test_with_scalar(api_lib, tmp_path, name, scalar, fn, form):
    dtype = {**INT_TYPES, **FLOAT_TYPES}[name]
    is_int = np.issubdtype(dtype, np.integer)
    bitwise = fn in (5, 6, 8, 9)
    if bitwise and not is_int:
        p = launch(api_lib, tmp_path, "with_scalar", sample(dtype), scalar, fn, form, check=False)
        assert p.returncode == 3 and b"integral" in p.stderr
        return
    if bitwise and isinstance(scalar, float):
        scalar = int(scalar)
    a = sample(dtype, lo=0 if fn in (4, 7) else -50, hi=5 if fn in (4, 7) else 50)
    got = launch(api_lib, tmp_path, "with_scalar", a, scalar, fn, form)
    to_float = is_int and (isinstance(scalar, float) or fn == 3)
    ct = np.float32 if (to_float or not is_int) else np.int64
    x = a.astype(ct)
    s = ct(scalar)
    with np.errstate(over="ignore"):
        want = {
            0: lambda: x + s,
            1: lambda: x - s,
            2: lambda: x * s,
            3: lambda: x / s,
            4: lambda: np.power(x, s),
            5: lambda: x & s,
            6: lambda: x | s,
            7: lambda: np.power(s, x),
            8: lambda: x & s,
            9: lambda: x | s,
        }[fn]()
    want = want.astype(np.float32 if to_float else dtype)
    if fn in (4, 7) and not is_int:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5 if dtype == np.float32 else 2 ** -10)
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("form", [0, 1])
@pytest.mark.parametrize("name,lo,hi", [("f32", -1.5, 2.25), ("i32", -7, 9), ("i8", -3, 3), ("f16", -0.5, 0.5)])
def test_clamp(api_lib, tmp_path, name, lo, hi, form):
    dtype = {**INT_TYPES, **FLOAT_TYPES}[name]
    x = sample(dtype)
    got = launch(api_lib, tmp_path, "clamp", x, lo, hi, form)
    np.testing.assert_array_equal(got, np.clip(x, dtype(lo), dtype(hi)))


# ---- factories ----

@pytest.mark.parametrize("name", ["f32", "f16", "i32", "i64", "i16", "i8", "u8", "bf16"])
@pytest.mark.parametrize("which", range(5))
def test_factories(api_lib, tmp_path, name, which):
    shape = (5, 7)
    if name == "bf16":
        like = ("bf16", np.zeros(shape, np.uint16))
        dtype = np.uint16
    else:
        dtype = {**INT_TYPES, **FLOAT_TYPES}[name]
        like = np.zeros(shape, dtype)
    got = launch(api_lib, tmp_path, "factory", like, which, 3.0)
    value = {0: 3, 1: 3, 2: 0, 3: 1}.get(which)
    if which == 4:
        want = np.eye(5, 7)
    else:
        want = np.full(shape, value)
    if name == "bf16":
        np.testing.assert_array_equal(bf16_float(got), want.astype(np.float32))
    else:
        assert got.dtype == dtype and got.shape == shape
        np.testing.assert_array_equal(got, want.astype(dtype))


# ---- accessors, Half/BFloat16, multicore ----

@pytest.mark.parametrize("which", range(5))
@pytest.mark.parametrize("shape", [(3, 5), (40, 130)])
def test_accessors_copy_exactly(api_lib, tmp_path, which, shape):
    x = sample(np.float32, shape=shape)
    got = launch(api_lib, tmp_path, "accessors", x, which)
    np.testing.assert_array_equal(got, x * np.float32(2))


@pytest.mark.parametrize("bf16", [0, 1])
def test_half_and_bfloat16_arithmetic(api_lib, tmp_path, bf16):
    x = sample(np.float32, shape=(64,), lo=-100, hi=100)
    got = launch(api_lib, tmp_path, "half_math", x, bf16)
    if bf16:
        r = lambda v: bf16_float(bf16_bits(v))
        v = r(x)
        want = r(r(r(v * r(np.float32(3))) + r(np.float32(1))) / r(np.float32(2)))
    else:
        h = np.float16
        v = x.astype(h)
        want = ((v * h(3) + h(1)) / h(2)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.breaks_check_rules
@pytest.mark.parametrize("cores", [1, 8])
def test_cpu_id_and_count(api_lib, tmp_path, cores):
    got = launch(api_lib, tmp_path, "cpu_info", np.zeros(4, np.float32), cores=cores)
    pairs = got.reshape(8, 2)[:cores]
    np.testing.assert_array_equal(pairs[:, 0], np.arange(cores))
    np.testing.assert_array_equal(pairs[:, 1], np.full(cores, cores))


@pytest.mark.breaks_check_rules
def test_standard_accessors_on_many_cores_are_reported(api_lib, tmp_path):
    x = sample(np.float32)
    p = launch(api_lib, tmp_path, "accessors", x, 0, cores=8, check=False)
    assert p.returncode == 0
    assert b"warning: kernel 'api_ops::accessors': accessor() on argument 0 while 8 cores run" in p.stderr


# ---- the guide's rules, broken: device faults that say which ----

@pytest.mark.parametrize(
    "which,message",
    [
        (0, b"read() past the end of a read stream accessor (42 elements)"),
        (1, b"tcm_to_tensor: elements [40, 44) outside a tensor of 42 elements"),
        (2, b"accessor<Int> on argument 0, a tensor of Float"),
        (3, b": shapes differ (argument 0: rank 2, 42 elements"),
        (4, b"read_stream_accessor opened while a write stream accessor is open on the same tensor (coherence policy COHERENT)"),
        (5, b"tensor_to_tcm: 128 bytes do not fit the TCM buffer"),
        (6, b"accessor index 6 out of range for a dimension of size 6"),
    ],
)
def test_broken_rules_are_device_faults(api_lib, tmp_path, which, message):
    p = launch(api_lib, tmp_path, "misuse", sample(np.float32), which, check=False)
    assert p.returncode == 3, p.stderr
    assert b"device fault in kernel 'misuse'" in p.stderr and message in p.stderr, p.stderr
    assert not (tmp_path / "out.npy").exists()
