//! The dependency arrows of the workspace run one way (issues #16, #26): the engine knows
//! nothing of the CLI, `.npy` files or the build flow, nor of the device runtime (it shares
//! only the wire layouts of `customop-abi`, a leaf); nothing depends on the CLI; no package
//! reaches itself through its dev-dependencies; the conformance harnesses and the
//! provider's tests reach the simulated device without the Pool shim. Inside the device
//! runtime, the libc may use the runtime and not the reverse; and no Rust source of the
//! engine side or the device runtime passes 700 lines.

use std::process::Command;

/// The workspace packages `package` depends on (normal dependencies, transitively).
fn deps(package: &str, invert: bool) -> Vec<String> {
    deps_over(package, invert, "normal")
}

/// The workspace packages `package` reaches over `edges` ("normal", "normal,dev", ...).
fn deps_over(package: &str, invert: bool, edges: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--offline",
            "-e",
            edges,
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
    assert_eq!(
        deps("customop-abi", false),
        Vec::<String>::new(),
        "the wire layouts are a leaf"
    );
    assert_eq!(
        deps("customop-device", false),
        ["customop-abi"],
        "the device runtime's arrows"
    );
    let engine = deps("nrt-pool-engine", false);
    assert_eq!(
        engine,
        ["customop-abi", "nrt-pool-schema"],
        "the engine's arrows: the wire layouts, not the device runtime"
    );
    let build = deps("nrt-pool-build", false);
    assert_eq!(
        build,
        ["customop-abi", "nrt-pool-schema"],
        "the build flow's arrows"
    );
    let qemu = deps("nrt-pool-qemu", false);
    assert_eq!(
        qemu,
        ["customop-abi", "nrt-pool-engine", "nrt-pool-schema"],
        "the Xtensa backend's arrows: the engine's interface, nothing of the CLI or build flow"
    );
    assert_eq!(
        deps("nrt-pool-open", false),
        [
            "customop-abi",
            "nrt-pool-engine",
            "nrt-pool-qemu",
            "nrt-pool-schema"
        ],
        "the one way in: above the engine and the Xtensa backend, below every front end"
    );
    for front_end in ["nrt-pool-cli", "nrt-pool-shim"] {
        assert!(
            deps(front_end, false).contains(&"nrt-pool-open".to_string()),
            "{front_end} opens its engines through nrt-pool-open"
        );
    }
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

/// No package reaches itself through a dev-dependency (customop-device's bench once pulled
/// in the testkit, which depended back on the runtime).
#[test]
fn no_dev_dependency_cycle() {
    for package in [
        "customop-abi",
        "customop-device",
        "nrt-pool-schema",
        "nrt-pool-engine",
        "nrt-pool-build",
        "nrt-pool-qemu",
        "nrt-pool-open",
        "nrt-pool-shim",
        "nrt-pool-testkit",
    ] {
        let mut reached = Vec::new();
        for dev in deps_over(package, false, "dev") {
            reached.extend(deps(&dev, false));
            reached.push(dev);
        }
        assert!(
            !reached.iter().any(|d| d == package),
            "{package} reaches itself through its dev-dependencies: {reached:?}"
        );
    }
}

/// Rust sources under `dir` (recursively).
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every front end opens its engines through `nrt-pool-open` (issue #41): none builds an
/// engine or a backend itself, or looks for the board or the runtime archives on its own.
#[test]
fn front_ends_open_engines_one_way() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["cli/src", "ffi/src", "python/src"] {
        rust_files(&root.join("nrt-pool-shim").join(dir), &mut files);
    }
    assert!(files.len() > 10, "the front ends' sources: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for own_way in [
            "PoolEngine::new(",
            "PoolEngine::with_backend(",
            "XtensaBackend::new(",
            "pool-board.elf",
            "libneuroncustomop.a\"",
        ] {
            assert!(
                !text.contains(own_way),
                "{} opens or finds on its own ({own_way}): use nrt_pool_open",
                f.display()
            );
        }
    }
}

/// Inside the device runtime crate, the runtime never names the libc (the libc may use the
/// runtime's services).
#[test]
fn the_runtime_does_not_use_the_libc() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("customop-device/src/runtime"), &mut files);
    assert!(files.len() > 5, "the runtime's modules: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("crate::libc"),
            "{} uses the libc: the arrow runs libc -> runtime only",
            f.display()
        );
    }
}

/// Backends report typed outcomes (issue #26): the Xtensa backend never writes the host
/// cores' control block, and the engine's launch, load and shape paths never read it (the
/// host backend decodes its own).
#[test]
fn only_the_host_backend_reads_the_control_block() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("nrt-pool-shim/qemu/src"), &mut files);
    for f in ["run.rs", "load.rs", "shape.rs", "lib.rs", "call.rs"] {
        files.push(root.join("nrt-pool-shim/engine/src").join(f));
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for word in ["ControlBlock", "set_fault", "stdio_append", "CORE_DONE"] {
            assert!(
                !text.contains(word),
                "{} names {word}: backends return typed outcomes instead",
                f.display()
            );
        }
    }
}

/// No Rust source of the engine side (the Pool shim's crates' src/) or of the device
/// runtime passes 700 lines: each file has one job a newcomer can name.
#[test]
fn no_engine_or_runtime_source_above_700_lines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("customop-device/src"), &mut files);
    rust_files(&root.join("customop-device/abi/src"), &mut files);
    for krate in [
        "engine", "qemu", "ffi", "cli", "build", "schema", "python", "testkit",
    ] {
        rust_files(
            &root.join("nrt-pool-shim").join(krate).join("src"),
            &mut files,
        );
    }
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 700).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}
