//! The build flow's own digest (`NRT_POOL_BUILD_FLOW`): a hash of the sources that decide
//! what an op build generates and links (this crate, the op contract, the wire layouts), so
//! a build recorded by another version of the flow is never taken as current (reuse.rs).

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let mut all = Vec::new();
    for dir in [
        "src",
        "cxx",
        "gcc-plugin",
        "../schema/src",
        "../../customop-device/abi/src",
    ] {
        let d = here.join(dir);
        println!("cargo:rerun-if-changed={}", d.display());
        files(&d, &mut all);
    }
    all.sort();
    // FNV-1a over names and bytes: stable across Rust versions, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for p in &all {
        feed(
            p.strip_prefix(&here)
                .unwrap_or(p)
                .to_string_lossy()
                .as_bytes(),
        );
        feed(&std::fs::read(p).unwrap_or_default());
    }
    println!("cargo:rustc-env=NRT_POOL_BUILD_FLOW={h:016x}");
}
