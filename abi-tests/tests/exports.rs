//! The provider's dynamic symbol table is exactly the 52 `nrtucode_*` functions (diffed
//! both ways against nrtucode-extisa/exports.txt), its SONAME is the vendor's, and it
//! imports nothing but the C runtime.

use std::collections::BTreeSet;
use std::process::Command;

use object::{Object, ObjectSymbol};

fn committed_list() -> BTreeSet<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../nrtucode-extisa/exports.txt"
    ))
    .unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

#[test]
fn nm_defined_dynamic_symbols_equal_the_committed_list() {
    let so = abi_tests::provider();
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("run nm");
    assert!(
        out.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut types = BTreeSet::new();
    let exported: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3).then(|| {
                types.insert(f[1].to_string());
                f[2].to_string()
            })
        })
        .collect();
    let want = committed_list();
    assert_eq!(want.len(), 52);
    let extra: Vec<_> = exported.difference(&want).collect();
    let missing: Vec<_> = want.difference(&exported).collect();
    assert!(
        extra.is_empty(),
        "exported but not in the contract: {extra:?}"
    );
    assert!(
        missing.is_empty(),
        "in the contract but not exported: {missing:?}"
    );
    assert_eq!(
        types,
        BTreeSet::from(["T".to_string()]),
        "all exports are text symbols"
    );
    let families = ["get_", "context_", "core_", "ll_", "opset_"].map(|f| {
        exported
            .iter()
            .filter(|s| s.starts_with(&format!("nrtucode_{f}")))
            .count()
    });
    assert_eq!(families, [7, 5, 22, 9, 9]);
}

#[test]
fn soname_and_imports() {
    let bytes = std::fs::read(abi_tests::provider()).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let out = Command::new("readelf")
        .arg("-d")
        .arg(abi_tests::provider())
        .output()
        .unwrap();
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(
        dynamic.contains("Library soname: [libnrtucode_extisa.so]"),
        "SONAME: {dynamic}"
    );
    // No Neuron dependency and no dlopen: the provider is self-contained.
    let imports: Vec<String> = file
        .dynamic_symbols()
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(String::from))
        .collect();
    for forbidden in ["dlopen", "dlsym"] {
        assert!(
            !imports.iter().any(|i| i == forbidden),
            "imports {forbidden}"
        );
    }
    assert!(
        !imports.iter().any(|i| i.starts_with("nrt")),
        "imports a Neuron symbol: {imports:?}"
    );
}

#[test]
fn the_simulated_device_library_exports_only_its_c_api() {
    let out = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(abi_tests::artifact("libnrt_sim_device.so"))
        .output()
        .unwrap();
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" T "))
        .filter_map(|l| l.split_whitespace().nth(2).map(String::from))
        .collect();
    assert!(
        names.contains(&"nrt_sim_device_create".to_string()),
        "{names:?}"
    );
    // Every export is a function the header declares; nothing of Rust's leaks out.
    let header = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/nrt_sim_device.h"),
    )
    .unwrap();
    let stray: Vec<&String> = names
        .iter()
        .filter(|n| !n.starts_with("nrt_sim_") || !header.contains(&format!("{n}(")))
        .collect();
    assert!(
        stray.is_empty(),
        "exports the header does not declare: {stray:?}"
    );
}
