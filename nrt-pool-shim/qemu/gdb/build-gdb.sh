#!/bin/sh
# Builds xtensa-elf-gdb for the emulated Pool cores (QEMU's de233_fpu as build-qemu.sh edits it;
# docs/decisions.md D83) from Debian's gdb source package, into OUT (a single binary).
# Debian's gdb has no Xtensa target, and an Xtensa gdb is built for one core configuration:
# overlay.py writes it from the configuration QEMU's source carries, so gdb and QEMU's gdb
# stub agree on every register.
#
# usage: build-gdb.sh OUT QEMU_SOURCE [WORK]
#   QEMU_SOURCE: the QEMU source tree build-qemu.sh prepared (its target/xtensa/core-de233_fpu)
#   WORK (default: OUT's directory/gdb-build) keeps the source and the build between runs;
#   a run with the same overlay, scripts and source and an existing OUT does nothing.
# The source comes from Debian's source package (packaging/debian-source.sh, a private apt
# state under WORK), or from $NRT_POOL_GDB_SOURCE, a gdb 13 .orig.tar.xz.
# Build dependencies (Debian): libgmp-dev, plus what builds QEMU. Built -O1 without debug
# information: it takes half the time, and a gdb's own speed hardly matters here.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: build-gdb.sh OUT QEMU_SOURCE [WORK]"
out="${1:?$usage}"
qemu_src="${2:?$usage}"
work="${3:-$(dirname "$out")/gdb-build}"
core="$qemu_src/target/xtensa/core-de233_fpu"
[ -f "$core/gdb-config.c.inc" ] || {
    echo "build-gdb.sh: no QEMU de233_fpu configuration at $core (make pool-qemu first)" >&2
    exit 1
}
mkdir -p "$work" "$(dirname "$out")"
work=$(cd "$work" && pwd)

stamp="$work/overlay.sha256"
want=$(cat "$here/overlay.py" "$0" "$core/gdb-config.c.inc" "$core/core-isa.h" \
    "$core/xtensa-modules.c.inc" | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

tarball="${NRT_POOL_GDB_SOURCE:-}"
if [ -z "$tarball" ]; then
    tarball=$("$here/../../../packaging/debian-source.sh" gdb "$work") || {
        echo "  set NRT_POOL_GDB_SOURCE to a gdb 13 tarball instead" >&2
        exit 1
    }
fi

# A new tarball or overlay starts the tree and its build over.
src="$work/src"
marker="$(basename "$tarball") $want"
if [ ! -f "$src/configure" ] || [ ! -f "$src/.nrt-pool-overlay" ] \
    || [ "$(cat "$src/.nrt-pool-overlay")" != "$marker" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    tar -xJf "$tarball" -C "$src" --strip-components=1
    python3 "$here/overlay.py" "$core" "$src"
    echo "$marker" >"$src/.nrt-pool-overlay"
fi

if [ ! -f "$src/build/Makefile" ]; then
    mkdir -p "$src/build"
    (
        cd "$src/build"
        ../configure --target=xtensa-elf --disable-werror --disable-nls --disable-sim \
            --disable-gdbserver --disable-tui --disable-source-highlight --without-python \
            --without-guile --without-expat --without-lzma --without-babeltrace \
            --without-debuginfod --without-libunwind-ia64 --with-system-zlib=no \
            --disable-ld --disable-gas --disable-binutils --disable-gprof --disable-gold \
            --disable-gdbsupport-tests MAKEINFO=true CFLAGS="-O0 -g0" CXXFLAGS="-O0 -g0" \
            >"$work/configure.log" 2>&1 \
            || { tail -n 30 "$work/configure.log" >&2; exit 1; }
    )
fi
# gdb's own sources (about 290 C++ files, most of the build) each open with "defs.h",
# which reads about half of each compile's headers. Once what it needs is built (the
# libraries gdb depends on and its configure), it is precompiled beside itself, where
# every `#include "defs.h"` finds it; GCC checks each use against the compile's options
# and reads the header instead where they differ. Optional: without it gdb builds as it
# did, only slower.
(
    cd "$src/build"
    deps=$(sed -n 's/^all-gdb: *//p' Makefile | tr ' ' '\n' | grep -v '\$' | tr '\n' ' ')
    make -j"$(nproc)" $deps MAKEINFO=true >"$work/build.log" 2>&1
    rm -f ../gdb/defs.h.gch
    compile=$(make -C gdb -n -W ../../gdb/valops.c valops.o 2>/dev/null | grep -o 'g++ -x c++ .* -c -o valops.o' | head -n 1)
    if [ -n "$compile" ]; then
        flags=${compile#g++ -x c++ }
        flags=${flags% -c -o valops.o}
        (cd gdb && eval "g++ -x c++-header $flags ../../gdb/defs.h -o ../../gdb/defs.h.gch") \
            >>"$work/build.log" 2>&1 || rm -f ../gdb/defs.h.gch
    fi
) || { grep -B2 -A10 -m5 "error" "$work/build.log" >&2; exit 1; }
(cd "$src/build" && make -j"$(nproc)" all-gdb MAKEINFO=true >>"$work/build.log" 2>&1) \
    || { grep -B2 -A10 -m5 "error" "$work/build.log" >&2; exit 1; }
strip -o "$out.tmp" "$src/build/gdb/gdb" 2>/dev/null || cp "$src/build/gdb/gdb" "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" >"$stamp"
