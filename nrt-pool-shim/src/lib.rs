//! The host half no vendor file gives you.
//!
//! Today this crate holds the simulated Neuron device ([`sim`]): memory-backed control
//! blocks and memhandles behind the two callback tables a microcode provider calls, so the
//! provider (ours or the vendor's) can be driven exactly as libnrt drives it, without
//! hardware. `libnrt_pool_shim.so` exports its C API (`include/nrt_sim_device.h`).

pub mod sim;
