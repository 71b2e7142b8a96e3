//! The conformance harness: every check passes against our library, the JSON report is
//! stable (snapshot), and it fails libraries with planted defects. The defective libraries
//! are forwarding shims over ours (c/shim.c), one defect each. A forwarding shim must load
//! its target, so it imports dlopen/dlsym: the faithful shim fails `exports.imports` and
//! nothing else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn harness(lib: &Path, json: bool, target: Option<&Path>) -> (bool, String) {
    let mut cmd = Command::new(abi_tests::artifact("nrtucode-conformance"));
    cmd.arg(lib);
    if json {
        cmd.arg("--json");
    }
    if let Some(t) = target {
        cmd.env("NRTUCODE_SHIM_TARGET", t);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Names of the FAIL rows of a table report.
fn failing(table: &str) -> BTreeSet<String> {
    table
        .lines()
        .filter(|l| l.contains("  FAIL  "))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn our_library_passes_every_check() {
    let (ok, table) = harness(&abi_tests::provider(), false, None);
    assert!(ok, "{table}");
    let summary = table.lines().last().unwrap();
    assert!(summary.ends_with("0 FAIL, 0 UNSUPPORTED"), "{summary}");
    assert!(table.lines().count() > 80);
}

#[test]
fn json_report_is_stable() {
    let (ok, json) = harness(&abi_tests::provider(), true, None);
    assert!(ok);
    insta::assert_snapshot!("conformance_json", json);
}

fn build_shim(dir: &Path, defect: Option<&str>) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = dir.join(format!("shim-{}.so", defect.unwrap_or("faithful")));
    let mut cmd = Command::new("gcc");
    cmd.args([
        "-O1",
        "-Wall",
        "-Werror",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
    ])
    .arg("-Wl,-soname,libnrtucode_extisa.so")
    .arg(format!(
        "-Wl,--version-script={}",
        root.join("c/shim.map").display()
    ))
    .arg(root.join("c/shim.c"))
    .args(["-ldl", "-o"])
    .arg(&out);
    if let Some(d) = defect {
        cmd.arg(format!("-D{d}"));
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn planted_defects_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let target = abi_tests::provider();
    let (ok, table) = harness(&build_shim(dir.path(), None), false, Some(&target));
    assert!(!ok);
    let faithful = failing(&table);
    assert_eq!(
        faithful,
        BTreeSet::from(["exports.imports".to_string()]),
        "{table}"
    );

    let cases: [(&str, &[&str]); 5] = [
        ("WRONG_API_LEVEL", &["api.level", "libnrt.bind"]),
        ("CLAIM_WITHOUT_WRITE", &["claim.unclaimed", "claim.release"]),
        (
            "WRONG_RECORD_BYTE",
            &["ll.sunda-records", "ll.prelinked-records"],
        ),
        (
            "MISSING_EXPORT",
            &["exports.exactly-52", "libnrt.bind", "logs.ring"],
        ),
        ("EXTRA_EXPORT", &["exports.exactly-52"]),
    ];
    for (defect, must_fail) in cases {
        let (ok, table) = harness(&build_shim(dir.path(), Some(defect)), false, Some(&target));
        assert!(!ok, "{defect} passed");
        let fails = failing(&table);
        for c in must_fail {
            assert!(fails.contains(*c), "{defect}: {c} did not fail:\n{table}");
        }
        assert!(
            fails.len() > faithful.len(),
            "{defect}: no check beyond the faithful shim's failed"
        );
    }
}

#[test]
fn customop_conformance_checks_device_archives() {
    let run = |target: &str| {
        let archive = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/customop")
            .join(target)
            .join("release/libneuroncustomop.a");
        let out = Command::new(abi_tests::artifact("customop-conformance"))
            .arg(archive)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ok, table) = run("xtensa-q7-none-elf");
    assert!(ok, "{table}");
    assert!(table.contains("4 checks: 4 PASS, 0 FAIL"), "{table}");
    assert!(table.contains("the three author symbols only"), "{table}");
    // --link: the whole archive links into a Pool core image with nothing undefined.
    let xtensa = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../customop-device/xtensa/pool-core.ld");
    let linked = Command::new(abi_tests::artifact("customop-conformance"))
        .arg(&xtensa)
        .arg("--link")
        .arg(&script)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&linked.stdout);
    assert!(linked.status.success(), "{table}");
    assert!(table.contains("5 checks: 5 PASS, 0 FAIL"), "{table}");
    assert!(table.contains("nothing undefined"), "{table}");
    // The host archive has the roster but is not a device archive.
    let (ok, table) = run("x86_64-unknown-linux-gnu");
    assert!(!ok);
    assert_eq!(
        failing(&table),
        BTreeSet::from(["members.elf32-xtensa".to_string()]),
        "{table}"
    );
    let missing = Command::new(abi_tests::artifact("customop-conformance"))
        .arg("/nonexistent.a")
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stdout).contains("archive.readable"));
}

