//! The device runtime proper: what `entry_func` and a launch need. Arrows run one way: the
//! device libc (`src/libc/`) may use these services; nothing here uses the libc.
//!
//! - [`state`]: the runtime's state and operations (scratch areas, heaps, argument cursor),
//!   re-exported here as `runtime::*`.
//! - [`exports`]: the vendor roster's C ABI over it.
//! - [`platform`]: what differs between device and host (windows, core id, DMA, faults).
//! - [`translate`], [`heap`], [`mem`], [`stack`], [`scalar`], [`stdio`], [`global`],
//!   [`redzone`] (checking mode's red zones after heap blocks), `ubsan` (host builds: the
//!   device's alignment faults).

pub mod access;
#[cfg(any(test, all(feature = "archive", not(target_os = "none"))))]
pub mod convert;
pub mod global;
pub mod heap;
pub mod mem;
pub mod platform;
pub mod redzone;
pub mod scalar;
pub mod stack;
pub mod state;
pub mod stdio;
pub mod translate;
/// Host builds only: the device's alignment faults, judged in the compiler's checks.
#[cfg(all(feature = "archive", not(target_os = "none")))]
pub mod ubsan;

#[cfg(feature = "exports")]
pub mod exports;
#[cfg(all(feature = "exports", test))]
mod exports_tests;
#[cfg(all(target_arch = "xtensa", feature = "archive"))]
pub mod xtensa;

pub use state::*;
