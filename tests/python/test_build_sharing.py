"""Loads in many processes at once: every rank of a torchrun job calls
custom_op.load on the same sources. Builds into one folder wait on its lock and the first
build serves the rest; a holder killed mid-build holds no one up; a damaged output or a
changed header is built again."""
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from gpsimd_open import custom_op

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"

# One rank: loads the mlp ops (torch kept out: 16 imports of it would only cost time),
# runs relu_forward and says whether it built and whether the result was right.
RANK = textwrap.dedent("""
    import sys
    sys.modules["torch"] = None
    import numpy as np
    from gpsimd_open import custom_op
    build, isa = sys.argv[1], sys.argv[2]
    lib = custom_op.load("mlp_ops", [sys.argv[3]], [sys.argv[4]], build_directory=build, isa=isa, verbose=True)
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(6, 8)
    ok = np.array_equal(lib.relu_forward(x), np.maximum(x, 0))
    print("RESULT", "right" if ok else "WRONG")
""")


def ranks(folders, isa, procs=16, env=None):
    """Starts `procs` loads at once, spread over `folders`; their outputs."""
    started = [subprocess.Popen([sys.executable, "-c", RANK, str(folders[i % len(folders)]), isa,
                                 str(MLP / "relu.cpp"), str(MLP / "shape.cpp")],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
               for i in range(procs)]
    outs = []
    for p in started:
        out, _ = p.communicate(timeout=600)
        outs.append(out.decode(errors="replace"))
        assert p.returncode == 0, out.decode(errors="replace")
    return outs


@pytest.mark.full
@pytest.mark.parametrize("isa,folders", [("host", 4), ("xtensa", 2)])
def test_sixteen_loads_at_once_build_once_per_folder(tmp_path, isa, folders):
    """16 ranks over a few build folders (several ranks a folder): one build each. On host
    cores with an empty cache, so the folders' builds also race to make the precompiled
    op API: one process makes it and the others wait (before, a second one replaced it
    while a build was reading it, and that folder was built twice)."""
    env = {**os.environ, "NRT_POOL_CACHE": str(tmp_path / "cache")} if isa == "host" else None
    folders = [tmp_path / f"f{i}" for i in range(folders)]
    outs = ranks(folders, isa, env=env)
    assert all("RESULT right" in o for o in outs), outs
    built = sum("gpsimd_open: built" in o for o in outs)
    kept = sum("is up to date" in o for o in outs)
    assert (built, kept) == (len(folders), 16 - len(folders)), outs


@pytest.mark.full
def test_a_holder_killed_mid_build_does_not_block_the_others(tmp_path):
    lock = tmp_path / ".libmlp_ops.so.lock"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, time
        f = open({str(lock)!r}, "w")
        fcntl.flock(f, fcntl.LOCK_EX)
        print("held", flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE)
    assert holder.stdout.readline().strip() == b"held"
    waiter = subprocess.Popen([sys.executable, "-c", RANK, str(tmp_path), "host", str(MLP / "relu.cpp"),
                               str(MLP / "shape.cpp")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(2)
    assert waiter.poll() is None, "the load did not wait for the lock"
    killed = time.monotonic()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    out, _ = waiter.communicate(timeout=120)
    assert waiter.returncode == 0 and b"RESULT right" in out, out
    # It built once the holder was gone (a build of the mlp ops takes seconds, not minutes).
    assert time.monotonic() - killed < 60
    assert b"gpsimd_open: built" in out


def test_a_damaged_library_or_a_changed_header_is_built_again(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "factor.h").write_text("#define FACTOR 2.0f\n")
    (src / "scale.cpp").write_text(textwrap.dedent("""
        #include <torch/torch.h>
        #include "factor.h"
        torch::Tensor scale(const torch::Tensor &x) {
            torch::Tensor y = torch::empty(x.sizes(), torch::kFloat);
            auto in = x.read_stream_accessor<float>();
            auto out = y.write_stream_accessor<float>();
            for (int64_t i = 0; i < x.numel(); i++) out.write(in.read() * FACTOR);
            out.close();
            return y;
        }
    """))
    (src / "shape.cpp").write_text(textwrap.dedent("""
        #include <torch/torch.h>
        #include "torchneuron/register.h"
        torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
        NEURON_LIBRARY(reuse_ops, m) { m.def("scale", &s, "scale"); }
    """))
    build = tmp_path / "build"
    x = np.arange(6, dtype=np.float32)

    def load():
        lib = custom_op.load("reuse_ops", [src / "scale.cpp"], [src / "shape.cpp"], build_directory=build,
                             verbose=True)
        said = capsys.readouterr().out
        return lib.scale(x), "built" in said

    assert load() == (pytest.approx(x * 2), True)
    assert load()[1] is False, "an unchanged build was done again"
    # A header the source includes changes: built again, with the new value.
    (src / "factor.h").write_text("#define FACTOR 3.0f\n")
    got, built = load()
    assert built and np.array_equal(got, x * 3)
    # The library damaged on disk (truncated): not trusted, built again.
    library = build / "libreuse_ops.so"
    data = library.read_bytes()
    library.write_bytes(data[: len(data) // 2])
    got, built = load()
    assert built and np.array_equal(got, x * 3)
    # Other flags: built again.
    lib = custom_op.load("reuse_ops", [src / "scale.cpp"], [src / "shape.cpp"], build_directory=build,
                         verbose=True, extra_cflags=["-DUNUSED=1"])
    assert "built" in capsys.readouterr().out
    assert lib.cflags == ["-DUNUSED=1"]
    os.remove(build / "libreuse_ops.so.build")
    assert load()[1] is True, "a library without its record was trusted"


def test_a_damaged_runtime_archive_is_named_before_anything_builds(tmp_path):
    from gpsimd_open import _native

    archive = pathlib.Path(_native.installed("device-model-archive"))
    digest = archive.with_name(archive.name + ".sha256")
    assert digest.exists(), "make customop-archives writes the archive's digest"
    copy = tmp_path / "libneuroncustomop.a"
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte of an object inside: ld alone would not notice
    copy.write_bytes(bytes(data))
    (tmp_path / "libneuroncustomop.a.sha256").write_text(digest.read_text())
    with pytest.raises(RuntimeError, match="does not match the digest .* reinstall"):
        _native.build("mlp_ops", [str(MLP / "relu.cpp")], [str(MLP / "shape.cpp")], str(tmp_path / "b"), False,
                      _native.installed("include"), str(copy))
    assert not (tmp_path / "b" / "libmlp_ops.so").exists()


def test_a_load_killed_mid_build_leaves_nothing_trusted(tmp_path):
    """A rank killed while it builds (holding the folder's lock): the next load does not
    wait on it, finds no record, builds, and is right."""
    import fcntl

    lock = tmp_path / ".libmlp_ops.so.lock"
    first = subprocess.Popen([sys.executable, "-c", RANK, str(tmp_path), "host", str(MLP / "relu.cpp"),
                              str(MLP / "shape.cpp")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # Wait until it holds the lock (it is building), then kill it.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if lock.exists():
            with open(lock) as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(f, fcntl.LOCK_UN)
                except BlockingIOError:
                    break
        time.sleep(0.01)
    else:
        pytest.fail("the load never held its folder's lock")
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert not (tmp_path / "libmlp_ops.so.build").exists()
    out = ranks([tmp_path], "host", procs=1)[0]
    assert "gpsimd_open: built" in out and "RESULT right" in out, out


@pytest.mark.full
def test_a_load_from_another_folder_sees_the_headers_that_changed(tmp_path, monkeypatch, capsys):
    """The record names files absolutely: a load from another working folder, with other
    spellings of the same sources, still sees a header that changed."""
    for tree in ("a", "b"):  # two copies of one project
        src = tmp_path / tree / "src"
        src.mkdir(parents=True)
        (src / "factor.h").write_text("#define FACTOR 2.0f\n")
    src = tmp_path / "a" / "src"
    (src / "scale.cpp").write_text(textwrap.dedent("""
        #include <torch/torch.h>
        #include "factor.h"
        torch::Tensor scale(const torch::Tensor &x) { return torch::mul(x, FACTOR); }
    """))
    (src / "shape.cpp").write_text(textwrap.dedent("""
        #include <torch/torch.h>
        #include "torchneuron/register.h"
        torch::Tensor s(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
        NEURON_LIBRARY(moved_ops, m) { m.def("scale", &s, "scale"); }
    """))
    for name in ("scale.cpp", "shape.cpp"):
        (tmp_path / "b" / "src" / name).write_text((src / name).read_text())
    build = tmp_path / "build"
    x = np.arange(4, dtype=np.float32)
    monkeypatch.chdir(tmp_path / "a")
    lib = custom_op.load("moved_ops", ["src/scale.cpp"], ["src/shape.cpp"], build_directory=build, verbose=True)
    assert np.array_equal(lib.scale(x), x * 2) and "built" in capsys.readouterr().out
    (src / "factor.h").write_text("#define FACTOR 5.0f\n")
    monkeypatch.chdir(tmp_path / "b")  # its src/factor.h is the old one
    lib = custom_op.load("moved_ops", [src / "scale.cpp"], [src / "shape.cpp"], build_directory=build, verbose=True)
    assert "built" in capsys.readouterr().out
    assert np.array_equal(lib.scale(x), x * 5)
