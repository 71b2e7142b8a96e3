"""A launch to look at: `nrt-pool run --trace FILE.json` writes the Trace Event format (one
track per core, the kernel and its functions, the tensor copies with their bytes, faults
and findings as instants at their source lines), and `--profile=FILE.svg` an SVG flame graph
(all cores folded, then each core, functions labelled with their source lines). Both are
read back here, and opened as a user opens them: the trace in speedscope, the flame graph
as a page, each in headless Chromium, checking what it lists and that it draws."""
import contextlib
import functools
import http.server
import json
import os
import shutil
import struct
import subprocess
import threading
import xml.etree.ElementTree as ET
import zlib

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
        # Each copy is a span with its bytes, where it began (D120): the kernel copies its
        # tile in, then out, on every core, with the loop's compute between.
        for c in range(8):
            steps = sorted((e for e in events if e.get("tid") == c and e.get("cat") in ("copy", "compute")),
                           key=lambda e: e["ts"])
            copies = [e for e in steps if e["cat"] == "copy"]
            assert [e["args"]["direction"] for e in copies][-1] == "out", copies
            assert "in" in [e["args"]["direction"] for e in copies], copies
            # A run of like copies is one span that says how many (D120).
            for e in copies:
                n, d, b = e["args"]["copies"], e["args"]["direction"], e["args"]["bytes"]
                assert b > 0 and e["name"] == (f"copy {d}: {b} B" if n == 1 else f"{n} copies {d}: {b} B each"), e
            last_in = max(i for i, e in enumerate(steps) if e["cat"] == "copy" and e["args"]["direction"] == "in")
            loop = steps[last_in + 1]
            assert loop["cat"] == "compute" and loop["ts"] + loop["dur"] <= copies[-1]["ts"] + 1e-6
            inside = [e["name"] for e in events if e.get("tid") == c and e.get("cat") == "function"
                      and loop["ts"] - 1e-6 <= e["ts"] < loop["ts"] + loop["dur"]]
            assert any(f.startswith("gallery::relu(") for f in inside), inside
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


