//! Conformance harnesses for any provider or device archive (`nrtucode-conformance`,
//! `customop-conformance`) and the ABI tests of the built libraries.
//!
//! This file: where the release artifacts are, for the tests and the probe binary.
//!
//! The tests exercise the *built* shared libraries (`make test` builds them first), the way
//! their consumers load them. `GPSIMD_ARTIFACTS` overrides the directory.

use std::path::PathBuf;

/// The directory holding `libnrtucode_extisa.so`, `libnrt_pool_shim.so` and the binaries.
pub fn artifacts() -> PathBuf {
    std::env::var_os("GPSIMD_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release"))
}

/// An artifact that must exist; a clear message otherwise.
pub fn artifact(name: &str) -> PathBuf {
    let p = artifacts().join(name);
    assert!(
        p.exists(),
        "{} is missing: build the release artifacts first (`make test` does: cargo build --release)",
        p.display()
    );
    p
}

pub fn provider() -> PathBuf {
    artifact("libnrtucode_extisa.so")
}

pub mod conformance;
pub mod customop_conformance;
pub mod scenarios;
