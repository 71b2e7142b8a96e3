"""Choosing the backend and the core count without editing code, and running a script
written for torch_neuronx: GPSIMD_OPEN_ISA, load_library(isa=), set_cores(),
python -m gpsimd_open.run."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gpsimd_open
from conftest import ROOT
from gpsimd_open import custom_op

MLP = ROOT / "examples" / "mlp"
SAMPLE = ROOT / "examples" / "torch_neuronx_mlp"

COUNT = """
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>
// Every element: the number of cores the launch runs on (core 0 writes).
torch::Tensor count(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    if (get_cpu_id() == 0) {
        auto out = y.accessor<float, 1>();
        for (int64_t i = 0; i < x.numel(); i++) out[i] = float(get_cpu_count());
    }
    return y;
}
"""
COUNT_SHAPE = """
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(count_ops, m) { m.def("count", &s, "count"); }
"""


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The mlp ops built for both backends in one folder: libmlp_ops.so and .pool."""
    d = tmp_path_factory.mktemp("both")
    custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=d, isa="xtensa")
    return d


def backend(lib):
    return "xtensa" if lib.path.endswith(".pool") else "host"


def test_isa_argument_and_environment_pick_the_file_beside(both, monkeypatch, capfd):
    so, pool = both / "libmlp_ops.so", both / "libmlp_ops.pool"
    monkeypatch.delenv("GPSIMD_OPEN_ISA", raising=False)
    assert backend(custom_op.load_library(so, isa="xtensa")) == "xtensa"
    assert backend(custom_op.load_library(pool, isa="host")) == "host"
    monkeypatch.setenv("GPSIMD_OPEN_ISA", "xtensa")
    lib = custom_op.load_library(so)
    assert backend(lib) == "xtensa"
    x = np.linspace(-2, 2, 9, dtype=np.float32)
    np.testing.assert_array_equal(lib.ops["relu_forward"](x), np.maximum(x, 0))
    assert backend(custom_op.load_library(so, isa="host")) == "host", "the argument wins over the variable"
    monkeypatch.setenv("GPSIMD_OPEN_ISA", "host")
    assert backend(custom_op.load_library(pool)) == "host"
    # No choice made: the file's own backend, with a word when the other build is beside it.
    monkeypatch.delenv("GPSIMD_OPEN_ISA")
    capfd.readouterr()
    assert backend(custom_op.load_library(pool)) == "xtensa"
    lonely = both / "lonely"
    lonely.mkdir(exist_ok=True)
    (lonely / "libmlp_ops.so").write_bytes(so.read_bytes())
    assert backend(custom_op.load_library(lonely / "libmlp_ops.so")) == "host"
    assert "beside it" not in capfd.readouterr().err
    assert backend(custom_op.load_library(so)) == "host"
    err = capfd.readouterr().err
    assert "libmlp_ops.pool beside it runs on Xtensa cores with GPSIMD_OPEN_ISA=xtensa" in err, err


def test_a_missing_build_or_a_bad_choice_is_a_clear_error(both, monkeypatch, tmp_path):
    (tmp_path / "libmlp_ops.so").write_bytes((both / "libmlp_ops.so").read_bytes())
    monkeypatch.setenv("GPSIMD_OPEN_ISA", "xtensa")
    with pytest.raises(RuntimeError, match=r"GPSIMD_OPEN_ISA=xtensa: there is no libmlp_ops.pool beside .* "
                                           r"build it with custom_op.load\(..., isa='xtensa'\)"):
        custom_op.load_library(tmp_path / "libmlp_ops.so")
    monkeypatch.delenv("GPSIMD_OPEN_ISA")
    (tmp_path / "libmlp_ops.so").unlink()
    (tmp_path / "libmlp_ops.pool").write_bytes((both / "libmlp_ops.pool").read_bytes())
    with pytest.raises(RuntimeError, match=r"isa='host': there is no libmlp_ops.so beside"):
        custom_op.load_library(tmp_path / "libmlp_ops.pool", isa="host")
    with pytest.raises(ValueError, match=r"isa='arm': 'host' or 'xtensa'"):
        custom_op.load_library(both / "libmlp_ops.so", isa="arm")
    monkeypatch.setenv("GPSIMD_OPEN_ISA", "XTENSA")
    with pytest.raises(ValueError, match=r"GPSIMD_OPEN_ISA='XTENSA': 'host' or 'xtensa'"):
        custom_op.load_library(both / "libmlp_ops.so")


def test_load_builds_for_the_backend_the_environment_names(monkeypatch, tmp_path):
    monkeypatch.setenv("GPSIMD_OPEN_ISA", "xtensa")
    lib = custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path)
    assert backend(lib) == "xtensa" and (tmp_path / "libmlp_ops.pool").exists()


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_set_cores_sets_the_count_of_calls_that_give_none(isa, tmp_path):
    (tmp_path / "k.cpp").write_text(COUNT)
    (tmp_path / "s.cpp").write_text(COUNT_SHAPE)
    lib = custom_op.load("count_ops", [tmp_path / "k.cpp"], [tmp_path / "s.cpp"], build_directory=tmp_path, isa=isa)
    x = np.zeros(5, np.float32)

    def cores(call):
        got = call(x)
        assert np.all(got == got[0]), got
        return int(got[0])

    op = lib.ops["count"]
    assert gpsimd_open.get_cores() is None
    assert cores(op) == 1
    try:
        gpsimd_open.set_cores(4)
        assert gpsimd_open.get_cores() == 4
        assert cores(op) == 4
        assert cores(lambda a: op(a, cores=2)) == 2, "cores= wins"
        with gpsimd_open.set_cores(8):
            assert cores(op) == 8
            with gpsimd_open.set_cores(None):
                assert cores(op) == 1
            assert cores(op) == 8
        assert cores(op) == 4
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            t = torch.zeros(5)
            assert int(torch.ops.count_ops.count(t)[0]) == 4
            with gpsimd_open.set_cores(3):
                assert int(torch.ops.count_ops.count(t)[0]) == 3
        for bad in (0, 9, 2.0, True, "4"):
            with pytest.raises(ValueError, match="1 to 8"):
                gpsimd_open.set_cores(bad)
        assert gpsimd_open.get_cores() == 4, "a refused count changes nothing"
    finally:
        gpsimd_open.set_cores(None)
    assert cores(op) == 1


