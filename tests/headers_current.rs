//! The committed C headers equal what cbindgen generates from the current sources.
//! `UPDATE_HEADERS=1 cargo test -p gpsimd-open --test headers_current` (or `make headers`)
//! rewrites them.

const GENERATED: &[(&str, &str)] = &[
    (
        "nrtucode_extisa.h",
        include_str!(concat!(env!("OUT_DIR"), "/nrtucode_extisa.h")),
    ),
    (
        "nrt_sim_device.h",
        include_str!(concat!(env!("OUT_DIR"), "/nrt_sim_device.h")),
    ),
    (
        "nrt_pool.h",
        include_str!(concat!(env!("OUT_DIR"), "/nrt_pool.h")),
    ),
];

#[test]
fn committed_headers_are_current() {
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let update = std::env::var_os("UPDATE_HEADERS").is_some();
    for (name, generated) in GENERATED {
        let path = include.join(name);
        if update {
            std::fs::write(&path, generated).unwrap();
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == *generated,
            "include/{name} is stale or missing: run `make headers` and commit the result"
        );
    }
}
