"""Disks that refuse writes: a build cache on a read-only or full disk falls back
to a private one, said once; a build folder or an output file on a full disk is an error
naming it, and leaves nothing half-written that a later run would trust. Each disk is a
small tmpfs mounted here (root only: said loudly when it cannot be)."""
import contextlib
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gpsimd_open import custom_op

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp"
NRT_POOL = ROOT / "target" / "release" / "nrt-pool"


@contextlib.contextmanager
def tmpfs(path, size="256k", read_only=False, fill=False):
    """A tmpfs of `size` at `path` (read-only, or filled to the last byte), unmounted after."""
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if read_only else "")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    if p.returncode != 0:
        pytest.skip(f"UNSUPPORTED HERE: mounting a tmpfs needs root ({p.stderr.decode().strip()})")
    try:
        if fill:
            with open(path / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 4096)
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


LOAD = textwrap.dedent("""
    import sys
    sys.modules["torch"] = None
    import numpy as np
    from gpsimd_open import custom_op
    lib = custom_op.load("mlp_ops", [sys.argv[1]], [sys.argv[2]], build_directory=sys.argv[3])
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    assert np.array_equal(lib.relu_forward(x), np.maximum(x, 0))
    print("RESULT right")
""")


@pytest.mark.full
@pytest.mark.parametrize("disk", ["read-only", "full"])
def test_a_cache_that_cannot_be_written_falls_back_to_a_private_one(tmp_path, disk):
    with tmpfs(tmp_path / "cache", read_only=disk == "read-only", fill=disk == "full") as cache:
        p = subprocess.run([sys.executable, "-c", LOAD, str(MLP / "relu.cpp"), str(MLP / "shape.cpp"),
                            str(tmp_path / "build")], capture_output=True,
                           env={**__import__("os").environ, "NRT_POOL_CACHE": str(cache / "gpsimd-open")})
        err = p.stderr.decode(errors="replace")
        assert p.returncode == 0 and b"RESULT right" in p.stdout, err
        assert err.count("cannot be written") == 1, err
        assert "gpsimd-open-cache-" in err, err


@pytest.mark.full
def test_a_build_folder_on_a_full_disk_is_named_and_left_without_a_library(tmp_path):
    with tmpfs(tmp_path / "build", fill=True) as build:
        with pytest.raises(RuntimeError, match=f"{build}/libmlp_ops.so: No space left on device"):
            custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=build)
        left = sorted(p.name for p in build.iterdir())
        # Only the filler and the folder's (empty) lock: no library, partial copy or record.
        assert left == [".libmlp_ops.so.lock", "filler"], left
    # The same folder with room: built and right (nothing half-written was trusted).
    lib = custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path / "build")
    x = np.linspace(-1, 1, 12, dtype=np.float32)
    assert np.array_equal(lib.relu_forward(x), np.maximum(x, 0))


def test_an_output_on_a_full_disk_is_named_and_not_left_half_written(tmp_path):
    lib = custom_op.load("mlp_ops", [MLP / "relu.cpp"], [MLP / "shape.cpp"], build_directory=tmp_path / "b")
    x = np.linspace(-1, 1, 64 * 1024, dtype=np.float32).reshape(256, 256)
    np.save(tmp_path / "x.npy", x)
    with tmpfs(tmp_path / "out", size="64k") as out:
        p = subprocess.run([NRT_POOL, "run", lib.path, "relu_forward", "--arg", tmp_path / "x.npy",
                            "--out", out / "y.npy"], capture_output=True)
        err = p.stderr.decode(errors="replace")
        assert p.returncode != 0 and str(out) in err and "No space left on device" in err, err
        assert list(out.iterdir()) == [], list(out.iterdir())
