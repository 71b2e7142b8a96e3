//! A C program built with -Wall -Werror against include/nrtucode_extisa.h plays libnrt: it
//! dlopen()s "libnrtucode_extisa.so" by name, binds the 30 symbols in libnrt's order and
//! runs init -> bring-up -> load -> query -> teardown on the simulated device, asserting
//! every step. It must work when the provider is found by LD_LIBRARY_PATH and when it is
//! injected with LD_PRELOAD, and fail cleanly when neither provides it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn build(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The simulated device library sits beside the program, not beside the provider, so
    // the program's own search path cannot find the provider by accident.
    std::fs::copy(
        abi_tests::artifact("libnrt_sim_device.so"),
        dir.join("libnrt_sim_device.so"),
    )
    .unwrap();
    let exe = dir.join("libnrt_sequence");
    let out = Command::new("gcc")
        .args(["-std=gnu11", "-Wall", "-Werror", "-O1"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join("abi-tests/c/libnrt_sequence.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(dir)
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .args(["-lnrt_sim_device", "-ldl"])
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run(exe: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .env_remove("NRTUCODE_EXTISA_IMAGE_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn assert_pass(out: &Output, how: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && stdout
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("PASS: ")),
        "{how}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let checks: usize = stdout.lines().last().unwrap()["PASS: ".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(checks >= 80, "{how}: only {checks} checks ran");
}

#[test]
fn c_program_runs_libnrts_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let exe = build(dir.path());
    let provider = abi_tests::provider();
    let artifacts = provider.parent().unwrap();

    assert_pass(
        &run(&exe, &[("LD_LIBRARY_PATH", artifacts)]),
        "by LD_LIBRARY_PATH",
    );
    assert_pass(&run(&exe, &[("LD_PRELOAD", &provider)]), "by LD_PRELOAD");

    let missing = run(&exe, &[]);
    assert_eq!(
        missing.status.code(),
        Some(1),
        "no provider reachable: a clean failure"
    );
    assert!(String::from_utf8_lossy(&missing.stderr).contains("dlopen: "));
}
