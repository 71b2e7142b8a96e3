//! A device function's first line rows and inline-block starts moved after the stores that
//! put its incoming arguments in their frame slots (D116), so gdb's `break FUNCTION` on
//! Xtensa cores stops where the arguments are readable, in the function itself.
//!
//! In a default (`-Os`, no variable tracking) build the debug information describes each
//! argument by one stack slot for the whole function, and GCC schedules the stores that
//! fill those slots into the body's first lines, among the first inlined call's code
//! (`get_dst_tensor()`, say). gdb stops at the function's second line row: before the
//! stores, and inside the inlined call's block, whose frame it then shows ("No symbol
//! factor"). GCC writes the line table and the block ranges from labels in its assembly
//! (`.LM`, `.LBB`, `.LBE`; `-gno-as-loc-support`, D102): moving the labels that lie between
//! `entry` and the last argument store to just after it puts the second row, and the
//! inlined block's start, after the stores. Nothing else moves: the code is the same, and
//! the instructions passed over belong to the function's opening line.
//!
//! The scan is close to the one `nrt_pool_qemu::entry` makes over the linked code: after
//! `entry`, address computations, narrow moves and the frame's loads and stores, up to the
//! first other instruction; the last store of an argument register (a2-a7) to a slot off
//! the stack pointer. It ends earlier, at a load or store through another base: such an
//! access is the body's and may fault, and a fault names its line from these rows. (Where
//! it ends before the stores, the session stops at `nrt_pool_qemu::entry`'s address.)

/// The instructions the prologue scan reads past: address computations, literal loads,
/// narrow moves, and loads and stores of the frame (below).
const PROLOGUE: &[&str] = &[
    "addi", "addmi", "movi", "l32r", "add.n", "addi.n", "movi.n", "mov.n", "nop.n",
];

/// Loads and stores: read past only when they reach the frame (their base is the stack
/// pointer). One through another base is the body's and may fault: its line row must stay
/// where GCC put it, so the scan ends there.
const MEMORY: &[&str] = &[
    "l8ui", "l16ui", "l16si", "l32i", "s8i", "s16i", "s32i", "l32i.n", "s32i.n",
];

fn frame_access(operands: &str) -> bool {
    matches!(operands.split(',').map(str::trim).nth(1), Some("sp" | "a1"))
}

/// Labels that place a line row or an inline block's bound.
fn movable(label: &str) -> bool {
    ["LM", "LBB", "LBE"]
        .iter()
        .any(|p| label.strip_prefix('.').is_some_and(|l| l.starts_with(p)))
}

/// Whether an instruction line stores an argument register to a frame slot.
fn stores_an_argument(mnemonic: &str, operands: &str) -> bool {
    if mnemonic != "s32i" && mnemonic != "s32i.n" {
        return false;
    }
    let mut ops = operands.split(',').map(str::trim);
    let (Some(value), Some(base)) = (ops.next(), ops.next()) else {
        return false;
    };
    matches!(value, "a2" | "a3" | "a4" | "a5" | "a6" | "a7") && matches!(base, "sp" | "a1")
}

