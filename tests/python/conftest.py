"""Shared fixtures: the repository's built tools and the op libraries the tests build."""
import fcntl
import os
import pathlib
import shutil
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
    guide, built as custom_op.load would (and for the Xtensa cores). Built once for the
    whole run: parallel workers share the folder above their own, the first to come
    builds it under a lock and the others wait for it (the build is the suite's largest)."""
    assert NRT_POOL.exists(), "run `make build` first (make test does)"
    # Under xdist each worker's folder is in the run's own; alone, the run's is the folder.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    d = shared / "api_ops"
    with open(shared / "api_ops.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (d / "built").exists():
            shutil.rmtree(d, ignore_errors=True)
            run(NRT_POOL, "build", "--name", "api_ops", "--compute", OPS / "api_ops.cpp",
                "--shape", OPS / "api_shape.cpp", "--build-directory", d, "--device-image")
            (d / "built").touch()
    return d


class Checked(type(pathlib.Path())):
    """An op library the tests run with checking mode on ($GPSIMD_OPEN_CHECK=1)."""


@pytest.fixture(scope="session", params=["host", "xtensa", pytest.param("host-checked", marks=pytest.mark.full)])
def api_lib(api_build, request):
    """The library every API test runs: the host build, the Pool image on QEMU Xtensa cores
    (`nrt-pool run` picks the backend by the file), and the host build with checks on,
    which must find nothing in the guide's ops (but those marked breaks_check_rules)."""
    if request.param == "host-checked":
        return Checked(api_build / "libapi_ops.so")
    return api_build / ("libapi_ops.so" if request.param == "host" else "libapi_ops.pool")


def pytest_configure(config):
    config.addinivalue_line("markers", "breaks_check_rules: an API test whose op breaks a rule "
                            "the checks look for on purpose (not run with checks on)")
    config.addinivalue_line("markers", "full: make test-full only (CI runs it): a long or exhaustive "
                            "check whose shorter sibling make test runs (docs/decisions.md D130)")


# The files that take longest, longest first (measured: pytest --durations=0, summed per
# file). Parallel workers take whole files in collection order, so the long ones start
# first and the short ones fill in at the end; a file not named here runs after these.
LONGEST_FIRST = [
    "test_checks.py", "test_torch_api.py", "test_parity.py", "test_gpsimd_open.py",
    "test_cxx_idioms.py", "test_threads.py", "test_stack_and_containment.py", "test_soak.py",
    "test_backend_choice.py", "test_build_and_run_errors.py", "test_parity_corpus.py",
]


def pytest_collection_modifyitems(config, items):
    """The checked runs of the API tests leave out the ops that break the checks' rules on
    purpose (cpu_info on one core leaves the other cores' elements unwritten; the
    standard-accessor test is the rules check's own case). Then the long files go first."""
    drop = [i for i in items if "host-checked" in i.nodeid and i.get_closest_marker("breaks_check_rules")]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [i for i in items if i not in drop]

    def rank(item):
        name = item.nodeid.split("::")[0].rsplit("/", 1)[-1]
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)  # stable: a file's tests keep their order


def line_of(path, text):
    """The line (from 1) of the first line of `path` that contains `text`."""
    for i, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {path}")


def built_gallery(d, n=1003):
    """examples/check-gallery's faulty kernels built in `d` (both builds: libgallery.so and
    libgallery.pool), with an input `x.npy` of `n` floats."""
    import numpy as np

    gallery = ROOT / "examples" / "check-gallery"
    run(NRT_POOL, "build", "--name", "gallery", "--compute", gallery / "faulty.cpp",
        "--shape", gallery / "shape.cpp", "--multicore", "--build-directory", d, "--device-image")
    np.save(d / "x.npy", np.linspace(-4.0, 4.0, n, dtype=np.float32))
    return d
