//! The device the microcode provider is tested against: a simulated Neuron device with a C
//! API, and libnrt's side of the provider (its bind and bring-up sequence).
//!
//! - [`SimDevice`]: a sparse SoC address space (control blocks, HBM allocations), an access
//!   trace, scheduled callback failures, and the firmware's side of the claim word and the
//!   log ring.
//! - [`tables`]: the rw and memhandle callback tables, declared here independently of any
//!   provider header; callbacks find their device through the provider's
//!   `context_get_userdata`, as libnrt's do.
//! - [`capi`]: the same for C programs (`include/nrt_sim_device.h`, `libnrt_sim_device.so`).
//! - [`facade`]: libnrt's side of the microcode provider: the dlopen, the 30-symbol bind in
//!   libnrt's order and the API-level check, for ours or the vendor's library.
//! - [`bringup`]: libnrt's init -> bring-up -> load -> query -> teardown sequence on the
//!   simulated device (`nrt-pool bringup`, run by `make demo`).

pub mod bringup;
pub mod capi;
mod device;
pub mod facade;
pub mod tables;

pub use device::{Access, FaultOp, HostLogLine, Op, SimDevice, SimError};

/// The firmware's unclaimed claim word (what a freshly booted image leaves at +0).
pub const CLAIM_UNCLAIMED: u32 = 0x6099_CB34;
/// The claim word after a host claimed the engine.
pub const CLAIM_CLAIMED: u32 = 0x502B_2DA1;

/// Control-block offsets, from the documented map. Written out here rather than imported
/// from the provider on purpose: the simulated device is the independent side the provider
/// is tested against.
pub mod control_block {
    pub const CLAIM_WORD: u64 = 0x00;
    pub const LOG_RING_SIZE: u64 = 0x04;
    pub const LOG_RING_ADDR: u64 = 0x08;
    pub const LOG_HEAD: u64 = 0x10;
    pub const MAX_LOG_LEVEL: u64 = 0x14;
    pub const DGE_PRIORITY_MAP: u64 = 0x18;
    pub const DGE_MAILBOXES: u64 = 0x28;
    pub const PC_BOUNDS_LO: u64 = 0x38;
    pub const PC_BOUNDS_HI: u64 = 0x40;
    /// Bytes mapped for a control block (the documented fields end at 0x48).
    pub const MAPPED: u64 = 0x100;
}

/// Error codes the simulated platform returns, as libnrt's callbacks do.
pub const RC_ALLOCATION: i32 = 5;
pub const RC_IO: i32 = 6;
