"""Checking mode in a CI pipeline: a suppression file keeps judged-benign findings out
(`nrt-pool run --suppress`, Python `suppress=`), the report says which entries matched and
which never did, `--report` writes SARIF 2.1.0 (validated by Microsoft's SARIF Multitool
against the schema) pointing at the kernel's source lines, and the exit status tells clean,
findings, suppressed only, fault and usage error apart."""
import json
import re
import subprocess

import numpy as np
import pytest

from conftest import NRT_POOL, ROOT, built_gallery, line_of, run

GALLERY = ROOT / "examples" / "check-gallery"
SARIF_TOOL = ROOT / "target" / "tools" / "sarif" / "node_modules" / ".bin" / "sarif-multitool"
N = 1003

# The documented exit statuses (nrt-pool run --help, README).
CLEAN, ERROR, USAGE, FAULT, FOUND, SUPPRESSED_ONLY = 0, 1, 2, 3, 4, 5


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    return built_gallery(tmp_path_factory.mktemp("ci-gallery"), N)


def validate_sarif(path):
    """The SARIF Multitool's verdict on `path`: its errors (none: valid)."""
    if not SARIF_TOOL.exists():
        pytest.fail(f"the SARIF Multitool is not installed ({SARIF_TOOL}): run `make tools`")
    out = path.with_suffix(".validation.sarif")
    p = subprocess.run([str(SARIF_TOOL), "validate", str(path), "-o", str(out), "--log", "ForceOverwrite"],
                       capture_output=True, timeout=300)
    assert p.returncode == 0, p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace")
    verdict = json.loads(out.read_text())
    problems = [r for run_ in verdict["runs"] for r in run_.get("results", [])
                if r.get("level", "warning") == "error"]
    return [r["message"].get("text", r["message"]) for r in problems]


def nrt_pool_run(lib_dir, op, *extra, isa="host"):
    return run(NRT_POOL, "run", lib_dir / "libgallery.so", "--isa", isa, op, "--arg", lib_dir / "x.npy",
               "--out", lib_dir / f"y-{isa}.npy", *extra, check=False)


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_a_suppressed_finding_exits_5_and_the_report_names_matched_and_unused_entries(gallery, tmp_path, isa):
    supp = tmp_path / "ci.supp"
    supp.write_text(
        "# the last elements are written by the next op (judged benign)\n"
        "init op=gallery::remainder tensor=\"the output\" elements=1000..1003\n"
        "race kernel=nobody\n")
    report = tmp_path / "checks.sarif"
    p = nrt_pool_run(gallery, "gallery::remainder", "--check", "--suppress", supp, "--report", report, isa=isa)
    err = p.stderr.decode()
    assert p.returncode == SUPPRESSED_ONLY, err
    assert f"suppression {supp}:2 matched 1 finding(s): init op=gallery::remainder" in err, err
    assert f"suppression {supp}:3 never matched: race kernel=nobody" in err, err
    assert "nrt-pool: check init" not in err, "a suppressed finding is not listed as found"
    assert validate_sarif(report) == []
    log = json.loads(report.read_text())
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "init" and result["suppressions"][0]["kind"] == "external"
    assert f"{supp.name}:2:" in result["suppressions"][0]["justification"]
    region = result["locations"][0]["physicalLocation"]
    assert region["artifactLocation"]["uri"].endswith("examples/check-gallery/faulty.cpp")
    assert region["region"]["startLine"] == line_of(GALLERY / "faulty.cpp", "remainder_relu(")


@pytest.mark.parametrize("isa", ["host", "xtensa"])
def test_findings_exit_4_and_are_in_the_sarif_at_the_kernels_line(gallery, tmp_path, isa):
    report = tmp_path / "found.sarif"
    p = nrt_pool_run(gallery, "gallery::overlap", "--check", "--report", report, isa=isa)
    assert p.returncode == FOUND, p.stderr.decode()
    assert validate_sarif(report) == []
    results = json.loads(report.read_text())["runs"][0]["results"]
    assert results and all("suppressions" not in r for r in results)
    assert {r["ruleId"] for r in results} == {"race"}
    lines = {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results}
    assert lines == {line_of(GALLERY / "faulty.cpp", "overlap_relu(")}


