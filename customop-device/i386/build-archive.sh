#!/bin/sh
# build-archive.sh OUT.a: libneuroncustomop.a (and libgcc.a beside it) for host cores in the
# device's data model
# (i386 with the device's type sizes and alignment, D97): the runtime and the device's C
# library built by rustc for i686 (core rebuilt for panic=abort), plus the C and C++ units
# the Xtensa archive carries that a core needs here too: the printf family's variadic
# entry points (cstdio.c, read with GCC's own va_arg), the allocation entry points that name
# their callers (alloc.c, D104) and libc++'s functions that are not
# templates (libcxx.cpp), compiled with the flags op code gets (DEVICE_MODEL_FLAGS in
# nrt-pool-shim/op-build/src/device_model.rs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: build-archive.sh OUT.a}
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
work="$root/target/customop"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-C panic=abort" CARGO_TARGET_DIR="$work" \
    cargo rustc -q -p customop-device --release --features archive --crate-type staticlib \
    --target i686-unknown-linux-gnu -Zbuild-std=core
rust="$work/i686-unknown-linux-gnu/release/libneuroncustomop.a"
libcxx=${NRT_POOL_LIBCXX:-/usr/lib/llvm-14/include/c++/v1}
if [ ! -f "$libcxx/vector" ]; then
    echo "build-archive.sh: libc++ headers not found at $libcxx (make tools installs libc++-14-dev)" >&2
    exit 1
fi
objs="$out.objs"
rm -rf "$objs"
mkdir -p "$objs"
# The data model's flags: the same words as DEVICE_MODEL_FLAGS (a build test compares them).
model="-m32 -msse2 -mfpmath=sse -malign-double -mlong-double-64 -fshort-wchar -funsigned-char -ffreestanding -nostdinc -U__linux__ -U__linux -Ulinux -U__gnu_linux__ -U__unix__ -U__unix -Uunix -faligned-new=8 -U__INT_FAST8_TYPE__ -D__INT_FAST8_TYPE__=__INT32_TYPE__ -U__INT_FAST8_MAX__ -D__INT_FAST8_MAX__=__INT32_MAX__ -U__INT_FAST8_WIDTH__ -D__INT_FAST8_WIDTH__=32 -U__UINT_FAST8_TYPE__ -D__UINT_FAST8_TYPE__=__UINT32_TYPE__ -U__UINT_FAST8_MAX__ -D__UINT_FAST8_MAX__=__UINT32_MAX__ -U__SIZEOF_FLOAT128__ -U__SIZEOF_FLOAT80__"
gcc_include=$(gcc -m32 -print-file-name=include)
common="$model -O2 -g -fPIC -ffunction-sections -fdata-sections -fasynchronous-unwind-tables"
# (C compiles take the same words but the C++-only one.)
c_common=$(printf "%s" "$common" | sed "s/-faligned-new=8 //")
gcc $c_common -std=c11 -isystem "$root/include/device" -isystem "$gcc_include" \
    -idirafter "$root/include/device/i386" \
    -c "$root/customop-device/xtensa/cstdio.c" -o "$objs/customop_cstdio.o"
gcc $c_common -std=c11 -isystem "$gcc_include" \
    -c "$root/customop-device/xtensa/alloc.c" -o "$objs/customop_alloc.o"
g++ $common -std=c++17 -fno-exceptions -fno-rtti -nostdinc++ \
    -isystem "$root/include/device/libcxx" -isystem "$libcxx" -isystem "$root/include/device" \
    -isystem "$gcc_include" -idirafter "$root/include/device/i386" \
    -c "$root/customop-device/xtensa/libcxx.cpp" -o "$objs/customop_libcxx.o"
rm -f "$out.partial"
cp "$rust" "$out.partial"
ar rs "$out.partial" "$objs/customop_cstdio.o" "$objs/customop_alloc.o" "$objs/customop_libcxx.o" 2>/dev/null
mv -f "$out.partial" "$out"
rm -rf "$objs"
# GCC's helper library for i386 beside the archive (D114): op libraries link it from here,
# so host builds in the device's data model need no 32-bit libgcc of their machine's (the
# GCC Runtime Library Exception lets it travel with the runtime).
cp "$(gcc -m32 -print-libgcc-file-name)" "$(dirname "$out")/libgcc.a.partial"
mv -f "$(dirname "$out")/libgcc.a.partial" "$(dirname "$out")/libgcc.a"
