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
