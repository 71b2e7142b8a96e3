//! `libneuroncustomop.a`, the device runtime a GPSIMD custom op links: `entry_func`, the
//! `customop_*` descriptor marshalling, `neuron_translate`, the HBM/dataram heaps,
//! `neuron_memcpy` and the 8-core SPMD helpers.
//!
//! Not built yet: this crate only reserves its place in the workspace. It deliberately has
//! no staticlib target, so nothing can link it and mistake it for a working runtime.
#![no_std]
