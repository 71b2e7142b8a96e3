//! The host half no vendor file gives you.
//!
//! - [`sim`]: a simulated Neuron device (memory-backed control blocks and memhandles behind
//!   the rw and memhandle callback tables), with a C API (`include/nrt_sim_device.h`).
//! - [`facade`]: libnrt's side of the microcode provider: the dlopen, the 30-symbol bind in
//!   libnrt's order and the API-level check, for ours or the vendor's library.
//! - [`bringup`]: libnrt's init -> bring-up -> load -> query -> teardown sequence on the
//!   simulated device (`nrt-pool bringup`, run by `make demo`).
//!
//! The Pool-engine emulator, `nrt_set_pool_eng_ucode` and the launch FFI come next (see the
//! project's issues); nothing here pretends to provide them yet.

pub mod bringup;
pub mod demo;
pub mod emu;
pub mod facade;
pub mod ffi;
pub mod opbuild;
pub mod sim;