def test_a_clean_run_exits_0_with_an_empty_valid_report(gallery, tmp_path):
    report = tmp_path / "clean.sarif"
    p = nrt_pool_run(gallery, "gallery::clean", "--check=all", "--report", report)
    assert p.returncode == CLEAN, p.stderr.decode()
    assert validate_sarif(report) == []
    assert json.loads(report.read_text())["runs"][0]["results"] == []


@pytest.mark.parametrize("text, line, why", [
    ("init\nbogus op=x\n", 2, "'bogus' is no check"),
    ("race where=here\n", 1, "unknown field 'where'"),
    ("init elements=9..3\n", 1, "elements=9..3"),
])
def test_a_malformed_suppression_file_is_a_usage_error_naming_its_line(gallery, tmp_path, text, line, why):
    supp = tmp_path / "bad.supp"
    supp.write_text(text)
    p = nrt_pool_run(gallery, "gallery::remainder", "--check", "--suppress", supp)
    err = p.stderr.decode()
    assert p.returncode == USAGE, err
    assert f"{supp}:{line}: " in err and why in err, err


FAULTY = r"""
#include <torch/torch.h>
torch::Tensor crash(const torch::Tensor &x) {
    torch::Tensor y = get_dst_tensor();
    volatile int *nowhere = nullptr;
    *nowhere = int(x.numel());  // the fault
    return y;
}
"""
FAULTY_SHAPE = r"""
#include <torch/torch.h>
#include "torchneuron/register.h"
torch::Tensor crash_shape(torch::Tensor x) { return torch::zeros(x.sizes(), torch::kFloat); }
NEURON_LIBRARY(ci_ops, m) { m.def("crash", &crash_shape, "crash"); }
"""


def crash_op(d, *extra):
    """The op whose kernel writes through a null pointer (FAULTY), built in `d` and run
    with `extra` flags: the finished `nrt-pool run`."""
    (d / "k.cpp").write_text(FAULTY)
    (d / "s.cpp").write_text(FAULTY_SHAPE)
    run(NRT_POOL, "build", "--name", "ci_ops", "--compute", d / "k.cpp", "--shape", d / "s.cpp",
        "--build-directory", d)
    np.save(d / "x.npy", np.ones(8, dtype=np.float32))
    return run(NRT_POOL, "run", d / "libci_ops.so", "ci_ops::crash", "--arg", d / "x.npy",
               "--out", d / "y.npy", *extra, check=False)


def test_a_fault_exits_3_and_is_in_the_sarif_at_its_line(tmp_path):
    report = tmp_path / "fault.sarif"
    p = crash_op(tmp_path, "--check", "--report", report)
    assert p.returncode == FAULT, p.stderr.decode()
    assert validate_sarif(report) == []
    (result,) = json.loads(report.read_text())["runs"][0]["results"]
    assert result["ruleId"] == "fault"
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("k.cpp")
    assert loc["region"]["startLine"] == line_of(tmp_path / "k.cpp", "the fault")


def test_python_suppress_keeps_matched_findings_out_of_check_error(gallery, tmp_path):
    from gpsimd_open import custom_op
    from gpsimd_open._check import CheckError

    supp = tmp_path / "py.supp"
    supp.write_text("init op=remainder\nrace kernel=nobody\n")
    lib = custom_op.load_library(gallery / "libgallery.so", suppress=supp)
    x = np.load(gallery / "x.npy")
    y = lib.ops["remainder"](x, check=True)  # its one finding suppressed: no CheckError
    assert y.shape == (N,)
    entries = lib.suppressions()
    assert [(e["line"], e["matched"]) for e in entries] == [(1, 1), (2, 0)], entries
    with pytest.raises(CheckError, match="race"):
        lib.ops["overlap"](x, check=True)
    assert [e["matched"] for e in lib.suppressions()] == [1, 0], "the race was not suppressed"
    bad = tmp_path / "bad.supp"
    bad.write_text("init\nnonsense here\n")
    with pytest.raises(ValueError, match=re.escape(f"{bad}:2: 'nonsense' is no check")):
        custom_op.load_library(gallery / "libgallery.so", suppress=bad)
