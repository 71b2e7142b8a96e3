#!/bin/sh
# Builds qemu-system-xtensa with the nrt-pool machine (nrt-pool.c; docs/decisions.md D63)
# from Debian's QEMU source package, into OUT (a single binary), and beside it the TCG plugin
# that profiles a kernel (profile-plugin.c, libnrt-pool-profile.so; D83) and the one that
# records a kernel's tensor reads and writes (access-plugin.c, libnrt-pool-access.so; D101). Stock QEMU cannot map the
# engine's device memory into an Xtensa core; this machine can.
#
# usage: build-qemu.sh OUT [WORK]
#   WORK (default: OUT's directory/qemu-build) keeps the source and the build between runs;
#   a run with an unchanged nrt-pool.c and an existing OUT does nothing.
# The source comes from Debian's source package (packaging/debian-source.sh, a private apt
# state under WORK), or from $NRT_POOL_QEMU_SOURCE, a QEMU 7.2 .orig.tar.xz.
# Build dependencies (Debian): ninja-build meson libglib2.0-dev libpixman-1-dev libfdt-dev
# flex bison.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="${1:?usage: build-qemu.sh OUT [WORK]}"
work="${2:-$(dirname "$out")/qemu-build}"
mkdir -p "$work" "$(dirname "$out")"
work=$(cd "$work" && pwd)

