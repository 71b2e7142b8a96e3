//! `SUNDA_UCODE_LIB_STATUS` (a 4-byte enum) and the allocator results.

/// `SUNDA_UCODE_LIB_STATUS`.
pub type Status = u32;
pub const SUNDA_UCODE_LIB_SUCCESS: Status = 0;
pub const SUNDA_UCODE_LIB_FAILURE: Status = 1;
pub const SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH: Status = 2;
pub const SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP: Status = 3;
pub const SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS: Status = 4;

/// What the `neuron_*_allocate` family returns on failure.
pub const ALLOC_FAILED: i32 = -1;

/// A status's name, as the vendor's header spells it.
pub fn name(s: Status) -> &'static str {
    match s {
        SUNDA_UCODE_LIB_SUCCESS => "SUNDA_UCODE_LIB_SUCCESS",
        SUNDA_UCODE_LIB_FAILURE => "SUNDA_UCODE_LIB_FAILURE",
        SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH => "SUNDA_UCODE_LIB_FAILURE_ABI_MISMATCH",
        SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP => {
            "SUNDA_UCODE_LIB_FAILURE_OPCODE_TO_KERNEL_MAP"
        }
        SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS => "SUNDA_UCODE_LIB_FAILURE_NUM_KERNELS",
        _ => "unknown SUNDA_UCODE_LIB_STATUS",
    }
}
