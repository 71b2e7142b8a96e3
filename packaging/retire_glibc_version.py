#!/usr/bin/env python3
"""retire_glibc_version.py ELF VERSION: makes an x86-64 ELF program stop requiring glibc
version VERSION (e.g. GLIBC_2.36) once no symbol of it is bound to that version (patchelf
--clear-symbol-version does that part): its version-needed entry is renamed in place to
GLIBC_2.2.5, which every x86-64 glibc has, so the loader of an older glibc accepts the
program (D114). Refuses, changing nothing, if a symbol still uses the version."""
import struct
import sys

SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF
BASELINE = b"GLIBC_2.2.5"


def elf_hash(name: bytes) -> int:
    h = 0
    for c in name:
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def sections(data: bytes):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    out = []
    for i in range(shnum):
        off = shoff + i * shentsize
        _, typ, _, _, offset, size, link, _, _, entsize = struct.unpack_from("<IIQQQQIIQQ", data, off)
        out.append((typ, offset, size, link, entsize))
    return out


def cstr(data: bytes, at: int) -> bytes:
    return data[at:data.index(b"\0", at)]


def main() -> int:
    path, version = sys.argv[1], sys.argv[2].encode()
    data = bytearray(open(path, "rb").read())
    secs = sections(data)
    verneed = [s for s in secs if s[0] == SHT_GNU_VERNEED]
    versym = [s for s in secs if s[0] == SHT_GNU_VERSYM]
    if len(verneed) != 1 or len(versym) != 1:
        raise SystemExit(f"{path}: no single version-needed section")
    _, off, _, link, _ = verneed[0]
    strtab = secs[link][1]
    strsize = secs[link][2]
    baseline = bytes(data[strtab:strtab + strsize]).find(b"\0" + BASELINE + b"\0")
    if baseline < 0:
        raise SystemExit(f"{path}: {BASELINE.decode()} is not among its strings")
    baseline += 1
    found = None
    vn = off
    while True:
        _, cnt, _, aux, nxt = struct.unpack_from("<HHIII", data, vn)
        a = vn + aux
        for _ in range(cnt):
            _, _, other, name, anext = struct.unpack_from("<IHHII", data, a)
            if cstr(data, strtab + name) == version:
                found = (a, other)
            a += anext
        if not nxt:
            break
        vn += nxt
    if found is None:
        print(f"{path}: does not require {version.decode()}")
        return 0
    at, index = found
    _, soff, ssize, _, _ = versym[0]
    used = [i for i in range(ssize // 2) if struct.unpack_from("<H", data, soff + 2 * i)[0] & 0x7FFF == index]
    if used:
        raise SystemExit(f"{path}: {len(used)} symbol(s) still bound to {version.decode()}")
    struct.pack_into("<I", data, at, elf_hash(BASELINE))
    struct.pack_into("<I", data, at + 8, baseline)
    open(path + ".partial", "wb").write(data)
    import os
    os.chmod(path + ".partial", os.stat(path).st_mode)
    os.replace(path + ".partial", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
