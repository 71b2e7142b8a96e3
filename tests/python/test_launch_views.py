"""A launch to look at: `nrt-pool run --trace FILE.json` writes the Trace Event format (one
track per core, the kernel and its functions, the tensor copies with their bytes, faults
and findings as instants at their source lines), and `--profile=FILE.svg` an SVG flame graph
(all cores folded, then each core, functions labelled with their source lines). Both are
read back here; opening them in a browser is not part of this suite yet."""
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import NRT_POOL, ROOT, built_gallery, line_of, run

GALLERY = ROOT / "examples" / "check-gallery"
N = 1003


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return built_gallery(tmp_path_factory.mktemp("views-gallery"), N)


def launch(gallery, op, isa, tmp_path, *extra):
    trace, svg = tmp_path / f"{isa}.json", tmp_path / f"{isa}.svg"
    p = run(NRT_POOL, "run", gallery / "libgallery.so", "--isa", isa, op, "--arg", gallery / "x.npy",
            "--out", tmp_path / "y.npy", f"--profile={svg}", "--trace", trace, *extra, check=False)
    return p, trace, svg


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_the_trace_has_a_track_per_core_with_the_kernel_and_well_formed_events(gallery, tmp_path, isa):
    p, trace, _ = launch(gallery, "gallery::clean", isa, tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    events = json.loads(trace.read_text())["traceEvents"]
    for e in events:
        assert e["ph"] in ("M", "X", "i") and e["pid"] == 1 and isinstance(e["name"], str), e
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["tid"], int), e
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert tracks == {c: f"core {c}" for c in range(8)}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert sorted(e["tid"] for e in kernels) == list(range(8))
    assert all(e["name"] == "clean" and e["dur"] > 0 for e in kernels)
    if isa == "xtensa":
        copies = [e for e in events if e.get("cat") == "copy"]
        assert sorted(e["tid"] for e in copies) == list(range(8)), "each core copies its tile"
        assert all(e["args"]["bytes_in"] > 0 and e["args"]["bytes_out"] > 0 for e in copies)
        functions = {e["name"] for e in events if e.get("cat") == "function"}
        assert any(f.startswith("clean_relu(") for f in functions), functions
        for c in range(8):
            spans = [e for e in events if e.get("tid") == c and e.get("cat") in ("function", "copy", "access")]
            kernel = next(e for e in kernels if e["tid"] == c)
            end = max(e["ts"] + e["dur"] for e in spans)
            assert end <= kernel["dur"] * 1.000001, "a core's spans lie inside its kernel span"


def test_the_flame_graph_draws_every_core_and_labels_functions_with_their_lines(gallery, tmp_path):
    p, _, svg = launch(gallery, "gallery::clean", "xtensa", tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    texts = " ".join(t.text or "" for t in root.iter() if t.tag.endswith("title"))
    assert "all cores" in texts and all(f"core {c}" in texts for c in range(8)), texts[:400]
    line = line_of(GALLERY / "faulty.cpp", "clean_relu(")
    assert f"clean_relu(torch::Tensor const&amp;) (faulty.cpp:{line})" in svg.read_text()


def test_findings_and_faults_are_instants_at_their_source_lines(gallery, tmp_path):
    p, trace, _ = launch(gallery, "gallery::overlap", "host", tmp_path, "--check")
    assert p.returncode == 4, p.stderr.decode()
    events = json.loads(trace.read_text())["traceEvents"]
    found = [e for e in events if e["ph"] == "i" and e["name"].startswith("check race")]
    assert found, events[-3:]
    line = line_of(GALLERY / "faulty.cpp", "overlap_relu(")
    assert all(e["args"]["at"].endswith(f"faulty.cpp:{line}") for e in found)
    assert {e["tid"] for e in found} <= set(range(8))


def test_a_fault_is_an_instant_on_its_core_at_its_line(tmp_path):
    from test_ci_checks import crash_op

    trace = tmp_path / "fault.json"
    p = crash_op(tmp_path, "--trace", trace)
    assert p.returncode == 3, p.stderr.decode()
    (fault,) = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "i"]
    assert fault["name"].startswith("fault: ") and fault["tid"] == 0
    assert f"k.cpp:{line_of(tmp_path / 'k.cpp', 'the fault')}" in fault["args"]["at"]


def test_the_cli_takes_the_backend_and_checks_from_the_environment_as_python_does(gallery, tmp_path):
    """D111: $GPSIMD_OPEN_ISA picks the CLI's backend where --isa is not given, and
    $GPSIMD_OPEN_CHECK=warn:LIST is its list (only Python turns findings into warnings)."""
    import os

    env = dict(os.environ, GPSIMD_OPEN_ISA="xtensa")
    trace = tmp_path / "env.json"
    p = run(NRT_POOL, "run", gallery / "libgallery.so", "gallery::clean", "--arg", gallery / "x.npy",
            "--out", tmp_path / "y.npy", "--trace", trace, env=env, check=False)
    assert p.returncode == 0, p.stderr.decode()
    events = json.loads(trace.read_text())["traceEvents"]
    (process,) = [e for e in events if e["name"] == "process_name"]
    assert "on xtensa cores" in process["args"]["name"], process
    env["GPSIMD_OPEN_CHECK"] = "warn:init"
    p = run(NRT_POOL, "run", gallery / "libgallery.so", "gallery::remainder", "--arg", gallery / "x.npy",
            "--out", tmp_path / "y.npy", env=env, check=False)
    assert p.returncode == 4, p.stderr.decode()
    assert "check init: kernel 'remainder'" in p.stderr.decode()
    env["GPSIMD_OPEN_ISA"] = "arm"
    p = run(NRT_POOL, "run", gallery / "libgallery.so", "gallery::clean", "--arg", gallery / "x.npy",
            "--out", tmp_path / "y.npy", env=env, check=False)
    assert p.returncode == 2 and b"GPSIMD_OPEN_ISA='arm': 'host' or 'xtensa'" in p.stderr, p.stderr


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_python_trace_writes_the_same_tracks_as_the_cli(gallery, tmp_path, isa):
    from gpsimd_open import custom_op

    lib = custom_op.load_library(str(gallery / "libgallery.so"), isa=isa)
    x = np.load(gallery / "x.npy")
    trace = tmp_path / "py.json"
    y = lib.clean(x, cores=8, trace=trace)
    assert y.shape == x.shape
    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert tracks == {c: f"core {c}" for c in range(8)}
    assert sorted(e["tid"] for e in events if e.get("cat") == "kernel") == list(range(8))
    # A path-like object too; a checked call's findings are instants at their lines.
    import pathlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            lib.overlap(x, cores=8, check="race", trace=pathlib.Path(tmp_path / "check.json"))
        except Exception:
            pass
    found = [e for e in json.loads((tmp_path / "check.json").read_text())["traceEvents"] if e["ph"] == "i"]
    if isa == "host":
        assert any(e["name"].startswith("check race") for e in found), found
    # An unwritable path is an OSError naming it; the launch's result is not lost silently.
    with pytest.raises(OSError, match="trace .*no-such-dir"):
        lib.clean(x, trace=tmp_path / "no-such-dir" / "t.json")