stamp="$work/nrt-pool.c.sha256"
plugin="$(dirname "$out")/libnrt-pool-profile.so"
access="$(dirname "$out")/libnrt-pool-access.so"
want=$(sha256sum "$here/nrt-pool.c" "$here/profile-plugin.c" "$here/access-plugin.c" "$0" | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ -f "$plugin" ] && [ -f "$access" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi

tarball="${NRT_POOL_QEMU_SOURCE:-}"
if [ -z "$tarball" ]; then
    tarball=$("$here/../../../packaging/debian-source.sh" qemu "$work") || {
        echo "  set NRT_POOL_QEMU_SOURCE to a QEMU 7.2 tarball instead" >&2
        exit 1
    }
fi

# The source tree and its build stay in WORK, so a change to nrt-pool.c rebuilds one file;
# a new tarball or a change to the edits below (their level is in the marker) starts over.
src="$work/src"
marker="$(basename "$tarball") edits-6"
# Core CORE of the source with 64 physical address registers, its gdb register map naming
# the 32 added ones too (ar32-ar63, after ar31), so that a debugger (the gdb built from the
# map, build-gdb.sh) unwinds all 64; QEMU reads only their order, target numbers and types.
sixty_four_registers() {
    isa="$src/target/xtensa/core-$1/core-isa.h"
    sed -i -e 's/^\(#define XCHAL_NUM_AREGS[[:space:]]*\)32\b/\164/' \
        -e 's/^\(#define XCHAL_NUM_AREGS_LOG2[[:space:]]*\)5\b/\16/' "$isa"
    grep -q '^#define XCHAL_NUM_AREGS[[:space:]]*64' "$isa" \
        || { echo "build-qemu.sh: cannot set $1's register count in $isa" >&2; exit 1; }
    regs="$src/target/xtensa/core-$1/gdb-config.c.inc"
    awk '{ print }
        /XTREG\( *32,.*,ar31,/ {
            for (i = 32; i < 64; i++)
                printf "  XTREG(%3d,%3d,32, 4, 4,0x%04x,0x0006,-2, 1,0x0002,ar%d,        0,0,0,0,0,0)\n", i + 1, 4 * (i + 1), 256 + i, i
        }' "$regs" >"$regs.new"
    mv "$regs.new" "$regs"
    grep -q ',ar63,' "$regs" \
        || { echo "build-qemu.sh: cannot add ar32-ar63 to $regs" >&2; exit 1; }
}

if [ ! -f "$src/configure" ] || [ ! -f "$src/.nrt-pool-tarball" ] \
    || [ "$(cat "$src/.nrt-pool-tarball")" != "$marker" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    tar -xJf "$tarball" -C "$src" --strip-components=1
    echo "xtensa_ss.add(when: 'CONFIG_XTENSA_SIM', if_true: files('nrt-pool.c'))" \
        >> "$src/hw/xtensa/meson.build"
    # de212 and the Pool cores' configuration with 64 physical address registers
    # instead of 32 (D63): windowed code then takes fewer window overflow and underflow
    # exceptions, each an exit from translated code; the code itself cannot tell.
    sixty_four_registers de212
    # The Pool cores' configuration (D86): de233_fpu's instruction set, with its
    # single-precision FPU and booleans, laid out as de212 (the board's map: reset vector
    # at 0x50000000, vectors at 0x60000000, no MMU, region protection).
    sixty_four_registers de233_fpu
    isa="$src/target/xtensa/core-de233_fpu/core-isa.h"
    sed -i -e 's/^\(#define XCHAL_HAVE_IDENTITY_MAP[[:space:]]*\)0\b/\11/' \
        -e 's/^\(#define XCHAL_HAVE_MIMIC_CACHEATTR[[:space:]]*\)0\b/\11/' \
        -e 's/^\(#define XCHAL_HAVE_PTP_MMU[[:space:]]*\)1\b/\10/' \
        -e 's/^\(#define XCHAL_MMU_ASID_BITS[[:space:]]*\)8\b/\10/' \
        -e 's/^\(#define XCHAL_MMU_RINGS[[:space:]]*\)4\b/\11/' \
        -e 's/^\(#define XCHAL_MMU_RING_BITS[[:space:]]*\)2\b/\10/' \
        -e 's/^\(#define XCHAL_RESET_VECTOR0_[VP]ADDR[[:space:]]*\)0xFE000000/\10x50000000/' \
        -e 's/^\(#define XCHAL_RESET_VECTOR1_[VP]ADDR[[:space:]]*\)0x00001000/\10x40000400/' \
        -e 's/^\(#define XCHAL_[A-Z0-9_]*\(VECTOR\|VECTORS\|VECBASE_RESET\)_[VP]ADDR[[:space:]]*\)0x00002/\10x60000/' \
        "$isa"
    for want in 'XCHAL_HAVE_PTP_MMU[[:space:]]*0' 'XCHAL_HAVE_MIMIC_CACHEATTR[[:space:]]*1' \
        'XCHAL_RESET_VECTOR0_VADDR[[:space:]]*0x50000000' \
        'XCHAL_VECBASE_RESET_VADDR[[:space:]]*0x60000000' 'XCHAL_USER_VECTOR_VADDR[[:space:]]*0x60000340'; do
        grep -q "^#define $want" "$isa" \
            || { echo "build-qemu.sh: cannot set $want in $isa" >&2; exit 1; }
    done
    # The machine's window lookup, for the access plugin (D101): exported beside the
    # plugin API.
    sed -i 's/^{$/{\n  nrt_pool_soc_of;/' "$src/plugins/qemu-plugins.symbols"
    grep -q 'nrt_pool_soc_of;' "$src/plugins/qemu-plugins.symbols" \
        || { echo "build-qemu.sh: cannot export nrt_pool_soc_of" >&2; exit 1; }
    echo "$marker" >"$src/.nrt-pool-tarball"
fi
cp "$here/nrt-pool.c" "$src/hw/xtensa/nrt-pool.c"

if [ ! -f "$src/build/build.ninja" ]; then
    mkdir -p "$src/build"
    (
        cd "$src/build"
        ../configure --target-list=xtensa-softmmu --without-default-features \
            --without-default-devices --disable-docs --disable-tools --disable-user \
            --disable-install-blobs --disable-werror --enable-tcg --enable-plugins \
            >"$work/configure.log" 2>&1 \
            || { tail -n 30 "$work/configure.log" >&2; exit 1; }
    )
fi
(cd "$src/build" && ninja -j"$(nproc)" qemu-system-xtensa >"$work/build.log" 2>&1) \
    || { grep -B2 -A10 -m5 "error" "$work/build.log" >&2; exit 1; }
cc -shared -fPIC -O2 -Wall -Werror -I "$src/include/qemu" "$here/profile-plugin.c" -o "$plugin.tmp"
mv "$plugin.tmp" "$plugin"
cc -shared -fPIC -O2 -Wall -Werror -I "$src/include/qemu" "$here/access-plugin.c" -o "$access.tmp"
mv "$access.tmp" "$access"
strip -o "$out.tmp" "$src/build/qemu-system-xtensa" 2>/dev/null || cp "$src/build/qemu-system-xtensa" "$out.tmp"
mv "$out.tmp" "$out"
echo "$want" >"$stamp"
