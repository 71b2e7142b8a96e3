#!/bin/sh
# windowed-as.sh IN.s OUT.o: assembles rustc's or GCC's windowed-ABI Xtensa assembly with
# the GNU assembler of Debian's lx106 toolchain, which lacks the windowed-register option.
# The rules (windowed instructions written as their encodings, literals in the text
# section) live in one place, nrt_pool_build::xtensa_asm (docs/decisions.md D53); this
# runs its command-line tool, brought up to date first.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build -q --release --manifest-path "$root/Cargo.toml" --target-dir "$root/target" \
    -p nrt-pool-build --bin xtensa-windowed-as
exec "$root/target/release/xtensa-windowed-as" "$@"