def runner(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "gpsimd_open.run", *map(str, args)], cwd=cwd,
                          capture_output=True, env={**os.environ, **(env or {})})


def test_the_runner_refuses_what_it_cannot_run(tmp_path):
    p = runner("--cores", "9", "x.py", cwd=tmp_path)
    assert p.returncode == 2 and b"1 to 8" in p.stderr, p.stderr
    p = runner("nope.py", cwd=tmp_path)
    assert p.returncode == 2 and b"nope.py: no such script" in p.stderr, p.stderr
    (tmp_path / "s.py").write_text("import torch_xla.core.xla_model as xm\nxm.all_reduce('sum', [])\n")
    p = runner("s.py", cwd=tmp_path)
    assert p.returncode == 1
    assert b"torch_xla.core.xla_model.all_reduce is not in gpsimd_open's stand-in (it offers: " in p.stderr, p.stderr
    # The script sees its own arguments and exit status; the banner comes once.
    (tmp_path / "a.py").write_text(
        "import sys, torch_neuronx\nfrom torch_neuronx.xla_impl import custom_op\n"
        "import gpsimd_open.custom_op as real\nassert custom_op is real\n"
        "print(sys.argv[1:]); sys.exit(3)\n")
    p = runner("--isa", "xtensa", "a.py", "--lr", "0.1", cwd=tmp_path)
    assert p.returncode == 3 and p.stdout == b"['--lr', '0.1']\n", (p.stdout, p.stderr)
    assert p.stderr.count(b"gpsimd_open.run: ") == 1 and b"(xtensa cores)" in p.stderr, p.stderr


@pytest.mark.full
def test_a_sample_style_training_script_trains_under_the_runner_on_both_backends(tmp_path):
    pytest.importorskip("torch")
    losses = {}
    for isa in ("host", "xtensa"):
        cwd = tmp_path / isa
        cwd.mkdir()
        env = {"GPSIMD_OPEN_ISA": isa}
        p = runner(SAMPLE / "build.py", cwd=cwd, env=env)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        p = runner(SAMPLE / "train.py", "30", cwd=cwd, env=env)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        assert p.stderr.count(b"gpsimd_open.run: torch_neuronx") == 1, p.stderr
        losses[isa] = [float(v) for v in re.findall(rb"loss ([0-9.]+)", p.stdout)]
        assert len(losses[isa]) == 4, p.stdout
        assert losses[isa][-1] < losses[isa][0], f"{isa}: the loss did not fall: {losses[isa]}"
        import torch

        state = torch.load(cwd / "checkpoints" / "checkpoint.pt")["state_dict"]
        assert sorted(state) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert losses["host"] == losses["xtensa"], "the kernels are exact, so both backends train alike"
    for script in ("build.py", "my_ops.py", "train.py"):
        text = (SAMPLE / script).read_text()
        assert "import gpsimd_open" not in text and "from gpsimd_open" not in text, f"{script} imports this package"


XLA_SCRIPT = """
import sys
import torch
import torch_neuronx
from torch_neuronx.xla_impl import custom_op

mlp = custom_op.load("mlp_ops", ["{mlp}/relu.cpp"], ["{mlp}/shape.cpp"], build_directory="build")
for device in ("xla", "xla:0", torch.device("xla")):
    torch.manual_seed(0)
    net = torch.nn.Linear(4, 3).to(device)
    x = torch.randn(5, 4).to(device)
    made = torch.zeros(5, 3, device=device)
    net(x).sum().backward()
    y = torch.ops.mlp_ops.relu_forward(net(x).detach() + made)
    assert y.device.type == "cpu" and net.weight.grad is not None
    print("ran", device, float(y.sum()))
"""


@pytest.mark.full
def test_a_script_that_says_xla_runs_unedited_and_the_runner_names_the_build(tmp_path):
    """device = 'xla', 'xla:0' or torch.device('xla'): modules and tensors moved there, and
    tensors made there, land on the CPU; the runner says once which build
    serves the library's ops."""
    pytest.importorskip("torch")
    (tmp_path / "s.py").write_text(XLA_SCRIPT.replace("{mlp}", str(MLP)))
    p = runner("s.py", cwd=tmp_path)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    lines = p.stdout.decode().splitlines()
    # (torch.device("xla") itself is made the CPU's.)
    assert [line.split()[1] for line in lines] == ["xla", "xla:0", "cpu"], lines
    assert len({line.split()[2] for line in lines}) == 1, "the same numbers on each spelling"
    told = [line for line in p.stderr.decode().splitlines() if "mlp_ops's ops run" in line]
    assert len(told) == 1 and "libmlp_ops.so on host cores" in told[0], p.stderr
