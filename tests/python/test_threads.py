"""Calls from many threads, and Ctrl-C during a long kernel, on both backends.
Calls on one library are serialised; calls on different libraries run in parallel; no call
deadlocks (each test bounds its threads' time and fails instead of hanging)."""
import os
import pathlib
import signal
import threading
import time

import numpy as np
import pytest

from conftest import SPIN, SPIN_SHAPE
from gpsimd_open import custom_op

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"
BOUND = 300  # seconds any group of threads may take before the test calls it a hang


def run_threads(n, body):
    """Runs body(i) on n threads at once; returns their exceptions (None where none)."""
    errors = [None] * n
    start = threading.Barrier(n)

    def main(i):
        try:
            start.wait()
            body(i)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors[i] = e

    threads = [threading.Thread(target=main, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + BOUND
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in threads), "threads still running: a deadlock"
    return errors


@pytest.fixture(scope="module", params=["host", "xtensa"])
def isa(request):
    return request.param


@pytest.fixture(scope="module")
def mlp(isa, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"threads_{isa}")
    return custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=d, isa=isa)


@pytest.mark.full
def test_eight_threads_on_one_library(mlp):
    calls = 300

    def body(i):
        rng = np.random.default_rng(i)
        for _ in range(calls):
            x = rng.standard_normal((17, 33)).astype(np.float32)
            np.testing.assert_array_equal(mlp.ops["relu_forward"](x), np.maximum(x, 0))

    errors = run_threads(8, body)
    assert errors == [None] * 8, errors


def test_eight_threads_on_eight_libraries(isa, mlp):
    # Eight loaded libraries, each on an engine of its own (one build, loaded eight times).
    libs = [custom_op.load_library(mlp.path) for _ in range(8)]
    calls = 300 if isa == "host" else 20

    def body(i):
        rng = np.random.default_rng(100 + i)
        for _ in range(calls):
            x = rng.standard_normal((9, 5)).astype(np.float32)
            got = libs[i].ops["axpb"](x, 2.0, float(i))
            np.testing.assert_array_equal(got, x * np.float32(2) + np.float32(i))

    errors = run_threads(8, body)
    assert errors == [None] * 8, errors


def test_device_arrays_and_drops_from_threads(mlp):
    def body(i):
        for k in range(40):
            x = np.full((4, 4), float(i * 100 + k), np.float32)
            d = mlp.to_device(x)
            np.testing.assert_array_equal(d.numpy(), x)
            np.testing.assert_array_equal(mlp.ops["relu_forward"](d), x)
            del d

    errors = run_threads(8, body)
    assert errors == [None] * 8, errors


@pytest.mark.full
def test_loading_from_threads(isa, tmp_path):
    custom_op.load("mlp_ld", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path, isa=isa)
    path = tmp_path / ("libmlp_ld.so" if isa == "host" else "libmlp_ld.pool")

    def body(i):
        lib = custom_op.load_library(path)
        x = np.arange(6, dtype=np.float32) - i
        np.testing.assert_array_equal(lib.ops["relu_forward"](x), np.maximum(x, 0))

    errors = run_threads(4, body)
    assert errors == [None] * 4, errors


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt in this test, as in an interactive Python: a process
    started in the background by a shell without job control (CI runners, `cmd &` in a
    script) inherits SIGINT ignored, and Python then leaves it ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_stops_a_long_kernel_and_the_next_call_works(isa, tmp_path, ctrl_c_raises):
    (tmp_path / "k.cpp").write_text(SPIN)
    (tmp_path / "s.cpp").write_text(SPIN_SHAPE)
    lib = custom_op.load("spin_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path, isa=isa)
    x = np.array([-1.5, 2.0], np.float32)
    np.testing.assert_array_equal(lib.ops["quick"](x), np.abs(x))
    for _ in range(2):
        timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
        started = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            lib.ops["spin"](x)
        took = time.monotonic() - started
        timer.cancel()
        assert took < 0.5 + 1.0, f"KeyboardInterrupt after {took:.2f} s"
        np.testing.assert_array_equal(lib.ops["quick"](x), np.abs(x))
