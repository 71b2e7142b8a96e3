//! Windowed-ABI device ops linked like the vendor's link line: op sources compiled by the
//! open Xtensa g++ with `-mabi=windowed`, assembled through customop-device/xtensa/
//! windowed-as.sh, and linked by GNU ld with our Xtensa libneuroncustomop.a into a Pool core
//! image at 0x84000000 + i * 0x200000 (customop-device/xtensa/pool-core.ld), for each of
//! the 8 cores: no literal misplaced, no symbol left undefined. An op that needs what the
//! device libc lacks fails at link time naming the symbol.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run(what: &str, cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e} (make tools)"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A windowed-ABI object from a C++ device source.
fn device_object(src: &Path, dir: &Path) -> PathBuf {
    let stem = src.file_stem().unwrap().to_string_lossy();
    let asm = dir.join(format!("{stem}.s"));
    let obj = dir.join(format!("{stem}.o"));
    run(
        "xtensa g++ -mabi=windowed",
        Command::new("xtensa-lx106-elf-g++")
            .args(["-std=c++17", "-O2", "-S", "-mabi=windowed", "-mlongcalls"])
            .args(["-ffreestanding", "-fno-exceptions", "-fno-rtti", "-I"])
            .arg(root().join("include/device"))
            .arg("-I")
            .arg(root().join("include"))
            .arg(src)
            .arg("-o")
            .arg(&asm),
    );
    run(
        "windowed-as.sh",
        Command::new(root().join("customop-device/xtensa/windowed-as.sh"))
            .arg(&asm)
            .arg(&obj),
    );
    obj
}

/// Links `objs` and the archive for the core at `org`, keeping `op_main` when the objects
/// define it (the hand-written fixtures register it through their author symbols).
fn link(objs: &[PathBuf], org: u64, out: &Path) -> Output {
    let archive = root().join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a");
    assert!(archive.exists(), "run `make customop-archives` first");
    Command::new("xtensa-lx106-elf-ld")
        .arg("-T")
        .arg(root().join("customop-device/xtensa/pool-core.ld"))
        .arg(format!("--section-start=.text={org:#x}"))
        .args([
            "--gc-sections",
            "--no-warn-rwx-segments",
            "-z",
            "noexecstack",
            // What the board calls besides entry_func, as nrt-pool build keeps it (the
            // kernels are reached through the roster).
            "-u",
            "_Z14register_funcsPF22SUNDA_UCODE_LIB_STATUSPvPKcPFivEE",
        ])
        .args(objs)
        .arg(&archive)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// The symbols a link of `objs` leaves undefined (demangled), from a link that ignores them.
fn undefined_after(objs: &[PathBuf], dir: &Path) -> std::collections::BTreeSet<String> {
    let elf = dir.join("unresolved.elf");
    let archive = root().join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a");
    run(
        "ld --unresolved-symbols=ignore-all",
        Command::new("xtensa-lx106-elf-ld")
            .arg("-T")
            .arg(root().join("customop-device/xtensa/pool-core.ld"))
            .args([
                "--gc-sections",
                "--no-warn-rwx-segments",
                "-z",
                "noexecstack",
            ])
            .arg("--unresolved-symbols=ignore-all")
            .args(objs)
            .arg(&archive)
            .arg("-o")
            .arg(&elf),
    );
    let out = run(
        "nm -u -C",
        Command::new("xtensa-lx106-elf-nm")
            .args(["-u", "-C"])
            .arg(&elf),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("U ").map(|n| n.trim().to_string()))
        .collect()
}

fn symbol(elf: &Path, name: &str) -> Option<u64> {
    let out = run("nm", Command::new("xtensa-lx106-elf-nm").arg(elf));
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (addr, _, n) = (f.next()?, f.next()?, f.next()?);
        (n == name)
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
    })
}

#[test]
fn windowed_ops_link_into_every_pool_core_image() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = root().join("abi-tests/xtensa");
    let op = device_object(&fixtures.join("op_libc.cpp"), dir.path());
    let author = device_object(&fixtures.join("author.cpp"), dir.path());
    for core in 0..8u64 {
        let org = 0x8400_0000 + core * 0x20_0000;
        let elf = dir.path().join(format!("core{core}.elf"));
        let out = link(&[op.clone(), author.clone()], org, &elf);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "core {core}: {log}");
        assert!(!log.contains("dangerous relocation"), "core {core}: {log}");
        let undefined = run(
            "nm -u",
            Command::new("xtensa-lx106-elf-nm").arg("-u").arg(&elf),
        );
        assert!(
            undefined.stdout.is_empty(),
            "core {core}: {:?}",
            undefined.stdout
        );
        for name in ["entry_func", "op_main", "printf", "snprintf", "_Znwj"] {
            let at = symbol(&elf, name).unwrap_or_else(|| panic!("core {core}: no {name}"));
            assert!(
                (org..org + 0x20_0000).contains(&at),
                "core {core}: {name} at {at:#x}"
            );
        }
    }

    // Without the author's three symbols, the link fails, and what is missing is theirs only.
    let out = link(
        std::slice::from_ref(&op),
        0x8400_0000,
        &dir.path().join("no-author.elf"),
    );
    assert!(!out.status.success());
    let missing = undefined_after(std::slice::from_ref(&op), dir.path());
    let theirs: std::collections::BTreeSet<String> =
        ["get_func_cnt()", "get_func_name(int)", "get_func_ptr(int)"]
            .map(String::from)
            .into();
    assert!(
        !missing.is_empty() && missing.is_subset(&theirs),
        "{missing:?}"
    );

    // What the device libc lacks fails the link, by name.
    let fopen = device_object(&fixtures.join("uses_fopen.cpp"), dir.path());
    let objs = [fopen, author];
    let out = link(&objs, 0x8400_0000, &dir.path().join("fopen.elf"));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(log.contains("undefined reference to `fopen'"), "{log}");
    assert_eq!(
        undefined_after(&objs, dir.path()),
        ["fopen".to_string()].into()
    );
}

