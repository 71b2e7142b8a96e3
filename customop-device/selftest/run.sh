#!/bin/sh
# Builds the device runtime's self-test image for Xtensa (call0) and runs it under
# qemu-system-xtensa; prints the exit status (42 = every check passed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:?usage: run.sh OUTDIR}" && cd "$1" && pwd)
cd "$here"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="--emit=asm -Cembed-bitcode=no" CARGO_TARGET_DIR="$out/cargo" \
    cargo build --quiet --release -Zbuild-std=core,compiler_builtins \
    -Zbuild-std-features=compiler-builtins-mem -Zjson-target-spec \
    --target ../targets/xtensa-call0-none-elf.json
objs=""
for s in "$out"/cargo/xtensa-call0-none-elf/release/deps/*.s; do
    o="$out/$(basename "$s" .s).o"
    xtensa-lx106-elf-as --text-section-literals "$s" -o "$o"
    objs="$objs $o"
done
xtensa-lx106-elf-as "$here/start.S" -o "$out/start.o"
xtensa-lx106-elf-ld --gc-sections -T "$here/selftest.ld" -u selftest_main "$out/start.o" $objs -o "$out/selftest.elf"
set +e
# The QEMU built with the nrt-pool machine (make customop-archives; D73), or $NRT_POOL_QEMU.
qemu="${NRT_POOL_QEMU:-$here/../../target/customop/xtensa-q7-none-elf/qemu-system-xtensa}"
timeout 60 "$qemu" -M sim -cpu de212 -semihosting -display none -monitor none \
    -serial none -kernel "$out/selftest.elf"
echo "exit status $?"
