#!/bin/sh
# build-archive.sh OUT.a: the Xtensa (windowed ABI) libneuroncustomop.a through the GNU
# assembler: rustc emits assembly (-Zbuild-std for core and compiler_builtins), each unit is
# assembled by windowed-as.sh with its literals in the text section, and the objects are
# archived in the order of rustc's own staticlib (D53), with the printf family's C entry
# points (cstdio.c, D54).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: build-archive.sh OUT.a}
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
work="$root/target/customop-asm"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="--emit=asm -Cembed-bitcode=no -Copt-level=s" CARGO_TARGET_DIR="$work" \
    cargo rustc -q -p customop-device --release --features archive --crate-type staticlib \
    --target "$root/customop-device/targets/xtensa-q7-none-elf.json" \
    -Zbuild-std=core,compiler_builtins -Zjson-target-spec
rel="$work/xtensa-q7-none-elf/release"
objs="$out.objs"
rm -rf "$objs"
mkdir -p "$objs"
members=$(xtensa-lx106-elf-ar t "$rel/libneuroncustomop.a")
for m in $members; do
    "$here/windowed-as.sh" "$rel/deps/${m%.o}.s" "$objs/$m"
done
# The archive's C and C++ units: FILE compiled to windowed assembly by COMPILER (with the
# common flags and any given), assembled by windowed-as.sh as customop_STEM.o.
units=""
unit() { # unit FILE COMPILER [FLAGS...]
    file=$1 compiler=$2
    shift 2
    stem=${file%.*}
    "$compiler" -Os -ffunction-sections -fdata-sections -S -mabi=windowed -mlongcalls -ffreestanding "$@" "$here/$file" \
        -o "$objs/$stem.s"
    "$here/windowed-as.sh" "$objs/$stem.s" "$objs/customop_$stem.o"
    units="$units customop_$stem.o"
}
# The printf family's variadic entry points, in C (GCC's va_list; D54).
unit cstdio.c xtensa-lx106-elf-gcc -std=c11
# The allocation entry points, which name their callers (alloc.c, D104).
unit alloc.c xtensa-lx106-elf-gcc -std=c11
# The image's global constructors, run by entry_func (crt.c).
unit crt.c xtensa-lx106-elf-gcc -std=c11
# libgcc helpers compiler-builtins lacks on this target (libgcc.c).
unit libgcc.c xtensa-lx106-elf-gcc -std=c11
# Where the copy log lies, a weak reference to the link script's symbol (copy_log.c; D120).
unit copy_log.c xtensa-lx106-elf-gcc -std=c11
# The switch to an HBM stack (stack.c; D79).
unit stack.c xtensa-lx106-elf-gcc -std=c11
# The __atomic library calls (one thread per core: plain memory operations; D72).
unit atomic.c xtensa-lx106-elf-gcc -std=c11
# libc++'s functions that are not templates (D72), against the headers device builds use
# (include/device/libcxx's configuration first, as nrt-pool build orders them).
libcxx=${NRT_POOL_LIBCXX:-/usr/lib/llvm-14/include/c++/v1}
if [ ! -f "$libcxx/vector" ]; then
    echo "build-archive.sh: libc++ headers not found at $libcxx (make tools installs libc++-14-dev)" >&2
    exit 1
fi
unit libcxx.cpp xtensa-lx106-elf-g++ -std=c++17 -fno-exceptions -fno-rtti -nostdinc++ \
    -isystem "$root/include/device/libcxx" -isystem "$libcxx" -isystem "$root/include/device"
rm -f "$out.partial"
(cd "$objs" && xtensa-lx106-elf-ar rcs "$out.partial" $members $units)
# How deep a call of each of the archive's functions reaches on a core's stack, for host
# builds that judge their stack by the device build's frames (D118): beside the archive.
cargo build -q --release --manifest-path "$root/Cargo.toml" --target-dir "$root/target" \
    -p nrt-pool-build --bin xtensa-device-frames
asm=""
for m in $members; do
    asm="$asm $rel/deps/${m%.o}.s"
done
for u in $units; do
    stem=${u#customop_}
    asm="$asm $objs/${stem%.o}.s"
done
"$root/target/release/xtensa-device-frames" "${out%.a}.frames" $asm
mv -f "$out.partial" "$out"
rm -rf "$objs"
