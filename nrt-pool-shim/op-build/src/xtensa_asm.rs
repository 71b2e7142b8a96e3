//! Windowed-ABI Xtensa assembly for the GNU assembler of Debian's lx106 toolchain, which
//! lacks the windowed-register option: the windowed instructions GCC and LLVM emit are
//! written as their encodings, the rest is left for the assembler. The one implementation
//! of these rules: op device objects, the device archive and the self-test use it (the
//! scripts through `customop-device/xtensa/windowed-as.sh`; docs D53):
//!   entry aS, imm -> 0x36, S | (imm/8 & 15) << 4, (imm/8) >> 4   (imm: 0..=32760, /8)
//!   callx8 aS     -> 0xe0, S, 0x00
//!   retw.n        -> 0x1d, 0xf0;  retw -> 0x90, 0x00, 0x00
//!   call8 sym     -> a literal of sym, `l32r a8` from it, callx8 a8 (as -mlongcalls)
//!   movsp aT, aS  -> T << 4, 0x10 | S, 0x00   (GCC's frames beyond entry's 32760 bytes)
//! Other windowed mnemonics are refused by name.
//!
//! The cores' FPU (D86): a call of the soft-float single-precision add, subtract or
//! multiply (`call8 __addsf3`, `__subsf3`, `__mulsf3`: arguments in a10 and a11, the
//! result in a10) becomes the FPU's instruction between moves to and from f0 and f1
//! (`wfr f0, a10; wfr f1, a11; OP.s f0, f0, f1; rfr a10, f0`), the same IEEE single-
//! precision operation rounded to nearest: 4 instructions for ~60 and two windowed calls.
//! The call clobbered a8-a15 and f0/f1 hold nothing else (the code is built without
//! floating-point registers), so the code around it cannot tell. The comparisons
//! (`__eqsf2` ... `__unordsf2`) become compares into boolean b0 and conditional moves that
//! give libgcc's results exactly (-1, 0 or 1; an unordered pair 1 for eq/ne/lt/le, -1 for
//! ge/gt), with a8 as scratch.
//!
//! LLVM writes a function's literal pool (`.literal_position`, `.literal`s) before the
//! `.section .text.NAME` of the function, so with literals in the text section each pool
//! would land in the previous function's section, every function referring to the next
//! one's callees, and `--gc-sections` could drop nothing (#25: a ReLU image of 510 KB of
//! text). The pool is moved after the text sections that follow it.

/// Mnemonics of the windowed option this rewrite does not encode.
const REFUSED: [&str; 9] = [
    "call4", "call12", "callx4", "callx12", "rotw", "s32e", "l32e", "rfwo", "rfwu",
];

/// The soft-float calls the FPU replaces, with the RRR encoding of their instruction
/// (`OP.s f0, f0, f1`: op2, op1 = 0xA; r = s = 0, t = 1).
const FPU_CALLS: [(&str, &str, u32); 3] = [
    ("__addsf3", "add.s", 0x0a_0010),
    ("__subsf3", "sub.s", 0x1a_0010),
    ("__mulsf3", "mul.s", 0x2a_0010),
];

