#!/bin/sh
# Builds the device runtime's self-test for the windowed ABI (the archive's target,
# xtensa-q7-none-elf) through GNU as (../xtensa/windowed-as.sh), links it with the open
# start code and window vectors (../xtensa/sim-start.S, sim.ld) and runs it under
# qemu-system-xtensa -M sim -cpu de212; prints the exit status (42 = every check passed).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
x="$here/../xtensa"
out=$(mkdir -p "${1:?usage: run-windowed.sh OUTDIR}" && cd "$1" && pwd)
cd "$here"
RUSTC_BOOTSTRAP=1 RUSTFLAGS="--emit=asm -Cembed-bitcode=no" CARGO_TARGET_DIR="$out/cargo" \
    cargo build --quiet --release -Zbuild-std=core,compiler_builtins \
    -Zbuild-std-features=compiler-builtins-mem -Zjson-target-spec \
    --target ../targets/xtensa-q7-none-elf.json
objs=""
for s in "$out"/cargo/xtensa-q7-none-elf/release/deps/*.s; do
    o="$out/$(basename "$s" .s).o"
    "$x/windowed-as.sh" "$s" "$o"
    objs="$objs $o"
done
xtensa-lx106-elf-gcc -O2 -S -mabi=windowed -mlongcalls -ffreestanding -fno-builtin \
    "$here/windowed-helpers.c" -o "$out/windowed-helpers.s"
"$x/windowed-as.sh" "$out/windowed-helpers.s" "$out/windowed-helpers.o"
xtensa-lx106-elf-as --text-section-literals -I "$x" "$x/sim-start.S" -o "$out/sim-start.o"
xtensa-lx106-elf-ld -T "$x/sim.ld" --gc-sections -z noexecstack --no-warn-rwx-segments \
    -u selftest_main "$out/sim-start.o" "$out/windowed-helpers.o" $objs -o "$out/selftest-windowed.elf"
set +e
# The QEMU built with the nrt-pool machine (make customop-archives; D73), or $NRT_POOL_QEMU.
qemu="${NRT_POOL_QEMU:-$here/../../target/customop/xtensa-q7-none-elf/qemu-system-xtensa}"
timeout 60 "$qemu" -M sim -cpu de212 -semihosting -display none -monitor none \
    -serial none -kernel "$out/selftest-windowed.elf"
echo "exit status $?"
