"""`make parity`: the parity corpus (corpus.py) and the examples on host cores and on Xtensa
cores (the device build), in one, three and eight cores, with checks off; then, for each
case, `check="parity"` on host cores. Prints one line per case and the parity rate.

A case is:
- equal: both builds give the same bytes (or the same kind of fault) and the parity
  check is silent;
- flagged: they differ, or the parity check names a difference (stdout, a fault only one
  build gives), with the class the check or the corpus gives;
- SILENT: they differ and the parity check says nothing: host cores lie. The goal is
  none; the exit status is 1 when there is one.

Usage: python tests/parity/run.py [--cores 1,3,8] [--work DIR] [--json FILE]"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
from gpsimd_open import CheckError, CheckWarning, DeviceFault, custom_op  # noqa: E402

X = np.arange(16, dtype=np.float32)


def outcome(lib, op, cores, args, check=None):
    """("ok", bytes) or ("fault", kind, message) of one call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CheckWarning)
            r = lib.ops[op](*args, cores=cores, check=check)
        return ("ok", np.asarray(r).tobytes())
    except DeviceFault as e:
        return ("fault", e.kind, str(e))


def parity_flag(lib, op, cores, args):
    """What check="parity" on this build says: None (silent) or the finding's text."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CheckWarning)
            lib.ops[op](*args, cores=cores, check="parity")
        return None
    except CheckError as e:
        return "; ".join(f["message"] for f in e.findings)
    except DeviceFault as e:
        text = str(e)
        if "check parity:" in text and "fault too" not in text:
            return text
        return None


def libraries(work):
    """(label, host library, Xtensa library, cases) for the corpus and the examples."""
    out = []
    for i, cases in enumerate(corpus.group(corpus.CASES)):
        ns = f"parity{i}"
        d = work / ns
        d.mkdir(parents=True, exist_ok=True)
        kernels, shapes = corpus.sources(ns, cases)
        (d / "k.cpp").write_text(kernels)
        (d / "s.cpp").write_text(shapes)
        custom_op.load(ns, [d / "k.cpp"], [d / "s.cpp"], build_directory=d / "out", isa="xtensa")
        host = custom_op.load_library(d / "out" / f"lib{ns}.so")
        xt = custom_op.load_library(d / "out" / f"lib{ns}.pool")
        out.append((ns, host, xt, [(name, cls, (X,)) for name, cls, _ in cases]))
    # The examples, as the guide writes ops.
    ex = ROOT / "examples"
    rng = np.random.default_rng(40)
    x = rng.standard_normal(4099).astype(np.float32)
    for ns, compute, shape, multicore, cases in (
        ("mlp_ops", [ex / "mlp/relu.cpp"], [ex / "mlp/shape.cpp"], False,
         [("relu_forward", "example", (x,)), ("relu_backward", "example", (x, x)),
          ("axpb", "example", (x, 2.0, 0.5))]),
        ("tiles", [ex / "multicore/relu_tiles.cpp"], [ex / "multicore/shape.cpp"], True,
         [("relu", "example", (x,))]),
    ):
        d = work / ns
        custom_op.load(ns, compute, shape, build_directory=d, multicore=multicore, isa="xtensa")
        host = custom_op.load_library(d / f"lib{ns}.so")
        xt = custom_op.load_library(d / f"lib{ns}.pool")
        out.append((ns, host, xt, cases))
    return out


def run(cores_list, work):
    rows = []
    for ns, host, xt, cases in libraries(work):
        for name, cls, args in cases:
            for cores in cores_list:
                h = outcome(host, name, cores, args)
                d = outcome(xt, name, cores, args)
                same = h[:2] == d[:2]
                flag = parity_flag(host, name, cores, args)
                verdict = "equal" if same and flag is None else ("flagged" if flag else "SILENT")
                rows.append({
                    "library": ns, "case": name, "class": cls, "cores": cores,
                    "host": h[0] if h[0] == "ok" else f"fault ({h[1]})",
                    "device": d[0] if d[0] == "ok" else f"fault ({d[1]})",
                    "verdict": verdict, "parity": flag,
                })
    return rows


def report(rows, out=None):
    """Prints the runs and the rate on `out` (stdout); returns how many were silent."""
    out = out or sys.stdout
    for r in rows:
        print(f"{r['verdict']:8} {r['class']:12} {r['library']}::{r['case']:<18} cores={r['cores']} "
              f"host={r['host']:<24} device={r['device']}", file=out)
    n = len(rows)
    equal = sum(r["verdict"] == "equal" for r in rows)
    flagged = sum(r["verdict"] == "flagged" for r in rows)
    silent = n - equal - flagged
    print(f"parity: {n} runs: {equal} equal, {flagged} flagged by --check=parity, {silent} silent "
          f"(rate {100.0 * (equal + flagged) / max(n, 1):.1f}% equal or flagged; "
          f"{100.0 * equal / max(n, 1):.1f}% equal)", file=out)
    return silent


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cores", default="1,3,8")
    p.add_argument("--work", type=pathlib.Path)
    p.add_argument("--json", type=pathlib.Path)
    a = p.parse_args(argv)
    cores = [int(c) for c in a.cores.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        rows = run(cores, a.work or pathlib.Path(tmp))
    silent = report(rows)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 1 if silent else 0


if __name__ == "__main__":
    sys.exit(main())
