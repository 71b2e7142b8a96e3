//! The host libneuroncustomop.a through include/neuron_customop.hpp: a C++ op library (three
//! kernels using stream accessors, accessor<T,2>, the TCM accessor and get_cpu_id) is built
//! with -Wall -Werror and linked against the archive into a shared library that exports
//! only entry_func and register_funcs; a C++ host program loads it, hands it the handoff
//! block and services, runs every kernel and checks the results. A launch short of
//! arguments ends in a device fault naming the rule.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn gxx(args: &[&std::ffi::OsStr]) {
    let out = Command::new("g++")
        .args(["-std=c++17", "-Wall", "-Werror", "-O1"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "g++ failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn cpp_op_library_runs_on_the_host_archive() {
    let archive =
        root().join("target/customop/x86_64-unknown-linux-gnu/release/libneuroncustomop.a");
    assert!(
        archive.exists(),
        "run `make customop-archives` first (make test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libop.so");
    let host = dir.path().join("host");
    let include = root().join("include");
    let cpp = root().join("abi-tests/cpp");
    let map = format!("-Wl,--version-script={}", cpp.join("op.map").display());
    gxx(&[
        "-fPIC".as_ref(),
        "-shared".as_ref(),
        "-I".as_ref(),
        include.as_os_str(),
        cpp.join("op_kernels.cpp").as_os_str(),
        archive.as_os_str(),
        map.as_ref(),
        "-o".as_ref(),
        lib.as_os_str(),
    ]);
    gxx(&[
        "-I".as_ref(),
        include.as_os_str(),
        cpp.join("host.cpp").as_os_str(),
        "-ldl".as_ref(),
        "-o".as_ref(),
        host.as_os_str(),
    ]);

    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap();
    let exported: Vec<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(String::from))
        .collect();
    assert_eq!(
        exported,
        [
            "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE",
            "entry_func"
        ]
    );

    let run = Command::new(&host).arg(&lib).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let checks: usize = stdout
        .trim()
        .strip_prefix("PASS: ")
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(checks > 7000, "{stdout}");

    let fault = Command::new(&host).arg(&lib).arg("fault").output().unwrap();
    assert_eq!(
        fault.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&fault.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&fault.stderr),
        "device fault: customop: fatal: arg_parser.hpp:66 curr_arg_ < isa_args.get_num()\n"
    );
}
