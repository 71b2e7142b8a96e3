//! The host half no vendor file gives you.
//!
//! - [`sim`]: a simulated Neuron device (memory-backed control blocks and memhandles behind
//!   the rw and memhandle callback tables), with a C API (`include/nrt_sim_device.h`).
//! - [`facade`]: libnrt's side of the microcode provider: the dlopen, the 30-symbol bind in
//!   libnrt's order and the API-level check, for ours or the vendor's library.
//! - [`bringup`]: libnrt's init -> bring-up -> load -> query -> teardown sequence on the
//!   simulated device (`nrt-pool bringup`, run by `make demo`).
//!
//! - [`emu`]: the emulated Pool engine: device memory by SoC address, op libraries built for
//!   the host, descriptor marshalling, 1-8 isolated cores, the stdio ring and fault reports.
//! - [`ffi`]: `nrt_set_pool_eng_ucode` with its lifecycle, and the versioned launch FFI
//!   (`include/nrt_pool.h`).
//! - [`opbuild`]: the op build helper (`nrt-pool build`); [`demo`]: `make demo`'s chain.

pub mod bringup;
pub mod demo;
pub mod emu;
pub mod facade;
pub mod ffi;
pub mod opbuild;
pub mod sim;
