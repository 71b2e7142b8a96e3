//! The dependency arrows of the workspace run one way (issue #16): the engine knows nothing
//! of the CLI, `.npy` files or the build flow; nothing depends on the CLI; the conformance
//! harnesses and the provider's tests reach the simulated device without the Pool shim.

use std::process::Command;

/// The workspace packages `package` depends on (normal dependencies, transitively).
fn deps(package: &str, invert: bool) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args([if invert { "-i" } else { "-p" }, package])
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(/"))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|n| n != package)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn dependency_arrows_run_one_way() {
    let engine = deps("nrt-pool-engine", false);
    assert_eq!(
        engine,
        ["customop-device", "nrt-pool-schema"],
        "the engine's arrows"
    );
    let build = deps("nrt-pool-build", false);
    assert_eq!(
        build,
        ["customop-device", "nrt-pool-schema"],
        "the build flow's arrows"
    );
    let qemu = deps("nrt-pool-qemu", false);
    assert_eq!(
        qemu,
        ["customop-device", "nrt-pool-engine", "nrt-pool-schema"],
        "the Xtensa backend's arrows: the engine's interface, nothing of the CLI or build flow"
    );
    let shim = deps("nrt-pool-shim", false);
    assert!(
        !shim
            .iter()
            .any(|d| d == "nrt-pool-cli" || d == "nrt-pool-build"),
        "libnrt_pool_shim.so holds the seam and launch FFI only: {shim:?}"
    );
    assert_eq!(
        deps("nrt-pool-cli", true),
        Vec::<String>::new(),
        "nothing uses the CLI"
    );
    let abi = deps("abi-tests", false);
    assert!(
        abi.iter().all(|d| !d.starts_with("nrt-pool-")),
        "abi-tests reaches the simulated device without the Pool shim: {abi:?}"
    );
    assert!(abi.contains(&"nrt-sim-device".to_string()));
}
