"""Seeing inside a kernel: fault reports name the source line and its callers on
both backends, from the library's DWARF (host builds) or the Pool image's (Xtensa cores,
whose board walks the register windows)."""
import os
import pathlib
import re
import subprocess
import threading
import time

import numpy as np
import pytest

from conftest import NRT_POOL
from gpsimd_open import DeviceFault, custom_op

KERNELS = """
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>

// Each core copies its part through TCM; the last core's part runs past the end when the
// element count does not divide by the core count (the guide's multicore sample's bug).
static void copy_in(const torch::Tensor &x, float *tcm, size_t at, size_t n) {
    auto in = x.tcm_accessor();
    in.tensor_to_tcm<float>(tcm, at, n);  // @copy
}
torch::Tensor tiles(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel()), cores = get_cpu_count(), id = get_cpu_id();
    size_t part = (n + cores - 1) / cores;
    float *tcm = (float *)torch::neuron::tcm_malloc(sizeof(float) * part);
    copy_in(x, tcm, id * part, part);  // @tiles
    auto out = y.tcm_accessor();
    out.tcm_to_tensor<float>(tcm, id * part, part);
    torch::neuron::tcm_free(tcm);
    return y;
}

__attribute__((noinline)) static void fill_past(float *p, size_t n) {
    for (size_t i = 0; i < n + 4096; i++) p[i] = 1.0f;  // @fill
}
torch::Tensor past_end(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    auto out = y.accessor<float, 1>();
    fill_past(&out[0], size_t(x.numel()));  // @past_end
    return y;
}

torch::Tensor asserts(const torch::Tensor &x) {
    assert(x.numel() == 3);  // @assert
    return torch::abs(x);
}

__attribute__((noinline)) static int32_t divide(int32_t a, int32_t b) {
    return a / b;  // @divide
}
torch::Tensor divides(const torch::Tensor &x) {
    int32_t q = divide(7, int32_t(x.numel()) - 8);  // @divides
    return torch::full({1}, float(q), torch::kFloat);
}

// Recursion that asserts at its bottom: its callers' frames lie in the register file and,
// deeper, on the stack (Xtensa cores spill register windows there).
__attribute__((noinline)) static int down(int n, volatile int *up) {
    volatile int pad[4];
    pad[0] = n + (up ? up[0] : 0);
    assert(n > 0 || pad[0] < 0);  // @bottom
    return down(n - 1, pad) + pad[0];  // @down
}
torch::Tensor deep(const torch::Tensor &x) {
    return torch::full({1}, float(down(int(x.numel()), nullptr)), torch::kFloat);  // @deep
}

torch::Tensor fine(const torch::Tensor &x) { return torch::abs(x); }

// Never returns (a launch deadline stops it).
__attribute__((noinline)) static void spin_here(volatile int *flag) {
    while (*flag == 0) {  // @spin
    }
}
torch::Tensor hang(const torch::Tensor &x) {
    volatile int flag = 0;
    spin_here(&flag);  // @hang
    return torch::abs(x);
}

// Each core scales its part (a debugger steps through it).
torch::Tensor scale(const torch::Tensor &x, double a) {
    torch::Tensor y = get_dst_tensor();
    auto in = x.accessor<float, 1>();
    auto out = y.accessor<float, 1>();
    int64_t n = x.numel(), cores = get_cpu_count(), id = get_cpu_id();
    for (int64_t i = id; i < n; i += cores) out[i] = in[i] * float(a);  // @scale
    return y;
}

// Every core says who it is, over two writes per line.
torch::Tensor hello(const torch::Tensor &x) {
    printf("core %u ", (unsigned)get_cpu_id());
    printf("of %u\\n", (unsigned)get_cpu_count());
    torch::Tensor y = get_dst_tensor();
    if (get_cpu_id() == 0) {
        auto in = x.accessor<float, 1>();
        auto out = y.accessor<float, 1>();
        for (int64_t i = 0; i < x.numel(); i++) out[i] = in[i] < 0 ? -in[i] : in[i];
    }
    return y;
}
"""
SHAPES = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor like(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
torch::Tensor one(torch::Tensor x) { return torch::empty({1}, torch::kFloat); }
torch::Tensor like2(torch::Tensor x, double a) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(diag_ops, m) {
    m.def("tiles", &like, "tiles");
    m.def("past_end", &like, "past_end");
    m.def("asserts", &like, "asserts");
    m.def("divides", &one, "divides");
    m.def("deep", &one, "deep");
    m.def("fine", &like, "fine");
    m.def("hang", &like, "hang");
    m.def("hello", &like, "hello");
    m.def("scale", &like2, "scale");
}
"""


def line_of(tag):
    """The 1-based line of KERNELS holding `// @tag`."""
    for i, text in enumerate(KERNELS.split("\n"), 1):
        if text.rstrip().endswith(f"// @{tag}"):
            return i
    raise KeyError(tag)


@pytest.fixture(scope="module", params=["host", "xtensa"])
def lib(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"diag_{request.param}")
    (d / "k.cpp").write_text(KERNELS)
    (d / "s.cpp").write_text(SHAPES)
    return custom_op.load("diag_ops", [d / "k.cpp"], [d / "s.cpp"], build_directory=d / "build",
                          isa=request.param)


def fault(call):
    with pytest.raises(DeviceFault) as e:
        call()
    return e.value


def test_a_tcm_copy_past_the_tensor_names_its_line_and_the_kernel_line_that_called_it(lib):
    x = np.arange(91, dtype=np.float32)
    f = fault(lambda: lib.ops["tiles"](x, cores=8))
    msg = str(f)
    assert "on core 7: fatal error: customop: tensor_to_tcm: elements [84, 96) outside a tensor of 91 elements" in msg, msg
    assert re.search(rf", at \S*k\.cpp:{line_of('copy')} in copy_in", msg), msg
    assert re.search(rf"\n    called from \S*k\.cpp:{line_of('tiles')} in tiles\(", msg), msg
    files = [s[0] for s in f.stack]
    assert all(p.endswith("k.cpp") for p in files), f.stack
    assert [s[1] for s in f.stack][:2] == [line_of("copy"), line_of("tiles")], f.stack
    assert f.stack[1][2].startswith("tiles("), f.stack
    # The runtime's own frames (the API header's check, the launcher) are not shown.
    assert "Tensor.h" not in msg and ".rs:" not in msg and "nrt_pool_op_wrapper" not in msg, msg
    np.testing.assert_array_equal(lib.ops["tiles"](x[:88], cores=8), x[:88]), "the next launch is exact"


def test_a_store_past_a_tensor_names_the_storing_line_and_its_caller(lib):
    f = fault(lambda: lib.ops["past_end"](np.zeros(16, np.float32)))
    msg = str(f)
    assert f.kind == "memory fault", msg
    assert re.search(rf", at \S*k\.cpp:{line_of('fill')} in fill_past", msg), msg
    assert re.search(rf"called from \S*k\.cpp:{line_of('past_end')} in past_end\(", msg), msg


def test_a_failed_assert_names_its_line(lib):
    f = fault(lambda: lib.ops["asserts"](np.zeros(4, np.float32)))
    assert re.search(rf", at \S*k\.cpp:{line_of('assert')} in asserts\(", str(f)), str(f)
    np.testing.assert_array_equal(lib.ops["asserts"](np.array([-1, 2, -3], np.float32)), [1, 2, 3])


def test_a_division_by_zero_names_the_dividing_line_and_its_caller(lib):
    f = fault(lambda: lib.ops["divides"](np.zeros(8, np.float32)))
    msg = str(f)
    assert re.search(rf", at \S*k\.cpp:{line_of('divide')} in divide", msg), msg
    assert re.search(rf"called from \S*k\.cpp:{line_of('divides')} in divides\(", msg), msg
    np.testing.assert_array_equal(lib.ops["divides"](np.zeros(9, np.float32)), [7])


def test_faults_on_several_cores_report_one_and_the_next_launch_is_exact(lib):
    x = np.arange(-50, 41, dtype=np.float32)
    for _ in range(2):
        f = fault(lambda: lib.ops["tiles"](x, cores=8))
        assert f.stack and f.stack[0][1] == line_of("copy"), f.stack
    np.testing.assert_array_equal(lib.ops["fine"](x), np.abs(x))


def test_a_deep_call_stack_is_walked_to_the_kernel(lib):
    f = fault(lambda: lib.ops["deep"](np.zeros(12, np.float32)))
    lines = [s[1] for s in f.stack]
    assert lines == [line_of("bottom")] + [line_of("down")] * 12 + [line_of("deep")], f.stack
    assert str(f).count("called from") == 13, str(f)


def test_printf_shows_core_0s_lines_unless_every_cores_are_asked_for(lib, capfd):
    x = np.array([-1, 2, -3], np.float32)
    capfd.readouterr()
    np.testing.assert_array_equal(lib.ops["hello"](x, cores=4), np.abs(x))
    assert capfd.readouterr().out == "core 0 of 4\n", "hardware shows core 0's printf alone"
    lib.all_cores_stdio = True
    try:
        np.testing.assert_array_equal(lib.ops["hello"](x, cores=4), np.abs(x))
        out = capfd.readouterr().out
        assert sorted(out.splitlines()) == [f"[core {c}] core {c} of 4" for c in range(4)], out
    finally:
        lib.all_cores_stdio = False
    lib.ops["hello"](x, cores=2)
    assert capfd.readouterr().out == "core 0 of 2\n"


def test_the_cli_shows_every_cores_printf_with_all_cores_stdio(lib, tmp_path, monkeypatch):
    x = tmp_path / "x.npy"
    np.save(x, np.array([-1, 2, -3], np.float32))
    run = [NRT_POOL, "run", lib.path, "diag_ops::hello", "--arg", x, "--out", tmp_path / "y.npy", "--cores", "3"]
    p = subprocess.run([str(a) for a in run + ["--all-cores-stdio"]], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stdout.splitlines()) == [f"[core {c}] core {c} of 3" for c in range(3)], p.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), [1, 2, 3])
    p = subprocess.run([str(a) for a in run], capture_output=True, text=True)
    assert p.stdout == "core 0 of 3\n", p.stdout
    monkeypatch.setenv("GPSIMD_OPEN_ALL_CORES_STDIO", "1")
    p = subprocess.run([str(a) for a in run], capture_output=True, text=True)
    assert sorted(p.stdout.splitlines()) == [f"[core {c}] core {c} of 3" for c in range(3)], p.stdout


def wait_for_session(lines, timeout=120):
    """The first line of `lines` (a stderr stream) saying a core waits for gdb."""
    found = []

    def read():
        for line in lines:
            if "waiting for gdb" in line:
                found.append(line)
                return

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    assert found, "the launch never said it waits for gdb"
    return found[0]


GDB_BATCH = ["-batch", "-ex", "next", "-ex", "nrt-data x", "-ex", "print ((float *)$data)[0]@3",
             "-ex", "continue"]


def test_a_batch_gdb_session_breaks_at_the_kernel_steps_prints_a_tensor_and_continues(lib, tmp_path):
    x = np.array([3.5, -2, 7, 1.25, 9], np.float32)
    np.save(tmp_path / "x.npy", x)
    # Host cores are asked with the flag, Xtensa cores with the environment variable (the
    # FFI's way: every front end reads it).
    host = lib.path.endswith(".so")
    env = dict(os.environ, GPSIMD_OPEN_GDB="1") if not host else None
    run = subprocess.Popen(
        [str(a) for a in [NRT_POOL, "run", lib.path, "diag_ops::scale", "--arg", tmp_path / "x.npy", "--arg", "2",
                          "--out", tmp_path / "y.npy", "--cores", "2"] + (["--gdb=1"] if host else [])],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        said = wait_for_session(run.stderr)
        assert "core 1" in said and f"nrt-pool gdb {lib.path} 1" in said, said
        g = subprocess.run([str(NRT_POOL), "gdb", lib.path, "1", "--", *GDB_BATCH], capture_output=True, text=True,
                           timeout=300)
        out = g.stdout + g.stderr
        assert g.returncode == 0, out
        # On Xtensa cores a default build's entry stop is after the argument stores, mid-line
        # (D102): gdb names its address first.
        assert re.search(r"Breakpoint 1, (0x[0-9a-f]+ in )?(diag_ops::)?scale\b.*\(", out), out
        assert "= {3.5, -2, 7}" in out, out
        assert re.search(r"Breakpoint 2, .*(nrt_pool_kernel_returned|board_kernel_returned)", out), out
        assert run.wait(timeout=120) == 0, run.stderr.read()
    finally:
        run.kill()
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x * 2)
    # The core the debugger touched is replaced: the next launch is exact.
    np.testing.assert_array_equal(lib.ops["scale"](x, 3.0, cores=2), x * 3)


def test_python_debug_stops_a_core_until_gdb_lets_it_go(lib):
    x = np.array([1.5, -4, 2], np.float32)
    result, errors = [], []

    def call():
        try:
            result.append(lib.ops["scale"](x, 2.0, cores=2, debug=0))
        except Exception as e:  # reported below
            errors.append(e)

    t = threading.Thread(target=call)
    t.start()
    session = pathlib.Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/nrt-pool-gdb-{os.getuid()}")
    if os.environ.get("XDG_RUNTIME_DIR"):
        session = session / "nrt-pool-gdb"
    deadline = time.monotonic() + 120
    while not (session / "core0").exists() or lib.path.encode() not in (session / "core0").read_bytes():
        assert time.monotonic() < deadline and t.is_alive(), errors
        time.sleep(0.05)
    assert t.is_alive(), "the call waits for the debugger"
    g = subprocess.run([str(NRT_POOL), "gdb", lib.path, "0", "--", *GDB_BATCH], capture_output=True, text=True,
                       timeout=300)
    assert g.returncode == 0, g.stdout + g.stderr
    assert "= {1.5, -4, 2}" in g.stdout, g.stdout
    t.join(120)
    assert not errors, errors
    np.testing.assert_array_equal(result[0], x * 2)
    assert lib.debug is None, "a call's debug= applies to that call"


def test_the_cli_profiles_a_launch_and_writes_folded_stacks(lib, tmp_path):
    x = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    folded = tmp_path / "scale.folded"
    p = subprocess.run([str(a) for a in [NRT_POOL, "run", lib.path, "diag_ops::scale", "--arg", tmp_path / "x.npy",
                                         "--arg", "2", "--out", tmp_path / "y.npy", "--cores", "2",
                                         f"--profile={folded}"]], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "y.npy"), x * 2)
    isa = "xtensa" if lib.path.endswith(".pool") else "host"
    assert f"profile of kernel 'scale' on 2 {isa} core(s):" in p.stderr, p.stderr
    lines = folded.read_text().splitlines()
    if isa == "xtensa":
        # Instructions by function and core: the kernel itself among them, with its share.
        assert re.search(r"^\s+\d+\.\d\d%\s+\d+\s+scale\(torch::Tensor const&, double\)$", p.stderr, re.M), p.stderr
        for core in (0, 1):
            mine = [l for l in lines if l.startswith(f"core {core};")]
            assert any(l.startswith(f"core {core};scale(torch::Tensor const&, double) ") for l in mine), lines
            assert all(int(l.rsplit(" ", 1)[1]) > 0 for l in mine), lines
    else:
        assert re.search(r"^  core 0: \d+\.\d{3} ms", p.stderr, re.M), p.stderr
        # A kernel this short is usually over before the first sample (each core's line is
        # then its wall time); on a loaded machine a core may be sampled once or more, each
        # stack a line of its own. Either way: both cores, in order, each weight positive.
        cores = [re.match(r"core (\d+)[ ;]", l) for l in lines]
        assert all(cores), lines
        assert sorted(set(int(m.group(1)) for m in cores)) == [0, 1], lines
        assert [int(m.group(1)) for m in cores] == sorted(int(m.group(1)) for m in cores), lines
        assert all(int(l.rsplit(" ", 1)[1]) > 0 for l in lines), lines


def test_python_profile_returns_the_counts_and_they_follow_the_work(lib):
    def kernel_instructions(n):
        x = np.ones(n, np.float32)
        y, prof = lib.ops["scale"](x, 3.0, cores=1, profile=True)
        np.testing.assert_array_equal(y, x * 3)
        assert prof["kernel"] == "scale" and [c["core"] for c in prof["cores"]] == [0], prof
        return prof

    small, large = kernel_instructions(40), kernel_instructions(4000)
    if lib.path.endswith(".pool"):
        name = "scale(torch::Tensor const&, double)"
        assert abs(sum(share for _, _, share in large["functions"]) - 1) < 1e-9, large["functions"]
        a, b = small["cores"][0]["functions"][name], large["cores"][0]["functions"][name]
        # The kernel's loop runs 100 times as often: its own count grows with it.
        assert b > 20 * a, (a, b)
        assert large["cores"][0]["instructions"] == sum(large["cores"][0]["functions"].values())
        assert large["folded"].startswith("core 0;"), large["folded"]
    else:
        assert small["cores"][0]["wall_s"] > 0 and large["cores"][0]["wall_s"] > 0, large
        i = large["cores"][0]["instructions"]
        if i is not None:  # perf_event_open allowed here
            assert i > small["cores"][0]["instructions"], (small, large)
    y = lib.ops["scale"](np.ones(3, np.float32), 2.0)
    assert isinstance(y, np.ndarray), "no profile unless asked"


def test_a_kernel_stopped_at_the_deadline_names_the_line_it_was_at(lib):
    lib.timeout = 3
    try:
        f = fault(lambda: lib.ops["hang"](np.zeros(4, np.float32)))
    finally:
        lib.timeout = 30
    msg = str(f)
    assert f.kind == "timeout", msg
    assert re.search(rf", at \S*k\.cpp:{line_of('spin')} in spin_here", msg), msg
    if lib.path.endswith(".so"):
        # Host cores record their whole stack when stopped; Xtensa cores give the PC.
        assert re.search(rf"called from \S*k\.cpp:{line_of('hang')} in hang\(", msg), msg
    x = np.array([-1, 2], np.float32)
    np.testing.assert_array_equal(lib.ops["fine"](x), np.abs(x)), "the next launch is exact"
