//! A Pool core's stack as the runtime's stack switch gives it to a kernel (D79), and how
//! host cores judge a kernel against it by the device build's frames (D118).

/// The largest STACK_SIZE a kernel runs with on the core's 8 KiB local stack: the room
/// from the runtime's stack switch down to the stack's limit. Measured on Xtensa cores:
/// STACK_SIZE=7800 runs on the local stack, 8000 on an HBM stack.
pub const LOCAL_ROOM: u32 = 7936;

/// How deep the kernel's wrapper and everything below it may touch the local stack, in
/// bytes of device frames below the runtime's stack switch (D118, D126). Measured on Xtensa
/// cores by bisection, with every launcher calling the switch directly (`customop_launch`
/// always inlined): the longest variable-length array a kernel takes before a helper, and a
/// recursion of 48-byte frames, end at the same size on both backends with this limit.
pub const LOCAL_DEPTH: u32 = 7904;

/// Set in the STACK_SIZE a host core's runtime asks its kernel stack for when the op
/// library's code judges the stack by the device build's frames: the host core then gives
/// x86 frames room to spare, since the device's edge is kept by the code itself.
pub const JUDGED_BY_DEVICE_FRAMES: u32 = 1 << 31;
const _: () = assert!(crate::MAX_STACK_SIZE < JUDGED_BY_DEVICE_FRAMES);

/// The device-frame depth a kernel of `stack_size` may reach: [`LOCAL_DEPTH`] when
/// STACK_SIZE fits the local stack, else its HBM block (STACK_SIZE rounded up to 16).
pub const fn depth_limit(stack_size: u32) -> u32 {
    if stack_size <= LOCAL_ROOM {
        LOCAL_DEPTH
    } else {
        hbm_bytes(stack_size)
    }
}

/// The bytes of a kernel's HBM stack of `stack_size`: STACK_SIZE rounded up to 16.
pub const fn hbm_bytes(stack_size: u32) -> u32 {
    stack_size.saturating_add(15) & !15
}

/// How a host build's report of a stack the device build's frames outgrow begins (the
/// runtime's `__customop_device_stack_overflow`): the host core records a stack overflow.
pub const OVERFLOW_REPORT: &str = "stack overflow (device frames)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_the_local_depth_or_the_hbm_block() {
        assert_eq!(depth_limit(4196), LOCAL_DEPTH);
        assert_eq!(depth_limit(LOCAL_ROOM), LOCAL_DEPTH);
        assert_eq!(depth_limit(LOCAL_ROOM + 1), LOCAL_ROOM + 16);
        assert_eq!(depth_limit(32768), 32768);
        assert_eq!(depth_limit(20001), 20016);
    }
}

/// A path through the device runtime that a host build charges against the stack only
/// when a call takes it (D122): each has a slot of the runtime's
/// `__customop_stack_charged`, where instrumented op code puts, before a call into the
/// runtime, how deep the call reaches if it takes the path (the runtime's frames table
/// gives each runtime function an `R NAME SLOT BYTES` line per path it can take), and the
/// runtime checks that slot on entry to the path.
#[derive(Clone, Copy, Debug)]
pub struct ChargedPath {
    /// The slot of `__customop_stack_charged`.
    pub slot: usize,
    /// The runtime functions that begin the path, by a part of their Rust symbol names.
    pub symbols: &'static [&'static str],
}

/// printf's float conversion (about 2 KiB of a Pool core's stack below printf's 700 bytes).
pub const PRINTF_FLOAT: ChargedPath = ChargedPath {
    slot: 0,
    symbols: &["14neuroncustomop4libc6printf5float"],
};
/// Checking mode's note writer: every copy's use-after-free check can reach it, only a
/// checked launch does (D128).
pub const CHECK_NOTE: ChargedPath = ChargedPath {
    slot: 1,
    symbols: &["14neuroncustomop7runtime5state10check_note"],
};
/// libm's large reduction by pi/2, about 860 bytes: |x| >= 2^28 * pi/2 for float, 2^20 *
/// pi/2 for double (D129). It lies below the medium reduction, whose slot a call taking it
/// has set as well.
pub const LARGE_REDUCTION: ChargedPath = ChargedPath {
    slot: 2,
    symbols: &["4libm4math14rem_pio2_large"],
};
/// libm's reduction by pi/2 itself (`rem_pio2f`, `rem_pio2`): float arguments past 9*pi/4,
/// double ones past pi/4 take it; smaller ones are reduced inline (D132).
pub const MEDIUM_REDUCTION: ChargedPath = ChargedPath {
    slot: 3,
    symbols: &["4libm4math9rem_pio2f", "4libm4math8rem_pio2"],
};

/// The slow path of Rust's decimal float parser (a 768-digit decimal), which strtod,
/// strtof and atof take only for text its fast and Eisel-Lemire paths cannot round (D134).
pub const PARSE_SLOW: ChargedPath = ChargedPath {
    slot: 4,
    symbols: &["7dec2flt4slow19parse_long_mantissa"],
};

/// Every charged path; their slots are 0..CHARGED_SLOTS.
pub const CHARGED_PATHS: [ChargedPath; CHARGED_SLOTS] = [
    PRINTF_FLOAT,
    CHECK_NOTE,
    LARGE_REDUCTION,
    MEDIUM_REDUCTION,
    PARSE_SLOW,
];
/// The number of slots of `__customop_stack_charged` (an `int[5]` in C).
pub const CHARGED_SLOTS: usize = 5;

const _: () = {
    let mut i = 0;
    while i < CHARGED_SLOTS {
        assert!(CHARGED_PATHS[i].slot == i);
        i += 1;
    }
};

/// The charged path a runtime function (its symbol name) begins, if any.
pub fn charged_path_of(symbol: &str) -> Option<ChargedPath> {
    CHARGED_PATHS
        .into_iter()
        .find(|p| p.symbols.iter().any(|s| symbol.contains(s)))
}
