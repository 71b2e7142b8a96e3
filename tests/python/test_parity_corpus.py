"""The parity corpus, bounded: every case of tests/parity/corpus.py and the
examples on one core, host cores against Xtensa cores with checks off. Each case is equal
or flagged by the parity check; none differs silently, and the controls agree. `make
parity` runs the same on one, three and eight cores and prints the rate."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "parity"))

import run as parity  # noqa: E402

# make test-full (and make parity, on more cores): a long run over the whole corpus.
pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    return parity.run([1], tmp_path_factory.mktemp("parity"))


def test_no_case_differs_silently(rows):
    silent = [r for r in rows if r["verdict"] == "SILENT"]
    assert not silent, silent


def test_controls_and_examples_agree(rows):
    for r in rows:
        if r["class"] in ("control", "example"):
            assert r["verdict"] == "equal", r


def test_every_class_is_covered_and_the_rate_is_printed(rows, capsys):
    classes = {r["class"] for r in rows}
    for c in ("control", "data model", "arithmetic", "alignment", "C++ library", "C library", "example"):
        assert c in classes, c
    assert parity.report(rows) == 0
    out = capsys.readouterr().out
    assert "0 silent" in out and "parity: " in out, out
    # The data model, the C and C++ libraries are the device's on host cores (D97)...
    for r in rows:
        if r["class"] in ("data model", "C library", "C++ library"):
            assert r["verdict"] == "equal", r
    # ...so are float-to-integer conversions of NaN and out-of-range values (D117)...
    for case in ("float_to_u8", "nan_to_int"):
        r = next(r for r in rows if r["case"] == case)
        assert r["verdict"] == "equal", r
    # ...and alignment as the device build has it: where GCC for Xtensa moved a value in
    # pieces host cores give its bytes, where it faults they fault (D105, D125)...
    for r in rows:
        if r["class"] == "alignment":
            assert r["verdict"] == "equal", r
    # ...and what the machines' instructions still decide is named by the check, with
    # the element.
    flagged = [r for r in rows if r["class"] == "arithmetic" and r["verdict"] == "flagged"]
    assert flagged and all("element [" in r["parity"] for r in flagged), flagged