# Host cores' measured timeline (D124): a kernel long enough to sample, whose functions
# are kept apart (noinline), moving its slice through a TCM tile.
SAMPLED_KERNEL = r"""
#include <stdint.h>
#include <torch/torch.h>
#include <neuron/neuron-utils.hpp>
__attribute__((noinline)) static float clamp0(float v) { return v > 0.0f ? v : 0.0f; }
__attribute__((noinline)) static void tile_relu(float *buf, size_t k) {
    for (size_t i = 0; i < k; i++) buf[i] = clamp0(buf[i]);
}
torch::Tensor sampled_relu(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    size_t n = size_t(x.numel());
    uint32_t id = get_cpu_id(), cores = get_cpu_count();
    size_t per = n / cores, begin = per * id, end = begin + per;
    static constexpr size_t tile = 512;
    float *buf = static_cast<float *>(torch::neuron::tcm_malloc(tile * sizeof(float)));
    auto in = x.tcm_accessor();
    auto out = y.tcm_accessor();
    for (int rep = 0; rep < REPS; rep++)
        for (size_t at = begin; at < end; at += tile) {
            in.tensor_to_tcm<float>(buf, at, tile);
            tile_relu(buf, tile);
            out.tcm_to_tensor<float>(buf, at, tile);
        }
    torch::neuron::tcm_free(buf);
    return y;
}
"""
SAMPLED_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor sampled_shape(torch::Tensor x) { return torch::empty(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(sampled, m) { m.def("relu", &sampled_shape, "sampled_relu"); }
"""


@pytest.mark.parametrize("model", ["device", "host"])
def test_host_cores_trace_each_copy_and_their_sampled_functions_nested(tmp_path, model):
    reps, per_core, tile = 40, 8192, 512
    (tmp_path / "k.cpp").write_text(SAMPLED_KERNEL.replace("REPS", str(reps)))
    (tmp_path / "s.cpp").write_text(SAMPLED_SHAPE)
    run(NRT_POOL, "build", "--name", "sampled", "--compute", tmp_path / "k.cpp", "--shape", tmp_path / "s.cpp",
        "--multicore", "--data-model", model, "--build-directory", tmp_path)
    x = (np.arange(8 * per_core, dtype=np.float32) - 1000.0)
    np.save(tmp_path / "x.npy", x)
    trace, svg = tmp_path / "t.json", tmp_path / "f.svg"
    p = run(NRT_POOL, "run", "--isa", "host", tmp_path / "libsampled.so", "sampled::relu", "--arg", tmp_path / "x.npy",
            "--out", tmp_path / "y.npy", f"--profile={svg}", "--trace", trace)
    assert np.array_equal(np.load(tmp_path / "y.npy"), np.maximum(x, 0))
    report = p.stdout.decode() + p.stderr.decode()
    assert "call stacks sampled every" in report and "tile_relu" in report, report
    events = json.loads(trace.read_text())["traceEvents"]
    sampled = set()
    for c in range(8):
        spans = [e for e in events if e["ph"] == "X" and e["tid"] == c]
        (kernel,) = [e for e in spans if e["cat"] == "kernel"]
        copies = [e for e in spans if e["cat"] == "copy"]
        # Every copy, each a span with its bytes where it ran, in order: in, out, in, ...;
        # those past the log's 1024 runs counted on the kernel's span (D120's rule).
        logged = sum(e["args"]["copies"] for e in copies)
        assert len(copies) == 1024 and all(e["args"]["copies"] == 1 for e in copies)
        assert logged + kernel["args"]["copies_not_timed"] == 2 * reps * per_core // tile
        assert all(e["args"]["bytes"] == tile * 4 for e in copies)
        copies.sort(key=lambda e: e["ts"])
        assert [e["args"]["direction"] for e in copies[:2]] == ["in", "out"]
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-6 for a, b in zip(copies, copies[1:]))
        # Spans nest: each lies inside the kernel and none crosses another's end.
        order = sorted(spans, key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in order:
            s, d = e["ts"], e["ts"] + e["dur"]
            assert s >= -1e-6 and d <= kernel["dur"] + 1e-3, e
            while open_ends and open_ends[-1] <= s + 1e-6:
                open_ends.pop()
            assert not open_ends or d <= open_ends[-1] + 1e-6, (e, open_ends[-1])
            open_ends.append(d)
        sampled |= {e["name"] for e in spans if e["cat"] == "function"}
    assert "tile_relu" in sampled and any(f.startswith("sampled_relu(") for f in sampled), sampled
    line = line_of(tmp_path / "k.cpp", "static void tile_relu")
    assert f"tile_relu (k.cpp:{line})" in svg.read_text()


# Opening the views as a user does (make tools installs both: speedscope from npm, Chromium
# from Debian).
SPEEDSCOPE = ROOT / "target" / "tools" / "speedscope" / "node_modules" / "speedscope" / "dist" / "release"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
viewer = pytest.mark.skipif(CHROMIUM is None or not (SPEEDSCOPE / "index.html").exists(),
                            reason="UNSUPPORTED: headless Chromium or speedscope is not installed (make tools)")


@contextlib.contextmanager
def served(folder):
    """`folder` over HTTP on a free local port (speedscope fetches its profile: file:// pages
    may not)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}"
    finally:
        srv.shutdown()


def chromium(url, tmp_path):
    """What headless Chromium makes of `url` once its scripts ran (5 s of the page's virtual
    time: enough for speedscope to fetch and import a trace): (the DOM, the pixels of a
    1200x800 screenshot)."""
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
              f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800"]
    dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    shot = tmp_path / "shot.png"
    subprocess.run(common + [f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True)
    return dom, png_pixels(shot)


def png_pixels(path):
    """The (r, g, b) pixels of an 8-bit RGB or RGBA PNG, row after row."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    at, idat = 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    out, prev = [], bytearray(stride)
    for y in range(h):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pred = a if abs(p - a) <= min(abs(p - b), abs(p - c)) else b if abs(p - b) <= abs(p - c) else c
                line[i] = (line[i] + pred) & 255
        out.extend(tuple(line[x * bpp:x * bpp + 3]) for x in range(w))
        prev = line
    return out


def coloured(pixels):
    """The share of pixels with a colour (not white, black or grey): drawn frames."""
    return sum(1 for p in pixels if max(p) - min(p) >= 30) / len(pixels)


@viewer
def test_the_trace_of_an_8_core_launch_opens_in_speedscope_with_eight_tracks(gallery, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    os.symlink(SPEEDSCOPE, site / "speedscope")
    p, trace, _ = launch(gallery, "gallery::clean", "xtensa", tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    shutil.copy(trace, site / "launch.json")
    with served(site) as url:
        dom, pixels = chromium(f"{url}/speedscope/index.html#profileURL={url}/launch.json", tmp_path)
    # speedscope read the file: its title, and a profile per track, core 0 shown first.
    assert "launch.json - speedscope" in dom, dom[:500]
    assert "(1/8)" in dom, dom[:2000]
    for c in range(8):
        assert f"core {c} (tid {c})" in dom, f"core {c} is not among the viewer's tracks"
    # And drew it: the kernel's and its functions' frames fill a good part of the view.
    assert coloured(pixels) > 0.05, coloured(pixels)


@viewer
def test_the_flame_graph_renders_as_a_page_with_the_kernels_functions(gallery, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    _, _, svg = launch(gallery, "gallery::clean", "xtensa", tmp_path)
    shutil.copy(svg, site / "flame.svg")
    with served(site) as url:
        dom, pixels = chromium(f"{url}/flame.svg", tmp_path)
    assert "clean_relu(torch::Tensor const&amp;)" in dom, dom[:500]
    assert "all cores" in dom and "core 7" in dom
    assert coloured(pixels) > 0.05, coloured(pixels)
