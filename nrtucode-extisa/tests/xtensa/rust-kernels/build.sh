#!/bin/sh
# Builds the Rust test library for Xtensa (call0 ABI, so the Debian lx106 binutils can
# assemble and link it) and links it -shared with ../split.ld:
#   OUT/rust-kernels.o   the object (GNU as)
#   OUT/rust-split.so    the split-load library
# rustc for Xtensa needs -Zbuild-std and a JSON target: RUSTC_BOOTSTRAP=1 on stable, and
# the rust-src component. LLVM's Xtensa backend has no PIC, and it puts pointer-holding
# statics in read-only sections; GNU ld refuses dynamic relocations there, so those sections
# are renamed into .data.rel.ro (writable) in the emitted assembly before assembling.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:?usage: build.sh OUTDIR}" && cd "$1" && pwd)
cd "$here"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="--emit=asm -Cembed-bitcode=no" CARGO_TARGET_DIR="$out/cargo" \
    cargo build --quiet --release -Zbuild-std=core,compiler_builtins \
    -Zbuild-std-features=compiler-builtins-mem -Zjson-target-spec \
    --target ./xtensa-call0-none-elf.json
asm=$(ls "$out"/cargo/xtensa-call0-none-elf/release/deps/rust_kernels-*.s | head -n 1)
sed -E \
    -e 's/^([[:space:]]*\.section[[:space:]]+)\.rodata([^,]*),"a[a-zA-Z]*",@progbits(,[0-9]+)?/\1.data.rel.ro\2,"aw",@progbits/' \
    -e 's/^([[:space:]]*\.section[[:space:]]+\.kernel_info_table),"a[a-zA-Z]*",@progbits(,unique,[0-9]+)?/\1,"aw",@progbits/' \
    "$asm" > "$out/rust-kernels.s"
xtensa-lx106-elf-as "$out/rust-kernels.s" -o "$out/rust-kernels.o"
xtensa-lx106-elf-ld --no-warn-rwx-segments -shared -Bsymbolic -T "$here/../split.ld" \
    "$out/rust-kernels.o" -o "$out/rust-split.so"
