//! nrtucode-tool end to end: inspect (ELF and UCPL), prelink (and its refusals), extract
//! from a synthetic "vendor" file laid out as the record documents (plain and packaged).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nrtucode_extisa::prelink::fixture::Fixture;

mod support;
use support::synthetic_vendor;

fn tool(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nrtucode-tool"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The GNU-built test library (needs the Debian Xtensa toolchain).
fn gnu_library(dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/xtensa/build.sh");
    let out = Command::new(script).arg(dir).output().unwrap();
    assert!(
        out.status.success(),
        "building the Xtensa test library failed (install gcc-xtensa-lx106 binutils-xtensa-lx106):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("split.so")
}

#[test]
fn inspect_a_gnu_built_library() {
    let dir = tempfile::tempdir().unwrap();
    let lib = gnu_library(dir.path());
    let o = tool(&["inspect", path(&lib)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for want in [
        "ELF32 little-endian, type 3, machine 94",
        "[0] LOAD",
        "R-X",
        "[2] LOAD",
        "-WX",
        "[3] DYNAMIC",
        "RELA ",
        "relocations (14):",
        "R_XTENSA_RELATIVE    ( 5) x14",
        "kernel_info_table (4 entries",
        "key 0x00000041 (opcode 65, spec 0) -> entry 0x",
        "key 0x000007f0 (opcode 240, spec 7)",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    // The project's own layout leaves 0x400 bytes between text and data: no hazard.
    assert!(!err.contains("WARNING"), "{err}");
    let o = tool(&[
        "prelink",
        path(&lib),
        "-o",
        path(&dir.path().join("s.ucpl")),
    ]);
    assert!(
        o.status.success() && !text(&o).1.contains("WARNING"),
        "{:?}",
        text(&o)
    );
}

#[test]
fn prelink_and_inspect_warn_about_what_the_vendor_stages_wrongly() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("skewed.elf");
    let f = Fixture::skewed();
    std::fs::write(&lib, f.build()).unwrap();
    for args in [
        vec!["inspect", path(&lib)],
        vec![
            "prelink",
            path(&lib),
            "-o",
            path(&dir.path().join("s.ucpl")),
        ],
    ] {
        let o = tool(&args);
        let (_, err) = text(&o);
        assert!(o.status.success(), "{err}");
        assert!(
            err.contains("nrtucode-tool: WARNING: ")
                && err.contains("text segment's p_paddr 0x4 is not aligned to 0x10")
                && err.contains("placed at 0x18004"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn prelink_writes_the_staged_image() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("sample.elf");
    std::fs::write(&lib, Fixture::sample().build()).unwrap();
    let out = dir.path().join("sample.ucpl");
    let o = tool(&["prelink", path(&lib), "--coretype", "21", "-o", path(&out)]);
    assert!(o.status.success(), "{:?}", text(&o));
    let ucpl = std::fs::read(&out).unwrap();
    assert_eq!(&ucpl[..8], b"UCPL \0\0\0");
    assert_eq!(ucpl.len(), 0x40 + 0x90);
    assert_eq!(
        &ucpl[0x20..0x24],
        &0x00E0_0804u32.to_le_bytes(),
        "relocated code at 0x20"
    );
    assert_eq!(
        &ucpl[0x44..0x48],
        &0x18008u32.to_le_bytes(),
        "relocated data at 0x40"
    );
    let (shown, _) = text(&tool(&["inspect", path(&out)]));
    assert!(
        shown.contains("UCPL image, 208 bytes") && shown.contains("start 0x18018"),
        "{shown}"
    );
}

#[test]
fn prelink_refusals_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.elf");
    std::fs::write(&bad, b"\x7fELF\x02 not a 32-bit library").unwrap();
    let out = dir.path().join("bad.ucpl");
    let o = tool(&["prelink", path(&bad), "-o", path(&out)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o).1.contains("prelink failed with status 1"),
        "{:?}",
        text(&o)
    );
    assert!(!out.exists() && !out.with_extension("partial").exists());
    let o = tool(&["prelink", path(&bad), "--coretype", "6"]);
    assert!(text(&o).1.contains("SUNDA libraries are pushed whole"));
    let o = tool(&["prelink", path(&bad), "--coretype", "2"]);
    assert!(text(&o).1.contains("not a Q7 POOL coretype"));
    let o = tool(&["prelink", path(&bad), "--coretype", "-1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .starts_with("nrtucode-tool: invalid value '-1' for '--coretype <N>'")
            && text(&o).1.contains("bad coretype \"-1\" (13, 21 or 29)"),
        "{:?}",
        text(&o)
    );
    // A mistyped option is named and the right one suggested; every command has help and
    // version; inspect speaks JSON.
    let o = tool(&["prelink", path(&bad), "--coretyp", "13"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o)
            .1
            .contains("tip: a similar argument exists: '--coretype'"),
        "{:?}",
        text(&o)
    );
    for sub in ["", "inspect", "prelink", "extract"] {
        for flag in ["--help", "--version"] {
            let args: Vec<&str> = [sub, flag].into_iter().filter(|a| !a.is_empty()).collect();
            let o = tool(&args);
            assert!(o.status.success(), "{args:?}");
            assert!(!text(&o).0.is_empty(), "{args:?}");
        }
    }
    let sample = dir.path().join("sample.elf");
    std::fs::write(&sample, Fixture::sample().build()).unwrap();
    let o = tool(&["inspect", path(&sample), "--json"]);
    assert!(o.status.success(), "{:?}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["kind"], "elf");
    assert_eq!(doc["segments"][0]["type"], "LOAD");
    assert_eq!(doc["prelink"]["status"], 0);
    assert_eq!(doc["prelink"]["start_sym"], 0x18018);
    assert_eq!(tool(&["frob"]).status.code(), Some(2));
    assert_eq!(tool(&["inspect"]).status.code(), Some(2));
    let o = tool(&["inspect", path(&dir.path().join("missing"))]);
    assert!(text(&o).1.contains("No such file"));
}

fn check_extracted(out: &Path) {
    for (ct, libs) in [(6, 1), (13, 4), (21, 4), (29, 4)] {
        for lib in 0..libs {
            let elf = std::fs::read(out.join(format!("ext-isa/ct{ct}/lib{lib}.elf"))).unwrap();
            assert!(elf.starts_with(b"\x7fELF"));
            let json = std::fs::read(out.join(format!("ext-isa/ct{ct}/lib{lib}.json"))).unwrap();
            assert_eq!(json.len(), if ct == 6 { 0x6c0 } else { 0x20 });
        }
    }
    let sizes: Vec<u64> = (0..4)
        .map(|l| {
            std::fs::metadata(out.join(format!("ext-isa/ct13/lib{l}.elf")))
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(sizes, vec![0xa260, 0xf5c, 0x1500, 0x6974]);
    // The extracted Cayman library prelinks.
    let o = tool(&[
        "prelink",
        path(&out.join("ext-isa/ct13/lib0.elf")),
        "-o",
        path(&out.join("x.ucpl")),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
}

#[test]
fn extract_checks_then_writes_the_image_directory() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = synthetic_vendor(dir.path());
    let out = dir.path().join("images");

    let o = tool(&["extract", path(&vendor), "-o", path(&out)]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("no GNU build-id"), "{err}");
    assert!(
        err.contains("ct13 lib0: sha256 ")
            && err.contains("is not the documented 910d41c3ededce67..."),
        "{err}"
    );
    assert!(err.contains("--allow-unverified"));
    assert!(!out.exists(), "nothing written when checks fail");

    let o = tool(&[
        "extract",
        path(&vendor),
        "-o",
        path(&out),
        "--allow-unverified",
    ]);
    let (report, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        report.contains("ct29 lib3: offset 0x14020 size 0x6974"),
        "{report}"
    );
    assert!(
        report.contains("ext-ISA tables agree with the documented offsets"),
        "{report}"
    );
    assert!(
        report.contains("4 base memory images, 2 hwdecode tables"),
        "{report}"
    );
    check_extracted(&out);
    let file = |rel: &str| std::fs::read(out.join(rel)).unwrap();
    assert_eq!(file("memory/ct13/1/iram.bin"), vec![0x11; 0x100]);
    assert_eq!(file("memory/ct13/1/dram.bin"), vec![0x22; 0x80]);
    assert_eq!(file("memory/ct13/17/iram.bin"), vec![0x33; 0x40]);
    assert_eq!(file("memory/ct2/1/iram.bin"), vec![0x66; 0x40]);
    assert_eq!(file("hwdecode/ct7/prof_cam.bin"), vec![0x44; 0x400]);
    assert_eq!(file("hwdecode/ct7/prof_table.bin"), vec![0x55; 0x2000]);
    assert!(
        !out.join("memory/ct13/1/sram.bin").exists(),
        "NULL getters give no file"
    );

    // A file that only has the images (no ELF tables): the tables are reported unreadable.
    let bare = dir.path().join("bare.so");
    let mut bytes = std::fs::read(&vendor).unwrap();
    bytes[..4].copy_from_slice(b"BARE");
    std::fs::write(&bare, bytes).unwrap();
    let bare_out = dir.path().join("bare");
    let o = tool(&[
        "extract",
        path(&bare),
        "-o",
        path(&bare_out),
        "--allow-unverified",
    ]);
    let (report, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        report.contains("unverified: image tables unreadable (not a little-endian ELF64 file)"),
        "{report}"
    );
    assert!(bare_out.join("ext-isa/ct13/lib0.elf").exists() && !bare_out.join("memory").exists());

    let o = tool(&[
        "extract",
        path(&vendor),
        "-o",
        path(&out),
        "--allow-unverified",
    ]);
    assert!(
        text(&o).1.contains("exists and is not empty"),
        "never overwrites"
    );

    // Images that are not there are never extracted, whatever the flags.
    let short = dir.path().join("short.so");
    std::fs::write(&short, vec![0u8; 0x30000]).unwrap();
    let none = dir.path().join("none");
    let o = tool(&[
        "extract",
        path(&short),
        "-o",
        path(&none),
        "--allow-unverified",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let (_, err) = text(&o);
    assert!(
        err.contains("missing: ct6 lib0: 0x921660+0xd308 is past the end of the file"),
        "{err}"
    );
    assert!(
        err.contains("missing: ct29 lib0: no ELF32 Xtensa header at 0x1ce60"),
        "{err}"
    );
    assert!(!none.exists());
}

#[test]
fn extract_from_a_debian_package() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pkg");
    let lib_dir = root.join("opt/aws/neuron/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        "Package: synthetic-neuronx-runtime-lib\nVersion: 0.0.1\nArchitecture: amd64\nMaintainer: tests <tests@example.invalid>\nDescription: synthetic vendor layout\n",
    )
    .unwrap();
    let vendor = synthetic_vendor(&lib_dir);
    assert!(vendor.exists());
    let deb = dir.path().join("synthetic.deb");
    let built = Command::new("dpkg-deb")
        .args(["--build", "-Zgzip", "-z1"])
        .arg(&root)
        .arg(&deb)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = dir.path().join("images");
    let o = tool(&[
        "extract",
        path(&deb),
        "-o",
        path(&out),
        "--allow-unverified",
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    check_extracted(&out);
}