/// `nrt-pool build --device-objects` gives windowed objects that link, with the archive,
/// into a core image with nothing undefined (the example ops and the generated wrapper,
/// which defines the author's three symbols).
#[test]
fn nrt_pool_device_objects_link_into_a_core_image() {
    let dir = tempfile::tempdir().unwrap();
    let ex = root().join("examples/ops");
    let dev = dir.path().join("device");
    run(
        "nrt-pool build --device-objects",
        Command::new(abi_tests::artifact("nrt-pool"))
            .args(["build", "--schema"])
            .arg(ex.join("ops.schema"))
            .arg("--out")
            .arg(dir.path().join("libops.so"))
            .arg("--device-objects")
            .arg(&dev)
            .args(["scale_add.cpp", "scale_add_mc.cpp", "hello.cpp"].map(|s| ex.join(s))),
    );
    let mut objs: Vec<PathBuf> = std::fs::read_dir(&dev)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    objs.sort();
    assert_eq!(objs.len(), 4, "{objs:?}");
    let elf = dir.path().join("ops.elf");
    let out = link(&objs, 0x8400_0000, &elf);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let undefined = run(
        "nm -u",
        Command::new("xtensa-lx106-elf-nm").arg("-u").arg(&elf),
    );
    assert!(undefined.stdout.is_empty(), "{:?}", undefined.stdout);
    for name in [
        "entry_func",
        "_Z9scale_addRKN6neuron6TensorEffRS0_",
        "get_func_cnt",
    ] {
        let demangled_ok = symbol(&elf, name).is_some()
            || name == "get_func_cnt" && symbol(&elf, "_Z12get_func_cntv").is_some();
        assert!(demangled_ok, "{name} not in the image");
    }
}

/// Windowed code runs on an emulated Xtensa core: GCC's windowed output and the windowed
/// archive's string functions, linked with the open start code and window vectors
/// (customop-device/xtensa/sim-start.S, sim.ld), under `qemu-system-xtensa -M sim -cpu
/// de212`; the program exits 42 only when 30 nested calls (window spills and refills) and
/// every string check give the right values.
#[test]
fn windowed_code_runs_under_qemu() {
    let dir = tempfile::tempdir().unwrap();
    let start = dir.path().join("sim-start.o");
    run(
        "as sim-start.S",
        Command::new("xtensa-lx106-elf-as")
            .arg("--text-section-literals")
            .arg("-I")
            .arg(root().join("customop-device/xtensa"))
            .arg(root().join("customop-device/xtensa/sim-start.S"))
            .arg("-o")
            .arg(&start),
    );
    let prog = device_object(
        &root().join("abi-tests/xtensa/windowed_run.cpp"),
        dir.path(),
    );
    let elf = dir.path().join("windowed_run.elf");
    run(
        "ld sim.ld",
        Command::new("xtensa-lx106-elf-ld")
            .arg("-T")
            .arg(root().join("customop-device/xtensa/sim.ld"))
            .args([
                "--gc-sections",
                "--no-warn-rwx-segments",
                "-z",
                "noexecstack",
            ])
            .arg(&start)
            .arg(&prog)
            .arg(root().join("target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a"))
            .arg("-o")
            .arg(&elf),
    );
    let status = Command::new("timeout")
        .arg("60")
        .arg(qemu_system_xtensa())
        .args([
            "-M",
            "sim",
            "-cpu",
            "de212",
            "-semihosting",
            "-display",
            "none",
        ])
        .args(["-monitor", "none", "-serial", "none", "-kernel"])
        .arg(&elf)
        .status()
        .expect("qemu-system-xtensa (make customop-archives builds it)");
    assert_eq!(
        status.code(),
        Some(42),
        "the windowed program's result (1-5: a failed check, 99: an exception, 124: a hang)"
    );
}

/// The QEMU the project builds (make customop-archives, D73), or `$NRT_POOL_QEMU`.
fn qemu_system_xtensa() -> std::path::PathBuf {
    std::env::var_os("NRT_POOL_QEMU").map_or_else(
        || root().join("target/customop/xtensa-q7-none-elf/qemu-system-xtensa"),
        std::path::PathBuf::from,
    )
}