/// Both harnesses answer --help and --version, and a mistaken command line is a usage
/// error (exit 2) naming the problem, not a check run.
#[test]
fn harnesses_answer_help_and_version() {
    for tool in ["nrtucode-conformance", "customop-conformance"] {
        let run = |args: &[&str]| {
            Command::new(abi_tests::artifact(tool))
                .args(args)
                .output()
                .unwrap()
        };
        let help = run(&["--help"]);
        let text = String::from_utf8_lossy(&help.stdout);
        assert!(help.status.success(), "{tool}: {text}");
        assert!(
            text.contains("Usage:") && text.contains("--json"),
            "{tool}: {text}"
        );
        let version = run(&["--version"]);
        assert_eq!(
            String::from_utf8_lossy(&version.stdout).trim(),
            format!("{tool} {}", env!("CARGO_PKG_VERSION"))
        );
        let bad = run(&["--jsn", "x"]);
        let err = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(2), "{tool}: {err}");
        assert!(
            err.contains("--jsn") && err.contains("--json"),
            "{tool}: {err}"
        );
        let none = run(&[]);
        assert_eq!(none.status.code(), Some(2), "{tool}");
    }
}

/// An archive that imports what the vendor's link line supplies passes the unresolved-symbol
/// check (the vendor's archive does: libxmem, libhal, libc10, ...); an import no link-line
/// library supplies fails it, by name.
#[test]
fn customop_conformance_names_the_link_line_set() {
    let dir = tempfile::tempdir().unwrap();
    let archive = |name: &str, imports: &[&str]| {
        let s = dir.path().join(format!("{name}.s"));
        let mut text = String::from("    .text\n    .align 4\nuse_them:\n");
        for i in imports.iter().chain(&[
            "_Z12get_func_cntv",
            "_Z12get_func_ptri",
            "_Z13get_func_namei",
        ]) {
            text.push_str(&format!("    .word {i}\n"));
        }
        std::fs::write(&s, text).unwrap();
        let o = dir.path().join(format!("{name}.o"));
        let a = dir.path().join(format!("lib{name}.a"));
        assert!(Command::new("xtensa-lx106-elf-as")
            .arg(&s)
            .arg("-o")
            .arg(&o)
            .status()
            .unwrap()
            .success());
        assert!(Command::new("xtensa-lx106-elf-ar")
            .arg("rcs")
            .arg(&a)
            .arg(&o)
            .status()
            .unwrap()
            .success());
        let out = Command::new(abi_tests::artifact("customop-conformance"))
            .arg(&a)
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = table
            .lines()
            .find(|l| l.starts_with("undefined.link-line"))
            .unwrap_or_else(|| panic!("{table}"))
            .to_string();
        line
    };
    let vendor_like = archive(
        "vendorlike",
        &[
            "xmem_heap_alloc",
            "xthal_window_spill_nw",
            "_Assert",
            "_ZN3c1010TensorImplD2Ev",
        ],
    );
    assert!(vendor_like.contains("PASS"), "{vendor_like}");
    assert!(
        vendor_like.contains("libxmem 1") && vendor_like.contains("libhal 1"),
        "{vendor_like}"
    );
    let stray = archive("stray", &["xmem_heap_alloc", "fopen"]);
    assert!(stray.contains("FAIL") && stray.contains("fopen"), "{stray}");
}
