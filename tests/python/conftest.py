"""Shared fixtures: the repository's built tools and the op libraries the tests build."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
RELEASE = ROOT / "target" / "release"
NRT_POOL = RELEASE / "nrt-pool"
OPS = pathlib.Path(__file__).resolve().parent / "ops"


# An op library whose `spin` never returns (for interrupting and killing launches) and
# whose `quick` is abs().
SPIN = """
#include <torch/torch.h>
torch::Tensor spin(const torch::Tensor &x) {
    volatile unsigned long n = 0;
    while (x.numel() > 0) n = n + 1;
    return torch::abs(x);
}
torch::Tensor quick(const torch::Tensor &x) { return torch::abs(x); }
"""
SPIN_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(spin_ops, m) { m.def("spin", &s, "spin"); m.def("quick", &s, "quick"); }
"""



def run(*args, check=True, **kw):
    """Runs a command; on failure the assertion shows its output."""
    p = subprocess.run([str(a) for a in args], capture_output=True, **kw)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args))} exited {p.returncode}\n"
            f"stdout: {p.stdout.decode(errors='replace')}\nstderr: {p.stderr.decode(errors='replace')}"
        )
    return p


@pytest.fixture(scope="session")
def api_build(tmp_path_factory):
    """libapi_ops.so and its Pool image libapi_ops.pool: every function of the reference
    guide, built as custom_op.load would (and for the Xtensa cores)."""
    assert NRT_POOL.exists(), "run `make build` first (make test does)"
    d = tmp_path_factory.mktemp("api_ops")
    run(NRT_POOL, "build", "--name", "api_ops", "--compute", OPS / "api_ops.cpp",
        "--shape", OPS / "api_shape.cpp", "--build-directory", d, "--device-image")
    return d


@pytest.fixture(scope="session", params=["host", "xtensa"])
def api_lib(api_build, request):
    """The library every API test runs: the host build, then the Pool image on QEMU Xtensa
    cores (`nrt-pool run` picks the backend by the file)."""
    return api_build / ("libapi_ops.so" if request.param == "host" else "libapi_ops.pool")
