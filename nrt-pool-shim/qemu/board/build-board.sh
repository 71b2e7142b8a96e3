#!/bin/sh
# Builds the Pool core board for QEMU (pool-board.S, pool-board.c; docs/decisions.md D56):
# windowed-ABI objects through the device runtime's windowed-as.sh (the board's vectors share
# its window-vectors.inc), linked by pool-board.ld into OUT. It lives beside the QEMU machine
# and protocol it speaks (../machine, ../src/protocol.rs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
xtensa="$here/../../../customop-device/xtensa"
out="${1:?usage: build-board.sh OUT.elf}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
xtensa-lx106-elf-as --text-section-literals -I "$xtensa" "$here/pool-board.S" -o "$work/start.o"
xtensa-lx106-elf-gcc -O2 -S -mabi=windowed -mlongcalls -ffreestanding -fno-builtin \
    -Wall -Werror "$here/pool-board.c" -o "$work/board.s"
"$xtensa/windowed-as.sh" "$work/board.s" "$work/board.o"
xtensa-lx106-elf-ld -T "$here/pool-board.ld" -z noexecstack --no-warn-rwx-segments \
    "$work/start.o" "$work/board.o" -o "$work/board.elf"
mkdir -p "$(dirname "$out")"
mv "$work/board.elf" "$out"
