#!/bin/sh
# Builds the Xtensa test library with the Debian toolchain (gcc-xtensa-lx106,
# binutils-xtensa-lx106):
#   OUT/kernels.o          the object
#   OUT/split.so           linked -shared with split.ld (scratch segment)
#   OUT/split-inline.so    linked -shared with split-inline.ld (tables inline in data)
# Used by the GNU ld oracle test, the tool tests and `make demo`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
xtensa-lx106-elf-gcc -O2 -fPIC -fvisibility=hidden -c "$here/kernels.c" -o "$out/kernels.o"
for script in split split-inline; do
    xtensa-lx106-elf-ld --no-warn-rwx-segments -shared -Bsymbolic -T "$here/$script.ld" \
        "$out/kernels.o" -o "$out/$script.so"
done
