"""Under load, in the bounded form make test runs (make soak runs the full soak):
many launches with the process's resources counted, a core killed mid-launch, and twenty
`nrt-pool run` processes at once."""
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import soak
from conftest import NRT_POOL, SPIN, SPIN_SHAPE, run
from gpsimd_open import DeviceFault, custom_op

LAUNCHES = {"host": 3000, "xtensa": 300}


@pytest.mark.full
@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_bounded_soak_is_exact_and_leaks_nothing(isa, tmp_path):
    import gc

    gc.collect()  # other tests' libraries in this worker end now, not during the soak
    first, last, _ = soak.soak(soak.load(isa, tmp_path), LAUNCHES[isa], warmup=LAUNCHES[isa] // 10)
    assert soak.over_bounds(first, last) == [], (first, last)
    assert last["children"] > 0, "the libraries' cores run"


def busiest(pids):
    """The pid among `pids` that used the most CPU over a short look (the spinning core)."""
    before = {p: soak.cpu_ticks(p) for p in pids}
    time.sleep(0.3)
    return max(pids, key=lambda p: soak.cpu_ticks(p) - before[p])


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_core_killed_mid_launch_is_a_fault_and_the_next_launch_works(isa, tmp_path):
    (tmp_path / "k.cpp").write_text(SPIN)
    (tmp_path / "s.cpp").write_text(SPIN_SHAPE)
    others = set(soak.children())
    lib = custom_op.load("spin_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path, isa=isa)
    x = np.array([-1.5, 2.0, -0.0], np.float32)
    np.testing.assert_array_equal(lib.ops["quick"](x), np.abs(x))
    for attempt in range(2):
        killed = []

        def kill():
            time.sleep(0.5)
            mine = [p for p in soak.children() if p not in others]
            victim = busiest(mine)
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

        killer = threading.Thread(target=kill)
        killer.start()
        started = time.monotonic()
        with pytest.raises(DeviceFault, match="SIGKILL"):
            lib.ops["spin"](x)
        killer.join()
        assert killed, "no core was killed"
        assert time.monotonic() - started < 30
        for _ in range(3):
            np.testing.assert_array_equal(lib.ops["quick"](x), np.abs(x))
        assert killed[0] not in soak.children(), "the killed core was not reaped"


@pytest.mark.full
@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_twenty_nrt_pool_runs_at_once_each_get_their_own_device(isa, tmp_path):
    lib = tmp_path / ("libmlp_ops.so" if isa == "host" else "libmlp_ops.pool")
    run(NRT_POOL, "build", "--name", "mlp_ops", "--compute", soak.MLP / "relu.cpp", "--shape",
        soak.MLP / "shape.cpp", "--build-directory", tmp_path, *(["--device-image"] if isa == "xtensa" else []))
    procs = []
    for i in range(20):
        x = (np.arange(4096, dtype=np.float32) - 2048) * np.float32(i + 1) / 64
        np.save(tmp_path / f"x{i}.npy", x)
        procs.append(subprocess.Popen(
            [str(NRT_POOL), "run", str(lib), "mlp_ops::axpb", "--arg", str(tmp_path / f"x{i}.npy"), "--arg", str(i),
             "--arg", "0.5", "--out", str(tmp_path / f"y{i}.npy")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, (i, out, err)
    for i in range(20):
        x = np.load(tmp_path / f"x{i}.npy")
        np.testing.assert_array_equal(np.load(tmp_path / f"y{i}.npy"), x * np.float32(i) + np.float32(0.5))


ENDS_ABRUPTLY = """
import os, sys
import numpy as np
from gpsimd_open import custom_op
lib = custom_op.load_library(sys.argv[1], isa="xtensa")
x = np.arange(64, dtype=np.float32)
np.testing.assert_array_equal(lib.ops["axpb"](x, 2.0, 1.0), x * 2 + 1)
lib.ops["axpb"](x, 2.0, 1.0, profile=True)
lib.ops["axpb"](x, 2.0, 1.0, check="race")
os._exit(0)
"""


def test_a_process_that_ends_without_closing_its_library_leaves_nothing_behind(tmp_path):
    """Python's exit does not drop a loaded library: the Xtensa cores' monitors are socket
    pairs (no path), and the profile's and the race check's scratch folders left by an
    ended process are removed by the next one that makes such a folder."""
    run(NRT_POOL, "build", "--name", "mlp_ops", "--compute", soak.MLP / "relu.cpp", "--shape",
        soak.MLP / "shape.cpp", "--build-directory", tmp_path, "--device-image")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    (tmp_path / "ends.py").write_text(ENDS_ABRUPTLY)

    def one_process():
        p = subprocess.run([sys.executable, str(tmp_path / "ends.py"), str(tmp_path / "libmlp_ops.pool")],
                           env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        left = sorted(e.name for e in scratch.iterdir())
        assert all(n.startswith("nrt-pool-qemu.") for n in left), left
        return p, left

    _, first = one_process()
    assert first, "the profile and the race check made no scratch folder"
    _, second = one_process()
    assert not set(first) & set(second), (first, second)
    pids = {n.split(".")[2] for n in second}
    assert len(pids) == 1, second