/// `asm` (GCC's windowed-ABI assembly) with each function's early line and block labels
/// moved after its argument stores.
pub fn after_argument_stores(asm: &str) -> String {
    let mut lines: Vec<&str> = asm.lines().collect();
    let mut at = 0;
    while at < lines.len() {
        if lines[at].split_whitespace().next() != Some("entry") {
            at += 1;
            continue;
        }
        let mut labels = Vec::new();
        let mut last_store = None;
        for (k, line) in lines.iter().enumerate().skip(at + 1) {
            let t = line.trim();
            if t.is_empty() || (t.starts_with('.') && !t.ends_with(':')) {
                continue; // a directive
            }
            if let Some(label) = t.strip_suffix(':') {
                if movable(label) {
                    labels.push(k);
                    continue;
                }
                if label.starts_with(".LCFI") || label.starts_with(".LVL") {
                    continue;
                }
                break; // a branch target: control flow joins here
            }
            let mut parts = t.splitn(2, char::is_whitespace);
            let mnemonic = parts.next().unwrap_or("");
            let operands = parts.next().unwrap_or("");
            let passable = PROLOGUE.contains(&mnemonic)
                || (MEMORY.contains(&mnemonic) && frame_access(operands));
            if !passable {
                break;
            }
            if stores_an_argument(mnemonic, operands) {
                last_store = Some(k);
            }
        }
        let Some(store) = last_store else {
            at += 1;
            continue;
        };
        let moved: Vec<&str> = labels
            .iter()
            .filter(|&&k| k < store)
            .map(|&k| lines[k])
            .collect();
        if moved.is_empty() {
            at = store + 1;
            continue;
        }
        let mut rebuilt: Vec<&str> = Vec::with_capacity(lines.len());
        for (k, line) in lines.iter().enumerate() {
            if k > at && k < store && labels.contains(&k) {
                continue;
            }
            rebuilt.push(line);
            if k == store {
                rebuilt.extend(&moved);
            }
        }
        lines = rebuilt;
        at = store + 1;
    }
    let mut out = lines.join("\n");
    if asm.ends_with('\n') {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::after_argument_stores;

    /// The kernel that begins with `get_dst_tensor()` (issue #56's case) as GCC writes it:
    /// the halves of `double factor` (a4, a5) stored among the inlined call's code.
    const KERNEL: &str = "_Z5scaleRKN5torch6TensorEd:
.LFB3095:
.LM316:
\tentry\tsp, 80
.LCFI11:
.LM317:
.LBB318:
.LBE318:
.LM319:
\ts32i.n\ta4, sp, 24
.LBB322:
.LM320:
\tl32r\ta4, .LC71
.LBE322:
.LM321:
\ts32i.n\ta5, sp, 28
.LBB323:
.LM322:
\tmovi.n\ta5, 1
\ts8i\ta5, a4, 0
\tcall8\tcustomop_dst_tensor_desc
.LBE323:
";

    #[test]
    fn early_rows_and_block_bounds_move_after_the_last_argument_store() {
        let out = after_argument_stores(KERNEL);
        let at = |s: &str| {
            out.lines()
                .position(|l| l == s)
                .unwrap_or_else(|| panic!("{s}"))
        };
        let store = at("\ts32i.n\ta5, sp, 28");
        for label in [
            ".LM317:", ".LBB318:", ".LBE318:", ".LM319:", ".LBB322:", ".LM320:", ".LBE322:",
            ".LM321:",
        ] {
            assert!(at(label) > store, "{label} stays before the store:\n{out}");
        }
        // The entry's own row, the CFI label, the instructions and their order stay.
        assert!(at(".LM316:") < at("\tentry\tsp, 80") && at(".LCFI11:") < store);
        fn code(t: &str) -> Vec<&str> {
            t.lines().filter(|l| l.starts_with('\t')).collect()
        }
        assert_eq!(code(&out), code(KERNEL));
        assert_eq!(out.lines().count(), KERNEL.lines().count());
        // Labels after the store keep their places; the moved ones keep their order.
        assert_eq!(at(".LBB323:"), at(".LM321:") + 1);
        assert!(at(".LM317:") < at(".LM319:") && at(".LM320:") < at(".LM321:"));
    }

    #[test]
    fn a_function_whose_body_starts_with_a_call_or_branch_is_left_alone() {
        for body in [
            "\tcall8\tf\n\ts32i.n\ta2, sp, 0\n",
            "\tbeqz\ta2, .L3\n\ts32i.n\ta2, sp, 0\n",
            ".L3:\n\ts32i.n\ta2, sp, 0\n",
        ] {
            let asm = format!("f:\n\tentry\tsp, 32\n.LM1:\n{body}");
            assert_eq!(after_argument_stores(&asm), asm);
        }
    }
}
