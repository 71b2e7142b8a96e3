//! Link settings for the cdylib: the vendor SONAME, and a version script that keeps the
//! dynamic symbol table to exactly the 52 `nrtucode_*` exports listed in `exports.txt`.
use std::{env, fs, path::PathBuf};

fn main() {
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let list = dir.join("exports.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let names: Vec<String> = fs::read_to_string(&list)
        .expect("exports.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert_eq!(
        names.len(),
        52,
        "exports.txt must list exactly the 52 nrtucode_* exports"
    );
    let mut script = String::from("{\n  global:\n");
    for n in &names {
        script.push_str(&format!("    {n};\n"));
    }
    script.push_str("  local:\n    *;\n};\n");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("exports.map");
    fs::write(&out, script).unwrap();
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        out.display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libnrtucode_extisa.so");
}
