#!/bin/sh
# Installs the built tree (make install): ROOT is the repository, DEST is DESTDIR+PREFIX.
# Writes DEST/share/gpsimd-open/install_manifest.txt, which `make uninstall` reads.
# Files are copied beside their destination and renamed into place.
set -eu
ROOT=$1
DEST=$2
VERSION=$3
REL="$ROOT/target/release"
ARCH="$ROOT/target/customop"
MANIFEST="$DEST/share/gpsimd-open/install_manifest.txt"
mkdir -p "$DEST/share/gpsimd-open"
: > "$MANIFEST.partial"

put() { # put SRC DST MODE
    mkdir -p "$(dirname "$2")"
    cp "$1" "$2.partial"
    chmod "$3" "$2.partial"
    mv -f "$2.partial" "$2"
    echo "$2" >> "$MANIFEST.partial"
}
subst() { # subst SRC DST: @VERSION@ filled in
    mkdir -p "$(dirname "$2")"
    sed "s/@VERSION@/$VERSION/g" "$1" > "$2.partial"
    chmod 644 "$2.partial"
    mv -f "$2.partial" "$2"
    echo "$2" >> "$MANIFEST.partial"
}

for f in nrtucode_extisa.h nrt_pool.h nrt_sim_device.h; do
    put "$ROOT/include/$f" "$DEST/include/$f" 644
done
# The op author's headers under their own directory: include/gpsimd-open/{torch,c10,ATen,neuron,...}
# (never next to a real libtorch's include/torch).
(cd "$ROOT/include" && find neuron_customop.hpp torch c10 ATen neuron torchneuron device -type f) | while read -r f; do
    put "$ROOT/include/$f" "$DEST/include/gpsimd-open/$f" 644
done
for lib in libnrtucode_extisa.so libnrt_pool_shim.so libnrt_sim_device.so; do
    put "$REL/$lib" "$DEST/lib/$lib" 755
done
for t in x86_64-unknown-linux-gnu riscv32imac-unknown-none-elf xtensa-q7-none-elf; do
    put "$ARCH/$t/release/libneuroncustomop.a" "$DEST/lib/gpsimd-open/$t/libneuroncustomop.a" 644
    # The digest an op build checks the archive against (D109), where make wrote one.
    if [ -f "$ARCH/$t/release/libneuroncustomop.a.sha256" ]; then
        put "$ARCH/$t/release/libneuroncustomop.a.sha256" "$DEST/lib/gpsimd-open/$t/libneuroncustomop.a.sha256" 644
    fi
done
# The board that runs Xtensa Pool images on QEMU cores (nrt-pool-shim/qemu/board/).
# Host cores in the device's data model (D97): the i386 runtime and the 32-bit core runner.
put "$ARCH/i386-device/libneuroncustomop.a" "$DEST/lib/gpsimd-open/i386-device/libneuroncustomop.a" 644
if [ -f "$ARCH/i386-device/libneuroncustomop.a.sha256" ]; then
    put "$ARCH/i386-device/libneuroncustomop.a.sha256" "$DEST/lib/gpsimd-open/i386-device/libneuroncustomop.a.sha256" 644
fi
put "$ARCH/i386-device/libgcc.a" "$DEST/lib/gpsimd-open/i386-device/libgcc.a" 644
put "$ARCH/i386-device/runtime-frames.txt" "$DEST/lib/gpsimd-open/i386-device/runtime-frames.txt" 644
if [ -f "$ARCH/i386-device/libgcc.a.sha256" ]; then
    put "$ARCH/i386-device/libgcc.a.sha256" "$DEST/lib/gpsimd-open/i386-device/libgcc.a.sha256" 644
fi
put "$ARCH/i386-device/nrt-pool-core" "$DEST/libexec/gpsimd-open/nrt-pool-core" 755
put "$ARCH/xtensa-q7-none-elf/pool-board.elf" "$DEST/lib/gpsimd-open/xtensa-q7-none-elf/pool-board.elf" 644
# QEMU with the nrt-pool machine, which the cores run on (D63; GPL-2.0-or-later).
put "$ARCH/xtensa-q7-none-elf/qemu-system-xtensa" "$DEST/libexec/gpsimd-open/qemu-system-xtensa" 755
# The gdb for those cores, beside it (nrt-pool gdb; D83; GPL-3.0-or-later), and QEMU's
# plugin that profiles kernels (nrt-pool run --profile; D83).
put "$ARCH/xtensa-q7-none-elf/xtensa-elf-gdb" "$DEST/libexec/gpsimd-open/xtensa-elf-gdb" 755
put "$ARCH/xtensa-q7-none-elf/libnrt-pool-profile.so" "$DEST/libexec/gpsimd-open/libnrt-pool-profile.so" 644
# The plugin that records a checked launch's tensor reads and writes (--check=race; D101).
put "$ARCH/xtensa-q7-none-elf/libnrt-pool-access.so" "$DEST/libexec/gpsimd-open/libnrt-pool-access.so" 644
# The Xtensa link scripts and start code for device images (customop-device/xtensa/).
for f in pool-core.ld sim.ld sim-start.S window-vectors.inc; do
    put "$ROOT/customop-device/xtensa/$f" "$DEST/lib/gpsimd-open/xtensa-q7-none-elf/$f" 644
done
for tool in nrt-pool nrtucode-tool nrtucode-conformance customop-conformance; do
    put "$REL/$tool" "$DEST/bin/$tool" 755
    mkdir -p "$DEST/share/doc/gpsimd-open"
    "$REL/$tool" --help > "$DEST/share/doc/gpsimd-open/$tool.txt.partial" 2>&1 || true
    mv -f "$DEST/share/doc/gpsimd-open/$tool.txt.partial" "$DEST/share/doc/gpsimd-open/$tool.txt"
    echo "$DEST/share/doc/gpsimd-open/$tool.txt" >> "$MANIFEST.partial"
done
# nrt-pool's shell completions, where bash-completion, zsh and fish look under a prefix.
gen() { # gen DST COMMAND...: the command's output installed as DST
    dst=$1; shift
    mkdir -p "$(dirname "$dst")"
    "$@" > "$dst.partial"
    chmod 644 "$dst.partial"
    mv -f "$dst.partial" "$dst"
    echo "$dst" >> "$MANIFEST.partial"
}
gen "$DEST/share/bash-completion/completions/nrt-pool" "$REL/nrt-pool" completions bash
gen "$DEST/share/zsh/site-functions/_nrt-pool" "$REL/nrt-pool" completions zsh
gen "$DEST/share/fish/vendor_completions.d/nrt-pool.fish" "$REL/nrt-pool" completions fish
for pc in nrtucode_extisa nrt_pool neuroncustomop; do
    subst "$ROOT/packaging/$pc.pc.in" "$DEST/lib/pkgconfig/$pc.pc"
done
put "$ROOT/packaging/GpsimdOpenConfig.cmake" "$DEST/lib/cmake/GpsimdOpen/GpsimdOpenConfig.cmake" 644
subst "$ROOT/packaging/GpsimdOpenConfigVersion.cmake.in" "$DEST/lib/cmake/GpsimdOpen/GpsimdOpenConfigVersion.cmake"
echo "$MANIFEST" >> "$MANIFEST.partial"
mv -f "$MANIFEST.partial" "$MANIFEST"
echo "installed $(wc -l < "$MANIFEST") files under $DEST"
