"""gdb on Xtensa cores shows a function's arguments as host cores do (D102): a
breakpoint on a helper stops after its prologue stored the arguments, and the stop at the
kernel's entry shows the op's arguments, in -O0 and default builds; `bt` names the
caller, `finish` out of a helper prints the value it returned, and `next` steps over a
call. Batch sessions on both backends print the same values."""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from conftest import NRT_POOL, run
from test_diagnostics import wait_for_session

pytestmark = pytest.mark.skipif(shutil.which("xtensa-lx106-elf-g++") is None,
                                reason="UNSUPPORTED: xtensa-lx106-elf-g++ is not installed")

KERNEL = r"""
#include <torch/torch.h>
__attribute__((noinline)) static void helper(float *p, float factor, long n) {
    for (long i = 0; i < n; i++) p[i] *= factor;
}
__attribute__((noinline)) static float total(const float *p, long n) {
    float s = 0;
    for (long i = 0; i < n; i++) s += p[i];
    return s;
}
torch::Tensor scale(const torch::Tensor &x, double factor) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    float buf[64];
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    for (int i = 0; i < 64; i++) buf[i] = in[i];
    helper(buf, (float)factor, 64);
    float t = total(buf, 64);
    float u = total(buf + 32, 32);
    for (int i = 0; i < 64; i++) out[i] = buf[i];
    if (t + u < 0) out[0] = 0;
    return y;
}
"""
SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x, double f) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(gdb_ops, m) { m.def("scale", &s, "scale"); }
"""
# Temporary breakpoints: once both have stopped, `next` steps over the second call of total()
# (the session's own breakpoints, at the entry and the end, stay).
SESSION = ["-batch", "-ex", "info args", "-ex", "tbreak helper", "-ex", "tbreak total", "-ex", "continue",
           "-ex", "print factor", "-ex", "print n", "-ex", "bt", "-ex", "continue", "-ex", "finish",
           "-ex", "next", "-ex", "next", "-ex", "continue"]


@pytest.fixture(scope="module", params=["-O0", "default"])
def built(tmp_path_factory, request):
    d = tmp_path_factory.mktemp("gdb" + request.param.replace("-", ""))
    (d / "k.cpp").write_text(KERNEL)
    (d / "s.cpp").write_text(SHAPE)
    flags = ["--cflag=-O0"] if request.param == "-O0" else []
    run(NRT_POOL, "build", "--name", "gdb_ops", "--compute", d / "k.cpp", "--shape", d / "s.cpp",
        "--build-directory", d, "--device-image", *flags)
    np.save(d / "x.npy", np.arange(64, dtype=np.float32))
    return d, request.param


def session(d, lib):
    host = lib.endswith(".so")
    env = dict(os.environ, GPSIMD_OPEN_GDB="0") if not host else dict(os.environ)
    if host:
        env.pop("GPSIMD_OPEN_GDB", None)
    launch = subprocess.Popen(
        [str(a) for a in [NRT_POOL, "run", d / lib, "gdb_ops::scale", "--arg", d / "x.npy", "--arg", "2.5",
                          "--out", d / f"y-{lib}.npy"] + (["--gdb=0"] if host else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_session(launch.stderr)
        g = subprocess.run([str(NRT_POOL), "gdb", str(d / lib), "0", "--", *SESSION], capture_output=True,
                           text=True, timeout=300)
        assert g.returncode == 0, g.stdout + g.stderr
        assert launch.wait(timeout=120) == 0
    finally:
        launch.kill()
    np.testing.assert_array_equal(np.load(d / f"y-{lib}.npy"), np.arange(64, dtype=np.float32) * 2.5)
    return g.stdout


@pytest.mark.full
@pytest.mark.parametrize("lib", ["libgdb_ops.so", "libgdb_ops.pool"])
def test_a_helpers_arguments_print_as_on_host_cores(built, lib):
    d, build = built
    out = session(d, lib)
    assert re.search(r"[Bb]reakpoint \d, helper \(p=0x[0-9a-f]+, factor=2\.5, n=(64|<optimized out>)\)", out), out
    # print factor, print n: the values (an optimised build may drop n: on both backends).
    assert re.search(r"^\$1 = 2\.5$", out, re.M), out
    # The stop at the kernel's entry: the op's arguments, as the caller passed them (in a
    # default build too: on Xtensa cores the stop goes after the argument stores, D102).
    assert re.search(r"^factor = 2\.5$", out, re.M), out
    # bt in the helper: the kernel is its caller.
    assert re.search(r"^#1\s+(0x[0-9a-f]+ in )?scale\b", out, re.M), out
    if build == "-O0":
        assert re.search(r"^\$2 = 64$", out, re.M), out
        # finish out of total(): the value it returned (2.5 * (0 + ... + 63)). Not in an
        # optimised build: GCC may clone a static function and give the clone its own
        # calling convention (on i386 a float comes back in an SSE register), which gdb
        # cannot know.
        assert re.search(r"^Value returned is \$3 = 5040$", out, re.M), out
        # finish returns to the call's line; then next, and next over the second call, which
        # it does not enter.
        lines = [l.split("\t", 1)[1].strip() for l in out.splitlines() if re.match(r"^\d+\t", l)]
        assert lines[-3:] == ["float t = total(buf, 64);", "float u = total(buf + 32, 32);",
                              "for (int i = 0; i < 64; i++) out[i] = buf[i];"], out


# A kernel that begins with an inlined call (get_dst_tensor(), the multicore idiom): in a
# default build GCC schedules the argument stores among its code (D116).
DST_FIRST = r"""
#include <torch/torch.h>
torch::Tensor scale(const torch::Tensor &x, double factor) {
    torch::Tensor out = get_dst_tensor();
    auto o = out.accessor<float, 1>();
    auto i = x.accessor<float, 1>();
    for (int k = 0; k < 64; k++) o[k] = i[k] * (float)factor;
    return out;
}
"""


def test_break_on_a_default_built_kernel_stops_in_the_kernel_with_its_arguments(tmp_path):
    (tmp_path / "k.cpp").write_text(DST_FIRST)
    (tmp_path / "s.cpp").write_text(SHAPE)
    run(NRT_POOL, "build", "--name", "gdb_ops", "--compute", tmp_path / "k.cpp", "--shape", tmp_path / "s.cpp",
        "--build-directory", tmp_path, "--device-image")
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    env = dict(os.environ, GPSIMD_OPEN_GDB="0")
    launch = subprocess.Popen(
        [str(a) for a in [NRT_POOL, "run", tmp_path / "libgdb_ops.pool", "gdb_ops::scale", "--arg",
                          tmp_path / "x.npy", "--arg", "2.5", "--out", tmp_path / "y.npy"]],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_session(launch.stderr)
        g = subprocess.run([str(NRT_POOL), "gdb", str(tmp_path / "libgdb_ops.pool"), "0", "--", "-batch",
                            "-ex", "info args", "-ex", "break scale", "-ex", "info breakpoints", "-ex", "continue"],
                           capture_output=True, text=True, timeout=300)
        assert g.returncode == 0, g.stdout + g.stderr
        assert launch.wait(timeout=120) == 0
    finally:
        launch.kill()
    out = g.stdout
    line = next(n for n, t in enumerate(DST_FIRST.split("\n"), 1) if "get_dst_tensor()" in t)
    # The session's stop: in the kernel, not in the inlined get_dst_tensor (ATen.h).
    assert re.search(rf"^Breakpoint 1, (0x[0-9a-f]+ in )?scale \(x=\.\.\., factor=2\.5\) at .*k\.cpp:{line}$", out,
                     re.M), out
    assert re.search(r"^factor = 2\.5$", out, re.M) and "in get_dst_tensor ()" not in out and "ATen.h" not in out, out
    # A user's `break scale` lands where the session stopped: the kernel's line, after the
    # argument stores (one address for both breakpoints).
    (session,) = re.findall(r"^1\s+breakpoint\s+keep\s+y\s+(0x[0-9a-f]+) in scale", out, re.M)
    (user,) = re.findall(rf"^3\s+breakpoint\s+keep\s+y\s+(0x[0-9a-f]+) in scale.* at .*k\.cpp:{line}$", out, re.M)
    assert session == user, out
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), np.arange(64, dtype=np.float32) * 2.5)
