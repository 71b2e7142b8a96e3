//! Where a debugger's stop at a kernel's entry goes on Xtensa cores: after the
//! stores that put the incoming arguments in the frame slots the debug information names.
//!
//! A default (`-Os`, no variable tracking) device build describes each argument by one
//! stack slot for the whole function, and GCC schedules the stores that fill those slots
//! into the body's first line: at the line gdb stops at, a `double` argument still sits in
//! its registers and its slot holds whatever was there. The scan below reads the windowed
//! prologue: after `entry`, every instruction up to the first that is not a load, store,
//! address computation or narrow move (a call, a branch, a FLIX bundle), remembering the
//! last store of an argument register (a2-a7) to a slot off the stack pointer (a1).

/// The address just after the last argument store in the code at `start` (`code`, whose
/// first instruction is the function's `entry`), or None when none is seen.
pub fn after_argument_stores(code: &[u8], start: u64) -> Option<u64> {
    // The windowed `entry` (RRI12 with op0 = 6).
    if code.first().map(|b| b & 0xF) != Some(6) {
        return None;
    }
    let mut at = 3usize;
    let mut last = None;
    for _ in 0..64 {
        let Some(&b0) = code.get(at) else { break };
        let op0 = b0 & 0xF;
        let len = match op0 {
            0x0..=0x7 => 3,
            0x8..=0xD => 2,
            _ => break,
        };
        let Some(b1) = code.get(at + 1).copied() else {
            break;
        };
        let (t, s, r) = (b0 >> 4, b1 & 0xF, b1 >> 4);
        let stored = match op0 {
            // LSAI: l8ui, l16ui, l32i, s8i, s16i, s32i, addi, addmi, movi, ...
            0x2 => r == 6 && s == 1,
            // s32i.n
            0x9 => s == 1,
            // l32r, l32i.n, add.n, addi.n, movi.n / mov.n and the like.
            0x1 | 0x8 | 0xA | 0xB | 0xC | 0xD => false,
            // Calls, branches, jumps, ALU groups that may branch: the prologue ends.
            _ => break,
        };
        at += len;
        if stored && (2..=7).contains(&t) {
            last = Some(start + at as u64);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel of tests/python/test_gdb_args.py in a default build: `entry`, the two
    /// halves of `double factor` (a4, a5) stored among address computations, then a call.
    #[test]
    fn the_stop_goes_after_the_last_argument_store_before_the_first_call() {
        let code = [
            0x36, 0xe1, 0x03, // entry a1, 0x1b8
            0x52, 0x61, 0x6d, // s32i a5, a1, 0x1b4
            0x52, 0xc1, 0x60, // addi a5, a1, 96
            0x42, 0x61, 0x6c, // s32i a4, a1, 0x1b0
            0x42, 0xd5, 0x01, // addmi a4, a5, 0x100
            0x4c, 0x8c, // movi.n a12, 72
            0xb2, 0xc3, 0x10, // addi a11, a3, 16
            0xad, 0x04, // mov.n a10, a4
            0x81, 0x72, 0xfe, // l32r a8, ...
            0xe0, 0x08, 0x00, // callx8 a8
            0x52, 0x61, 0x10, // s32i a5, a1, 0x40 (after the call: not seen)
        ];
        assert_eq!(after_argument_stores(&code, 0x8400_0838), Some(0x8400_0844));
    }

    #[test]
    fn without_entry_or_stores_there_is_no_stop_of_its_own() {
        assert_eq!(after_argument_stores(&[0x52, 0x61, 0x6d], 0), None);
        assert_eq!(
            after_argument_stores(&[0x36, 0x41, 0x00, 0xe0, 0x08, 0x00], 0),
            None
        );
        assert_eq!(after_argument_stores(&[], 0), None);
    }
}
