//! Generates the C headers of the FFI crates with cbindgen into OUT_DIR. The committed
//! copies in include/ are checked against these by tests/headers_current.rs; `make headers`
//! refreshes them.

use std::path::{Path, PathBuf};

/// A generated header: its crate, cbindgen config, name, and the source files that make up
/// its C API (none: the whole crate).
struct Header {
    krate: &'static str,
    config: &'static str,
    name: &'static str,
    sources: &'static [&'static str],
}

const HEADERS: &[Header] = &[
    // Only the ABI types and the exported shims: the crate's internal constants stay out.
    Header {
        krate: "nrtucode-extisa",
        config: "nrtucode-extisa/cbindgen.toml",
        name: "nrtucode_extisa.h",
        sources: &[
            "src/abi.rs",
            "src/ffi/get.rs",
            "src/ffi/context.rs",
            "src/ffi/core.rs",
            "src/ffi/ll.rs",
            "src/ffi/opset.rs",
        ],
    },
    Header {
        krate: "nrtucode-extisa/sim",
        config: "nrtucode-extisa/sim/cbindgen.toml",
        name: "nrt_sim_device.h",
        sources: &["src/capi.rs"],
    },
    Header {
        krate: "nrt-pool-shim/ffi",
        config: "nrt-pool-shim/ffi/cbindgen.toml",
        name: "nrt_pool.h",
        sources: &[
            "src/seam.rs",
            "src/launch.rs",
            "src/checks.rs",
            "src/profile.rs",
        ],
    },
];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    for h in HEADERS {
        let krate = root.join(h.krate);
        rerun_if_changed(&krate.join("src"));
        rerun_if_changed(&root.join(h.config));
        let config = cbindgen::Config::from_file(root.join(h.config)).expect("cbindgen config");
        let mut builder = cbindgen::Builder::new().with_config(config);
        for src in h.sources {
            builder = builder.with_src(krate.join(src));
        }
        builder
            .generate()
            .unwrap_or_else(|e| panic!("cbindgen for {}: {e}", h.krate))
            .write_to_file(out.join(h.name));
    }
}

fn rerun_if_changed(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            rerun_if_changed(&entry.path());
        }
    }
}
