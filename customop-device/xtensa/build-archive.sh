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
RUSTC_BOOTSTRAP=1 RUSTFLAGS="--emit=asm -Cembed-bitcode=no" CARGO_TARGET_DIR="$work" \
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
# The printf family's variadic entry points, in C (GCC's va_list; D54).
xtensa-lx106-elf-gcc -std=c11 -O2 -S -mabi=windowed -mlongcalls -ffreestanding \
    "$here/cstdio.c" -o "$objs/cstdio.s"
"$here/windowed-as.sh" "$objs/cstdio.s" "$objs/customop_cstdio.o"
# The image's global constructors, run by entry_func (crt.c).
xtensa-lx106-elf-gcc -std=c11 -O2 -S -mabi=windowed -mlongcalls -ffreestanding \
    "$here/crt.c" -o "$objs/crt.s"
"$here/windowed-as.sh" "$objs/crt.s" "$objs/customop_crt.o"
# libgcc helpers compiler-builtins lacks on this target (libgcc.c).
xtensa-lx106-elf-gcc -std=c11 -O2 -S -mabi=windowed -mlongcalls -ffreestanding \
    "$here/libgcc.c" -o "$objs/libgcc.s"
"$here/windowed-as.sh" "$objs/libgcc.s" "$objs/customop_libgcc.o"
# The __atomic library calls (one thread per core: plain memory operations; D72).
xtensa-lx106-elf-gcc -std=c11 -O2 -S -mabi=windowed -mlongcalls -ffreestanding \
    "$here/atomic.c" -o "$objs/atomic.s"
"$here/windowed-as.sh" "$objs/atomic.s" "$objs/customop_atomic.o"
# libc++'s functions that are not templates (D72), against the headers device builds use
# (include/device/libcxx's configuration first, as nrt-pool build orders them).
libcxx=${NRT_POOL_LIBCXX:-/usr/lib/llvm-14/include/c++/v1}
if [ ! -f "$libcxx/vector" ]; then
    echo "build-archive.sh: libc++ headers not found at $libcxx (make tools installs libc++-14-dev)" >&2
    exit 1
fi
xtensa-lx106-elf-g++ -std=c++17 -O2 -S -mabi=windowed -mlongcalls -ffreestanding \
    -fno-exceptions -fno-rtti -nostdinc++ -isystem "$root/include/device/libcxx" \
    -isystem "$libcxx" -isystem "$root/include/device" "$here/libcxx.cpp" -o "$objs/libcxx.s"
"$here/windowed-as.sh" "$objs/libcxx.s" "$objs/customop_libcxx.o"
rm -f "$out.partial"
(cd "$objs" && xtensa-lx106-elf-ar rcs "$out.partial" $members customop_cstdio.o customop_crt.o \
    customop_libgcc.o customop_atomic.o customop_libcxx.o)
mv -f "$out.partial" "$out"
rm -rf "$objs"
