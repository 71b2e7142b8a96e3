#!/bin/sh
# windowed-as.sh IN.s OUT.o: assembles rustc's windowed-ABI Xtensa assembly with the GNU
# assembler of the lx106 toolchain (Debian's binutils-xtensa-lx106), which lacks the
# windowed-register option: the three windowed instructions LLVM emits are written as
# their encodings (Xtensa ISA, RRI12 / CALLX / RRRN formats), everything else is assembled
# as is, with literals placed in the text section ahead of their l32r uses. Why this route:
# rustc's integrated assembler places literals GNU ld rejects (docs/decisions.md D53).
#   entry aS, imm  ->  0x36, S | (imm/8 & 15) << 4, (imm/8) >> 4   (imm: 0..32760, /8)
#   callx8 aS      ->  0xe0, S, 0x00
#   retw.n         ->  0x1d, 0xf0            retw -> 0x90, 0x00, 0x00
#   call8 sym      ->  a literal of sym, l32r a8 from it, callx8 a8 (as gas -mlongcalls
#                      would relax it; a8 receives the return address anyway)
# Any other windowed mnemonic (call4/12, callx4/12, movsp, rotw, s32e, l32e, rfwo, rfwu)
# is refused by name rather than mis-assembled.
set -eu
in=${1:?usage: windowed-as.sh IN.s OUT.o}
out=${2:?usage: windowed-as.sh IN.s OUT.o}
AS=${XTENSA_AS:-xtensa-lx106-elf-as}
tmp="$out.windowed.s"
awk '
function reg(r) {
    if (r == "sp") r = "a1"
    sub(/^a/, "", r)
    if (r !~ /^[0-9]+$/ || r + 0 > 15) { bad = "register " r; return -1 }
    return r + 0
}
{
    line = $0
    # Strip a trailing comment for matching; keep the original text otherwise.
    code = line; sub(/#.*/, "", code)
    n = split(code, f, /[ \t,]+/)
    op = (f[1] == "") ? f[2] : f[1]
    a1 = (f[1] == "") ? f[3] : f[2]
    a2 = (f[1] == "") ? f[4] : f[3]
    if (op == "entry") {
        s = reg(a1); imm = a2 + 0
        if (s < 0 || imm < 0 || imm > 32760 || imm % 8 != 0) {
            printf "%s:%d: cannot encode %s\n", FILENAME, NR, line > "/dev/stderr"; exit 2
        }
        imm /= 8
        printf "\t.byte 0x36, 0x%02x, 0x%02x\t# entry %s, %d\n", s + (imm % 16) * 16, int(imm / 16), a1, a2 * 1
    } else if (op == "callx8") {
        s = reg(a1)
        if (s < 0) { printf "%s:%d: cannot encode %s\n", FILENAME, NR, line > "/dev/stderr"; exit 2 }
        printf "\t.byte 0xe0, 0x%02x, 0x00\t# callx8 %s\n", s, a1
    } else if (op == "call8") {
        calls++
        printf "\t.literal .Lwindowed_call%d, %s\n", calls, a1
        printf "\tl32r\ta8, .Lwindowed_call%d\n", calls
        printf "\t.byte 0xe0, 0x08, 0x00\t# call8 %s\n", a1
    } else if (op == "retw.n") {
        print "\t.byte 0x1d, 0xf0\t# retw.n"
    } else if (op == "retw") {
        print "\t.byte 0x90, 0x00, 0x00\t# retw"
    } else if (op ~ /^(call4|call12|callx4|callx12|movsp|rotw|s32e|l32e|rfwo|rfwu)$/) {
        printf "%s:%d: windowed instruction %s has no encoding here yet\n", FILENAME, NR, op > "/dev/stderr"; exit 2
    } else {
        print line
    }
}' "$in" > "$tmp"
"$AS" --text-section-literals "$tmp" -o "$out.partial"
mv -f "$out.partial" "$out"
rm -f "$tmp"
