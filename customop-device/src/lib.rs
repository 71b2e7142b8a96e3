//! `libneuroncustomop.a`: the `no_std` device runtime a GPSIMD custom op links, built for
//! the host (the emulated engine runs ops against it) and for Xtensa (device objects).
//!
//! Facts: `device-customop.md` of the shared spec; choices where it is silent:
//! `docs/decisions.md`. Layouts the vendor defines are pinned by const asserts for 32-bit
//! targets (the device's), and checked on x86_64 where they do not depend on pointer size.
#![no_std]
// C's printf family takes variadic arguments (device builds of the archive only; the
// archive builds run with RUSTC_BOOTSTRAP for -Zbuild-std already).
#![cfg_attr(
    all(feature = "archive", device_libc, not(target_arch = "x86")),
    feature(c_variadic)
)]
// Our memcpy/memset must not be turned back into calls to themselves.
#![no_builtins]

#[cfg(test)]
extern crate std;

// The wire layouts this runtime shares with the engine and the board (customop-abi).
pub use customop_abi::rule;
pub use customop_abi::{blob, descriptor, status};

/// The runtime: entry_func and the launch protocol, argument marshalling, translation, the
/// heaps, memcpy, SPMD ids, the stack switch and the stdio channels. Uses nothing of libc.
pub mod runtime;

/// The device C library (stdio, stdlib, string, ctype, math, errno) and the C++ runtime
/// pieces, on the runtime's services.
pub mod libc;
