//! The device C library an op links with the archive: number parsing and formatting (tested
//! on the host in every build), and in archive builds the C entry points, the allocation
//! functions on the libc heap, math, string, ctype and the C++ runtime pieces. It may use
//! the runtime's services ([`crate::runtime`]); the runtime never uses it.

pub mod cerrno;
pub mod cstdlib;
pub mod printf;
pub mod strtod;

#[cfg(feature = "archive")]
mod base;
#[cfg(feature = "archive")]
pub use base::*;
#[cfg(all(feature = "archive", device_libc))]
pub mod cctype;
#[cfg(feature = "archive")]
pub mod cmath;
#[cfg(all(feature = "archive", device_libc))]
pub mod cstdio;
#[cfg(all(feature = "archive", device_libc))]
pub mod cstring;
#[cfg(all(feature = "archive", device_libc))]
pub mod cxxrt;
