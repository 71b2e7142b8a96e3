//! Workspace root of the open GPSIMD custom-operator stack.
//!
//! This package holds no runtime code. Its `build.rs` regenerates the C headers in
//! `include/` from the FFI crates with cbindgen, and `tests/headers_current.rs` fails when
//! the committed headers differ from what the sources produce (`make headers` refreshes them).
