//! `libneuroncustomop.a`: the `no_std` device runtime a GPSIMD custom op links, built for
//! the host (the emulated engine runs ops against it) and for Xtensa (device objects).
//!
//! Facts: `device-customop.md` of the shared spec; choices where it is silent:
//! `docs/decisions.md`. Layouts the vendor defines are pinned by const asserts for 32-bit
//! targets (the device's), and checked on x86_64 where they do not depend on pointer size.
#![no_std]
// C's printf family takes variadic arguments (device builds of the archive only; the
// archive builds run with RUSTC_BOOTSTRAP for -Zbuild-std already).
#![cfg_attr(all(feature = "archive", target_os = "none"), feature(c_variadic))]
// Our memcpy/memset must not be turned back into calls to themselves.
#![no_builtins]

#[cfg(test)]
extern crate std;

pub mod descriptor;
pub mod fatal;
pub mod global;
pub mod heap;
pub mod mem;
pub mod platform;
pub mod printf;
pub mod runtime;
pub mod scalar;
pub mod stack;
pub mod status;
pub mod stdio;
pub mod strtod;
pub mod translate;

#[cfg(all(feature = "archive", target_os = "none"))]
pub mod cctype;
pub mod cerrno;
#[cfg(feature = "archive")]
pub mod cmath;
#[cfg(all(feature = "archive", target_os = "none"))]
pub mod cstdio;
pub mod cstdlib;
#[cfg(all(feature = "archive", target_os = "none"))]
pub mod cstring;
#[cfg(all(feature = "archive", target_os = "none"))]
pub mod cxxrt;
#[cfg(feature = "exports")]
pub mod exports;
#[cfg(all(feature = "exports", test))]
mod exports_tests;
#[cfg(feature = "archive")]
pub mod libc;
#[cfg(all(target_arch = "xtensa", feature = "archive"))]
pub mod xtensa;
