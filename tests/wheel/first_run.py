"""A first run from the installed wheel (packaging/wheel-test.sh runs it in a fresh venv,
this checkout hidden, and where it can the system's Xtensa tools, 32-bit C libraries and
GCC plugin headers too): the README's Python lines and its CLI lines, an op built from
AWS's API on both backends, byte-equal results, gdb stopped in the kernel on Xtensa
cores, a flame graph, and every part of the installation found inside the venv.
usage: first_run.py VENV"""
import os
import pathlib
import subprocess
import sys

import numpy as np

VENV = pathlib.Path(sys.argv[1]).resolve()
BIN = VENV / "bin"

RELU = r"""
#include <torch/torch.h>
torch::Tensor relu_forward(const torch::Tensor &x) {
    torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
    auto in = x.read_stream_accessor<float>();
    auto out = y.write_stream_accessor<float>();
    // What users write: a long counter and a plain char (the device's: 32-bit, unsigned).
    long seen = 0;
    for (int64_t i = 0; i < x.numel(); i++) {
        float v = in.read();
        char c = (char)(i & 0xff);
        seen += c;
        out.write(v > 0 ? v : 0);
    }
    if (seen < 0) out.write(-1.0f);
    return y;
}
"""
SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor relu_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(my_ops, m) { m.def("relu_forward", &relu_shape, "relu_forward"); }
"""


def inside_venv(path):
    return pathlib.Path(path).resolve().is_relative_to(VENV)


def main():
    import gpsimd_open
    from gpsimd_open import _native, custom_op

    here = pathlib.Path.cwd()
    assert inside_venv(gpsimd_open.__file__), gpsimd_open.__file__
    for part in ["include", "host-archive", "device-model-archive", "core-runner",
                 "xtensa-archive", "link-script", "board", "nrt-pool", "xtensa-tools"]:
        p = _native.installed(part)
        assert inside_venv(p) and os.path.exists(p), f"{part}: {p} is not in the venv"
    print("parts: every one found inside the venv")
    if os.environ.get("GPSIMD_WHEEL_TEST_HIDDEN"):
        for tool in ["xtensa-lx106-elf-g++", "xtensa-lx106-elf-as"]:
            assert not any(os.access(os.path.join(d, tool), os.X_OK)
                           for d in os.environ["PATH"].split(":")), f"{tool} is still visible"
        assert not os.path.exists("/usr/lib32/libc.so.6"), "the system's 32-bit libc is still visible"
        print("hidden: the system's Xtensa tools and 32-bit C libraries")
    assert _native.xtensa_cxx_installed(), "the carried Xtensa g++ does not run"

    (here / "relu.cpp").write_text(RELU)
    (here / "shape.cpp").write_text(SHAPE)
    x = np.random.default_rng(7).standard_normal((8, 16)).astype(np.float32)
    want = np.maximum(x, 0)

    # The README's Python lines, on the default backend (host cores).
    custom_op.load(name="my_ops", compute_srcs=["relu.cpp"], shape_srcs=["shape.cpp"])
    y = custom_op.ops.my_ops.relu_forward(x)
    assert y.tobytes() == want.tobytes(), "host cores"
    print("python: custom_op.load and custom_op.ops.my_ops.relu_forward on host cores")

    # Both backends: the Pool image built beside the library, run on QEMU cores.
    built = here / "both"
    built.mkdir()
    custom_op.load(name="my_ops", compute_srcs=["relu.cpp"], shape_srcs=["shape.cpp"],
                   build_directory=str(built), isa="xtensa")
    outs = {}
    for isa in ["host", "xtensa"]:
        lib = custom_op.load_library(str(built / "libmy_ops.so"), isa=isa)
        outs[isa] = lib.relu_forward(x)
    assert outs["host"].tobytes() == outs["xtensa"].tobytes() == want.tobytes()
    print("python: the same op on host and Xtensa cores, byte-equal")

    # The README's CLI lines through the console script.
    nrt = str(BIN / "nrt-pool")
    cli = here / "cli"
    cli.mkdir()
    subprocess.run([nrt, "build", "--name", "my_ops", "--compute", str(here / "relu.cpp"),
                    "--shape", str(here / "shape.cpp"), "--build-directory", str(cli),
                    "--device-image"], check=True)
    listed = subprocess.run([nrt, "list", str(cli / "libmy_ops.so")], check=True,
                            capture_output=True, text=True).stdout
    assert "my_ops::relu_forward" in listed, listed
    np.save(here / "x.npy", x)
    for lib in ["libmy_ops.so", "libmy_ops.pool"]:
        out = here / f"y-{lib}.npy"
        subprocess.run([nrt, "run", str(cli / lib), "my_ops::relu_forward", "--arg",
                        str(here / "x.npy"), "--out", str(out)], check=True)
        assert np.load(out).tobytes() == want.tobytes(), lib
    print("cli: nrt-pool build, list and run on both backends")

    # gdb on Xtensa cores: the launch waits at the kernel's entry; a batch session sees
    # its argument and lets it finish.
    launch = subprocess.Popen([nrt, "run", str(cli / "libmy_ops.pool"), "my_ops::relu_forward",
                               "--arg", str(here / "x.npy"), "--out", str(here / "y-gdb.npy"),
                               "--gdb=0"], stderr=subprocess.PIPE, text=True)
    try:
        for line in launch.stderr:
            if "waiting for gdb" in line:
                break
        else:
            raise AssertionError("the launch never said it waits for gdb")
        g = subprocess.run([nrt, "gdb", str(cli / "libmy_ops.pool"), "0", "--", "-batch",
                            "-ex", "info args", "-ex", "continue"],
                           capture_output=True, text=True, timeout=300)
        assert g.returncode == 0 and "x = " in g.stdout, g.stdout + g.stderr
        assert launch.wait(timeout=120) == 0
    finally:
        launch.kill()
    assert np.load(here / "y-gdb.npy").tobytes() == want.tobytes()
    print("gdb: a batch session stopped in the kernel on Xtensa cores and read its argument")

    # A profile to look at: the flame graph of a launch on Xtensa cores.
    svg = here / "profile.svg"
    subprocess.run([nrt, "run", str(cli / "libmy_ops.pool"), "my_ops::relu_forward", "--arg",
                    str(here / "x.npy"), "--out", str(here / "y-prof.npy"), f"--profile={svg}"],
                   check=True, capture_output=True)
    text = svg.read_text()
    assert text.startswith("<?xml") and "relu_forward" in text, text[:200]
    print("profile: a flame graph of the kernel")

    # The carried programs start with the libraries they carry.
    exec_dir = pathlib.Path(_native.installed("board")).parents[3] / "libexec/gpsimd-open"
    for prog, arg in [("qemu-system-xtensa", "--version"), ("xtensa-elf-gdb", "--version")]:
        r = subprocess.run([str(exec_dir / prog), arg], capture_output=True, text=True)
        assert r.returncode == 0, f"{prog}: {r.stderr}"
    notice = exec_dir.parents[1] / "share/doc/gpsimd-open/third-party/NOTICE.md"
    assert "GPL-2.0-or-later" in notice.read_text()
    print("programs: QEMU and gdb start from the venv; their licences and source are named")


if __name__ == "__main__":
    main()
