//! A launch's tensor accesses, as the device runtime counts them on each core:
//! what the device-time estimate prices beyond instructions. The runtime keeps one
//! [`AccessCounts`] under the symbol [`ACCESS_COUNTS_SYMBOL`], zeroed when a launch starts;
//! the engine reads it from a core's image after a profiled launch on Xtensa cores (the
//! image lies in device memory at its SoC address).

/// The runtime's functions that serve an access (demangled names, or their prefixes): the
/// device-time estimate leaves their instructions out and prices the access by the counts
/// instead. The runtime's own tests check that each names a function of its Xtensa
/// archive (`customop-device/tests/access_path.rs`): a rename fails there.
pub const ACCESS_PATH: &[&str] = &[
    "<neuroncustomop::runtime::translate::",
    "neuron_translate(",
    "neuron_translate_ctx(",
    "neuron_memcpy(",
    "neuroncustomop::runtime::mem::aligned::copy",
    "neuroncustomop::runtime::state::transfer",
    "neuroncustomop::runtime::state::check_tcm_copy",
    "<neuroncustomop::runtime::global::Global<neuroncustomop::runtime::state::State>>::with::<bool, neuroncustomop::runtime::state::check_tcm_copy",
];

/// The runtime's exported symbol holding a core's counts.
pub const ACCESS_COUNTS_SYMBOL: &str = "customop_access_counts";

/// One core's accesses in a launch (32 bytes, little-endian on every target).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessCounts {
    /// Element-wise accessor accesses (`neuron_translate` calls: one per element read or
    /// written through `accessor<T, N>()`).
    pub element: u32,
    /// Copies from a tensor into core memory (`neuron_memcpy` in: `tensor_to_tcm`, stream
    /// reads' refills).
    pub copies_in: u32,
    /// Copies from core memory into a tensor (`tcm_to_tensor`, stream writes' flushes).
    pub copies_out: u32,
    /// The kernel's STACK_SIZE when its stack was an HBM block (it did not fit the core's
    /// local stack: every local variable then lives in HBM); 0 on the local stack.
    pub hbm_stack: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

pub const ACCESS_COUNTS_BYTES: usize = 32;

const _: () = {
    assert!(core::mem::size_of::<AccessCounts>() == ACCESS_COUNTS_BYTES);
    assert!(core::mem::offset_of!(AccessCounts, hbm_stack) == 12);
    assert!(core::mem::offset_of!(AccessCounts, bytes_in) == 16);
    assert!(core::mem::offset_of!(AccessCounts, bytes_out) == 24);
};

impl AccessCounts {
    /// The counts from their 32 bytes as a core holds them.
    pub fn from_le_bytes(b: &[u8; ACCESS_COUNTS_BYTES]) -> AccessCounts {
        let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        AccessCounts {
            element: u32_at(0),
            copies_in: u32_at(4),
            copies_out: u32_at(8),
            hbm_stack: u32_at(12),
            bytes_in: u64_at(16),
            bytes_out: u64_at(24),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_back_from_their_bytes() {
        let mut b = [0u8; ACCESS_COUNTS_BYTES];
        b[0] = 7;
        b[4] = 2;
        b[8] = 3;
        b[12..16].copy_from_slice(&32768u32.to_le_bytes());
        b[16..24].copy_from_slice(&(5u64 << 33).to_le_bytes());
        b[24..32].copy_from_slice(&9u64.to_le_bytes());
        let c = AccessCounts::from_le_bytes(&b);
        assert_eq!((c.element, c.copies_in, c.copies_out), (7, 2, 3));
        assert_eq!(c.hbm_stack, 32768);
        assert_eq!((c.bytes_in, c.bytes_out), (5 << 33, 9));
    }
}
