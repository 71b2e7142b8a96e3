//! `libnrtucode_extisa.so`: the host microcode provider libnrt dlopens to bring up GPSIMD
//! (Pool engine) cores, prelink and stage ext-ISA libraries and build their load records.
//!
//! Layout: a safe core ([`context`], [`core`], [`ll`], [`opset`], [`images`], [`prelink`])
//! over byte-exact handle objects ([`handles`]) and the caller's callback tables
//! ([`platform`]); [`ffi`] holds the 52 `extern "C"` shims, one module per family.
//!
//! Facts and their confidence: `host-nrtucode-extisa.md` of the shared spec; the choices the
//! record leaves open are in `docs/decisions.md`.

pub mod abi;
pub mod context;
pub mod core;
pub mod error;
pub mod fatal;
pub mod ffi;
pub mod handles;
pub mod images;
pub mod ll;
pub mod objcount;
pub mod opset;
pub mod platform;
pub mod prelink;

pub use abi::*;
pub use handles::{
    nrtucode_context_t, nrtucode_core_t, nrtucode_loadable_library_t, nrtucode_opset_t,
};
