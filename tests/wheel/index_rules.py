"""index_rules.py WHEEL: what a package index and the manylinux tag ask of the wheel (D114):
it carries a manylinux tag; every x86-64 ELF in it needs no glibc version newer than the
tag allows (its version-needed entries, read with objdump); the 32-bit core runner needs
no C library at all (statically linked); and the file is within the index's 100 MB. Prints
the newest version found; exits 1 naming each file that breaks a rule."""
import os
import re
import subprocess
import sys
import tempfile
import zipfile


def versions(path):
    out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True).stdout
    return {tuple(int(n) for n in v.split(".")) for v in re.findall(r"\bGLIBC_(\d+\.\d+(?:\.\d+)?)\b", out)}


def main():
    wheel = sys.argv[1]
    tag = re.search(r"manylinux_(\d+)_(\d+)_x86_64\.whl$", wheel)
    if not tag:
        print(f"index_rules: {wheel} has no manylinux tag")
        return 1
    floor = (int(tag[1]), int(tag[2]))
    bad, newest, checked = [], (0, 0), 0
    with tempfile.TemporaryDirectory() as d, zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            with z.open(info) as f:
                head = f.read(20)
            if head[:4] != b"\x7fELF":
                continue
            path = z.extract(info, d)
            machine = int.from_bytes(head[18:20], "little")
            if machine == 3:  # EM_386: the core runner
                interp = subprocess.run(["objdump", "-p", path], capture_output=True, text=True).stdout
                if "INTERP" in interp or "NEEDED" in interp:
                    bad.append(f"{info.filename}: a 32-bit program that loads the system's C library")
                continue
            if machine != 62:  # EM_X86_64; the Xtensa board and crt objects run elsewhere
                continue
            checked += 1
            for v in versions(path):
                newest = max(newest, v)
                if v > floor:
                    bad.append(f"{info.filename}: GLIBC_{'.'.join(map(str, v))}")
    print(f"index_rules: {checked} x86-64 ELF files, newest glibc needed "
          f"{'.'.join(map(str, newest))}, tag allows {floor[0]}.{floor[1]}")
    size = os.path.getsize(wheel)
    if size > 100 * 10**6:
        bad.append(f"the wheel is {size / 1e6:.1f} MB: package indexes take at most 100 MB")
    for b in bad:
        print(f"index_rules: too new: {b}")
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