/// A value a10 takes when a compare into b0 holds (`OP.s b0, fS, fT`: op2, op1 = 0xB,
/// r = 0), and the compare's text and encoding.
type Override = (i32, &'static str, u32);
/// Equal and ordered -> 0, then a < b -> -1 (lt/le: greater or unordered keep 1).
const LESS: &[Override] = &[
    (0, "oeq.s b0, f0, f1", 0x2b_0010),
    (-1, "olt.s b0, f0, f1", 0x4b_0010),
];
/// Equal and ordered -> 0, then b < a -> 1 (gt/ge: less or unordered keep -1).
const GREATER: &[Override] = &[
    (0, "oeq.s b0, f0, f1", 0x2b_0010),
    (1, "olt.s b0, f1, f0", 0x4b_0100),
];
/// Equal and ordered -> 0 (eq/ne: anything else keeps 1).
const EQUAL: &[Override] = &[(0, "oeq.s b0, f0, f1", 0x2b_0010)];

/// The soft-float comparisons the FPU replaces: the value a10 holds first, then the
/// overrides, applied in order.
const FPU_COMPARES: [(&str, i32, &[Override]); 7] = [
    ("__ltsf2", 1, LESS),
    ("__lesf2", 1, LESS),
    ("__gtsf2", -1, GREATER),
    ("__gesf2", -1, GREATER),
    ("__eqsf2", 1, EQUAL),
    ("__nesf2", 1, EQUAL),
    // 1 when either is a NaN.
    ("__unordsf2", 0, &[(1, "un.s b0, f0, f1", 0x1b_0010)]),
];

/// What the FPU does instead of a call of soft-float routine `target`, if it can.
fn fpu_instead(target: &str) -> Option<String> {
    if let Some(&(_, name, encoding)) = FPU_CALLS.iter().find(|(f, ..)| *f == target) {
        return Some(fpu_call(name, encoding));
    }
    let &(_, first, overrides) = FPU_COMPARES.iter().find(|(f, ..)| *f == target)?;
    Some(fpu_compare(first, overrides))
}

/// An instruction word as `.byte`s (little-endian, 3 bytes).
fn encoded(w: u32, what: &str) -> String {
    let [a, b, c, _] = w.to_le_bytes();
    format!("\t.byte {a:#04x}, {b:#04x}, {c:#04x}\t# {what}\n")
}

/// The operands into f0 and f1: WFR fr, as = 0xfa0050 | r << 12 | s << 8.
fn operands() -> String {
    encoded(0xfa_0a50, "wfr f0, a10") + &encoded(0xfa_1b50, "wfr f1, a11")
}

/// `wfr f0, a10; wfr f1, a11; OP f0, f0, f1; rfr a10, f0`.
fn fpu_call(name: &str, op: u32) -> String {
    // RFR ar, fs = 0xfa0040 | r << 12 | s << 8.
    let mut out = operands() + &encoded(op, &format!("{name} f0, f0, f1"));
    out += &encoded(0xfa_a040, "rfr a10, f0");
    out.pop();
    out
}

/// A comparison: the operands into f0/f1, a10 its first value, then per override a8 the
/// value, the compare into b0, and `movt a10, a8, b0` (0xd30000 | 10 << 12 | 8 << 8).
fn fpu_compare(first: i32, overrides: &[Override]) -> String {
    let mut out = operands() + &format!("\tmovi\ta10, {first}\n");
    for &(value, what, op) in overrides {
        out += &format!("\tmovi\ta8, {value}\n");
        out += &encoded(op, what);
        out += &encoded(0xd3_a800, "movt a10, a8, b0");
    }
    out.pop();
    out
}

/// Why a line could not be rewritten (1-based line number, the line).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}: {text}")]
pub struct AsmError {
    pub line: usize,
    pub why: &'static str,
    pub text: String,
}

fn register(r: &str) -> Option<u8> {
    let n = if r == "sp" { "1" } else { r.strip_prefix('a')? };
    n.parse::<u8>().ok().filter(|&n| n <= 15)
}

/// The assembly with every windowed instruction encoded (for `as --text-section-literals`).
pub fn windowed(asm: &str) -> Result<String, AsmError> {
    let mut out = String::with_capacity(asm.len() + asm.len() / 8);
    let mut calls = 0usize;
    // A literal pool waiting for the text section it belongs to.
    let mut pool: Vec<&str> = Vec::new();
    for (i, text) in asm.lines().enumerate() {
        let directive = text.split_whitespace().next().unwrap_or("");
        if matches!(directive, ".literal_position" | ".literal") {
            pool.push(text);
            continue;
        }
        let text_section = directive == ".section"
            && text
                .split_whitespace()
                .nth(1)
                .is_some_and(|name| name.starts_with(".text"));
        if !text_section {
            for p in pool.drain(..) {
                out.push_str(p);
                out.push('\n');
            }
        }
        let bad = |why| AsmError {
            line: i + 1,
            why,
            text: text.trim().to_string(),
        };
        let code = text.split('#').next().unwrap_or("");
        let mut words = code.split([' ', '\t', ',']).filter(|w| !w.is_empty());
        let (op, a, b) = (words.next(), words.next(), words.next());
        if let Some(fpu) = a.filter(|_| op == Some("call8")).and_then(fpu_instead) {
            out.push_str(&fpu);
            out.push('\n');
            continue;
        }
        let line = match op {
            Some("entry") => {
                let s = a.and_then(register).ok_or_else(|| bad("entry register"))?;
                let imm: u32 = b
                    .and_then(|v| v.parse().ok())
                    .filter(|v| v % 8 == 0 && *v <= 32760)
                    .ok_or_else(|| bad("entry frame size"))?;
                let k = imm / 8;
                format!(
                    "\t.byte 0x36, {:#04x}, {:#04x}\t# entry a{s}, {imm}",
                    u32::from(s) | (k & 15) << 4,
                    k >> 4
                )
            }
            Some("callx8") => {
                let s = a.and_then(register).ok_or_else(|| bad("callx8 register"))?;
                format!("\t.byte 0xe0, {s:#04x}, 0x00\t# callx8 a{s}")
            }
            Some("call8") => {
                let target = a.ok_or_else(|| bad("call8 target"))?;
                calls += 1;
                format!(
                    "\t.literal .Lwindowed_call{calls}, {target}\n\tl32r\ta8, .Lwindowed_call{calls}\n\t.byte 0xe0, 0x08, 0x00\t# call8 {target}"
                )
            }
            Some("movsp") => {
                // RRR: op2 = op1 = 0, r = 1, s, t, op0 = 0.
                let t = a.and_then(register).ok_or_else(|| bad("movsp register"))?;
                let s = b.and_then(register).ok_or_else(|| bad("movsp register"))?;
                format!(
                    "\t.byte {:#04x}, {:#04x}, 0x00\t# movsp a{t}, a{s}",
                    t << 4,
                    0x10 | s
                )
            }
            Some("retw.n") => "\t.byte 0x1d, 0xf0\t# retw.n".to_string(),
            Some("retw") => "\t.byte 0x90, 0x00, 0x00\t# retw".to_string(),
            Some(op) if REFUSED.contains(&op) => {
                return Err(bad("windowed instruction without an encoding here"))
            }
            _ => text.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    for p in pool {
        out.push_str(p);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_pool_moves_into_the_text_section_after_it() {
        let asm = "\t.section\t.text.a,\"ax\",@progbits\na:\n\tretw.n\n\t.literal_position\n\
                   \t.literal .LCPI1_0, g\n\t.section\t.text.a,\"ax\",@progbits\n\
                   \t.section\t.text.b,\"ax\",@progbits\nb:\n\tl32r a8, .LCPI1_0\n\
                   \t.literal .LC2, h\n\t.section\t.rodata.x,\"a\"\n";
        let out = windowed(asm).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        let at = |s: &str| lines.iter().position(|l| l.contains(s)).unwrap();
        assert!(at(".text.b") < at(".literal_position"), "{out}");
        assert!(at(".literal .LCPI1_0") < at("b:"), "{out}");
        // Before a section that is not text, the pool stays where it was.
        assert!(at(".literal .LC2") < at(".rodata.x"), "{out}");
    }

    #[test]
    fn windowed_instructions_become_their_encodings() {
        let asm = "f:\n\tentry\tsp, 32\n\tentry a1, 1520\n\tcallx8\ta8\n\tcall8\tprintf\n\tretw.n\n\tretw\n\tmovi\ta2, 1 # keep\n";
        let out = windowed(asm).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "f:");
        // entry a1, 32: imm/8 = 4 -> 0x41, 0x00; entry a1, 1520: 190 = 0xbe -> 0xe1, 0x0b.
        assert!(
            lines[1].starts_with("\t.byte 0x36, 0x41, 0x00"),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].starts_with("\t.byte 0x36, 0xe1, 0x0b"),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].starts_with("\t.byte 0xe0, 0x08, 0x00"),
            "{}",
            lines[3]
        );
        assert_eq!(lines[4], "\t.literal .Lwindowed_call1, printf");
        assert_eq!(lines[5], "\tl32r\ta8, .Lwindowed_call1");
        assert!(lines[6].starts_with("\t.byte 0xe0, 0x08, 0x00"));
        assert!(lines[7].starts_with("\t.byte 0x1d, 0xf0"));
        assert!(lines[8].starts_with("\t.byte 0x90, 0x00, 0x00"));
        assert_eq!(lines[9], "\tmovi\ta2, 1 # keep");
        // movsp: a0, a12 -> 00 1c 00 and a3, a4 -> 30 14 00 (the ISA's RRR fields; the
        // second as Espressif's assembler encodes it); GCC writes `movsp sp, a8`.
        for (asm, bytes) in [
            ("\tmovsp\ta0, a12\n", "\t.byte 0x00, 0x1c, 0x00"),
            ("\tmovsp a3, a4\n", "\t.byte 0x30, 0x14, 0x00"),
            ("\tmovsp\tsp, a8\n", "\t.byte 0x10, 0x18, 0x00"),
        ] {
            let out = windowed(asm).unwrap();
            assert!(out.starts_with(bytes), "{asm:?}: {out}");
        }
    }

    /// The lines of `windowed(asm)`, each without its comment.
    fn code_lines(asm: &str) -> Vec<String> {
        windowed(asm)
            .unwrap()
            .lines()
            .map(|l| l.split('#').next().unwrap().trim().to_string())
            .collect()
    }

    #[test]
    fn soft_float_calls_become_fpu_instructions() {
        // The encodings of QEMU's de233_fpu instruction tables (xtensa-modules.c.inc):
        // wfr 0xfa0050, rfr 0xfa0040, add.s 0x0a0000, sub.s 0x1a0000, mul.s 0x2a0000, with
        // r (bits 12-15), s (8-11) and t (4-7) filled in.
        for (call, op) in [
            ("__addsf3", "0x10, 0x00, 0x0a"),
            ("__subsf3", "0x10, 0x00, 0x1a"),
            ("__mulsf3", "0x10, 0x00, 0x2a"),
        ] {
            assert_eq!(
                code_lines(&format!("\tcall8\t{call}\n")),
                [
                    ".byte 0x50, 0x0a, 0xfa",
                    ".byte 0x50, 0x1b, 0xfa",
                    &format!(".byte {op}"),
                    ".byte 0x40, 0xa0, 0xfa"
                ],
                "{call}"
            );
        }
        // A comparison: libgcc's -1/0/1 through b0 and conditional moves.
        assert_eq!(
            code_lines("\tcall8\t__gtsf2\n"),
            [
                ".byte 0x50, 0x0a, 0xfa",
                ".byte 0x50, 0x1b, 0xfa",
                "movi\ta10, -1",
                "movi\ta8, 0",
                ".byte 0x10, 0x00, 0x2b",
                ".byte 0x00, 0xa8, 0xd3",
                "movi\ta8, 1",
                ".byte 0x00, 0x01, 0x4b",
                ".byte 0x00, 0xa8, 0xd3",
            ]
        );
        // Other float helpers stay calls.
        assert!(windowed("\tcall8\t__divsf3\n")
            .unwrap()
            .contains(".literal .Lwindowed_call1, __divsf3"));
    }

    #[test]
    fn what_cannot_be_encoded_is_refused_by_line() {
        let e = windowed("a:\n\trotw\t1\n").unwrap_err();
        assert_eq!((e.line, e.text.as_str()), (2, "rotw\t1"));
        assert!(windowed("\tmovsp a1\n").is_err(), "one operand");
        assert!(windowed("\tentry a1, 12\n").is_err(), "not a multiple of 8");
        assert!(windowed("\tentry a1, 32768\n").is_err(), "too large");
        assert!(windowed("\tcallx8 a16\n").is_err());
        assert!(windowed("\tentry\n").is_err());
    }
}
