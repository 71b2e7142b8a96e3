//! The wire layouts the GPSIMD device runtime and the emulated Pool engine share, in one
//! `no_std` leaf crate: what crosses between the host and a core, byte for
//! byte. Each layout is pinned by `const` asserts (size and offsets) on every target it is
//! built for: the device's 32-bit ones and the host's 64-bit one.
//!
//! - [`access`]: a core's tensor accesses in a launch (the device-time estimate's counts).
//! - [`descriptor`]: the 48-byte tensor descriptor and its enums (vendor layout).
//! - [`blob`]: the argument blob the host writes for a launch and the data scratch map.
//! - [`stack`]: the kernel stack a Pool core gives, and how host cores judge it.
//! - [`handoff`]: `SUNDA_UCODE_LIB`, the block `entry_func` receives, and the host services
//!   its `get_libc_fn` resolves by name.
//! - [`status`]: `SUNDA_UCODE_LIB_STATUS` codes.
//! - [`control`]: the Pool control block cores report into (states, fault kinds, records).
//! - [`stdio`]: early-output records and the descriptor they travel on.
//! - [`rule`]: the vendor rules the checks cite.
//! - [`checklog`]: checking mode's notes from a core's runtime.
//!
//! The C side: `include/neuron_customop.hpp` declares the same handoff and blob offsets,
//! and the Xtensa board (`nrt-pool-shim/qemu/board/pool-board.c`) lays out the handoff for
//! a 32-bit core; `tests/c_layouts.rs` compiles both against these values.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod access;
pub mod blob;
pub mod checklog;
pub mod control;
pub mod descriptor;
pub mod element;
pub mod handoff;
pub mod rule;
pub mod runner;
pub mod stack;
pub mod status;
pub mod stdio;

/// Cores of the Pool engine (NeuronCore-v2: 8 Vision-Q7 cores).
pub const CORES: usize = 8;

/// How a host build's report of an access a Pool core faults on begins (the runtime's
/// alignment check, D92): the host core records it as a memory fault, as Xtensa cores do.
pub const UNALIGNED_REPORT: &str = "unaligned load/store";

/// The largest STACK_SIZE the guide supports (400 KB); builds refuse more (D79).
pub const MAX_STACK_SIZE: u32 = 400 * 1024;
