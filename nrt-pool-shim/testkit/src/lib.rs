//! Test support for the Pool engine's crates (engine, FFI, CLI): op libraries built from
//! the examples and the test ops in `ops/`, and the paths they need.

pub mod bench;

use std::path::{Path, PathBuf};
use std::process::Command;

use nrt_pool_build::{self as opbuild, BuildOptions};

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The test ops (`ops/`): kernels that fault, constructors, a hand-written C library.
pub fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("ops")
}

pub fn archive() -> PathBuf {
    let a = root().join("target/customop/x86_64-unknown-linux-gnu/release/libneuroncustomop.a");
    assert!(
        a.exists(),
        "run `make customop-archives` first (make test does)"
    );
    a
}

/// Builds an op library with the op build helper.
pub fn build_ops(dir: &Path, name: &str, schema: &Path, sources: &[PathBuf]) -> PathBuf {
    let out = dir.join(format!("lib{name}.so"));
    opbuild::build(&BuildOptions {
        schema: schema.into(),
        sources: sources.to_vec(),
        out: out.clone(),
        archive: archive(),
        include: root().join("include"),
        device_objects: None,
        device_image: None,
        cxx: "g++".into(),
        on_compiled: None,
    })
    .unwrap_or_else(|e| panic!("building {name}: {e}"));
    out
}

pub fn examples(dir: &Path) -> PathBuf {
    let ex = root().join("examples/ops");
    build_ops(
        dir,
        "ops",
        &ex.join("ops.schema"),
        &["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s)),
    )
}

pub fn faults(dir: &Path) -> PathBuf {
    let t = ops_dir();
    build_ops(
        dir,
        "faults",
        &t.join("faults.schema"),
        &[t.join("faults.cpp")],
    )
}

/// The constructor test library (ops/ctors.cpp) with `defines` prepended.
pub fn ctors(dir: &Path, name: &str, defines: &str) -> PathBuf {
    let t = ops_dir();
    let src = dir.join(format!("{name}.cpp"));
    let body = std::fs::read_to_string(t.join("ctors.cpp")).unwrap();
    std::fs::write(&src, format!("{defines}\n{body}")).unwrap();
    build_ops(dir, name, &t.join("ctors.schema"), &[src])
}

/// abi-tests' hand-written op library (no schema; `transpose` returns a tensor).
pub fn hand_written_ops(dir: &Path) -> PathBuf {
    let cpp = root().join("abi-tests/cpp");
    let lib = dir.join("libhand.so");
    let map = format!("-Wl,--version-script={}", cpp.join("op.map").display());
    cc(
        "g++",
        &[
            "-std=c++17".as_ref(),
            "-shared".as_ref(),
            "-fPIC".as_ref(),
            "-I".as_ref(),
            root().join("include").as_os_str(),
            cpp.join("op_kernels.cpp").as_os_str(),
            archive().as_os_str(),
            map.as_ref(),
            "-o".as_ref(),
            lib.as_os_str(),
        ],
    );
    lib
}

/// Compiles C or C++ with warnings as errors.
pub fn cc(compiler: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(compiler)
        .args(["-Wall", "-Werror", "-O1"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{compiler} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
