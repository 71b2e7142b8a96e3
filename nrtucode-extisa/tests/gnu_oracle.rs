//! The external oracle: a C library built with the Debian Xtensa toolchain and linked
//! `-shared` with a split-load script is prelinked; its code and data must equal, byte for
//! byte, what GNU ld produces linking the same object statically at the addresses the
//! prelinker chose. Run for both split-load layouts (scratch segment, and inline tables).
//!
//! Needs `gcc-xtensa-lx106` and `binutils-xtensa-lx106` (`.ci/run` installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

use nrtucode_extisa::prelink::{self, CAYMAN_GEOMETRY};
use object::{Object, ObjectSection};

fn tool(name: &str) -> String {
    let t = format!("xtensa-lx106-elf-{name}");
    let found = Command::new(&t)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{t} not found: install the Debian packages gcc-xtensa-lx106 and binutils-xtensa-lx106 \
         (bash .ci/run does)"
    );
    t
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/xtensa")
}

/// Builds the test library (tests/xtensa/build.sh): the object and the shared library
/// linked with `script`.
fn build_shared(dir: &Path, script: &str) -> (PathBuf, PathBuf) {
    tool("gcc");
    tool("ld");
    run(Command::new(sources().join("build.sh")).arg(dir));
    (
        dir.join(script.replace(".ld", ".so")),
        dir.join("kernels.o"),
    )
}

fn check_against_static_link(script: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (so, obj) = build_shared(dir.path(), script);
    compare_with_static_link(dir.path(), &so, &obj, script);
}

/// Prelinks `so` and compares its code and data with a static GNU link of `obj` at the
/// addresses the prelinker chose.
fn compare_with_static_link(dir: &Path, so: &Path, obj: &Path, script: &str) {
    let image = std::fs::read(so).unwrap();
    let g = CAYMAN_GEOMETRY;
    let (mut code, mut data) = (vec![0; g.iram_size], vec![0; g.dram_size]);
    let mut logs = vec![];
    let ucpl = prelink::prelink(&image, &g, &mut code, &mut data, &mut |a| {
        logs.push(a.to_string())
    })
    .unwrap_or_else(|e| panic!("prelink {script}: {e}: {logs:?}"));
    let place = prelink::placement(&image, &g).unwrap();

    let ld_script = std::fs::read_to_string(sources().join("static.ld.in"))
        .unwrap()
        .replace("@TEXT@", &format!("0x{:x}", place.text_dst))
        .replace("@DATA@", &format!("0x{:x}", place.data_dst));
    let static_ld = dir.join("static.ld");
    std::fs::write(&static_ld, ld_script).unwrap();
    let elf = dir.join("static.elf");
    run(Command::new(tool("ld"))
        .arg("-T")
        .arg(&static_ld)
        .arg(obj)
        .arg("-o")
        .arg(&elf));

    let bytes = std::fs::read(&elf).unwrap();
    let oracle = object::File::parse(&*bytes).unwrap();
    let mut compared = 0;
    for section in oracle.sections() {
        let name = section.name().unwrap();
        let (buf, base) = match name {
            ".text" => (&code, g.iram_base),
            ".rodata" | ".data" | ".kernel_info_table" | ".bss" => (&data, g.dram_base),
            _ => continue,
        };
        let start = (section.address() as u32 - base) as usize;
        let len = section.size() as usize;
        let want: Vec<u8> = if name == ".bss" {
            vec![0; len]
        } else {
            section.data().unwrap().to_vec()
        };
        assert_eq!(
            &buf[start..start + len],
            &want[..],
            "{script}: {name} at 0x{:x}",
            section.address()
        );
        compared += len;
    }
    assert!(compared > 0x100, "{script}: compared only {compared} bytes");
    // The comparison is not vacuous: relocation changed the library's own text bytes.
    let unrelocated = object::File::parse(&*image).unwrap();
    let text = unrelocated
        .section_by_name(".text")
        .unwrap()
        .data()
        .unwrap();
    let moved = text
        .chunks(4)
        .zip(code.chunks(4))
        .filter(|(a, b)| a != b)
        .count();
    assert!(moved >= 4, "{script}: only {moved} text words relocated");
    assert_eq!(
        ucpl.code_seg_len as usize,
        (oracle.section_by_name(".text").unwrap().size() as usize + 3) & !3
    );
}

#[test]
fn prelinked_bytes_equal_a_static_gnu_link_with_scratch_segment() {
    check_against_static_link("split.ld");
}

#[test]
fn prelinked_bytes_equal_a_static_gnu_link_with_inline_tables() {
    check_against_static_link("split-inline.ld");
}

/// The same oracle for a library written in Rust, built for Xtensa with rustc's Xtensa
/// backend (tests/xtensa/rust-kernels) and linked with the GNU toolchain.
#[test]
fn prelinked_rust_library_equals_a_static_gnu_link() {
    tool("as");
    tool("ld");
    let dir = tempfile::tempdir().unwrap();
    run(Command::new(sources().join("rust-kernels/build.sh")).arg(dir.path()));
    let so = dir.path().join("rust-split.so");
    let obj = dir.path().join("rust-kernels.o");
    compare_with_static_link(dir.path(), &so, &obj, "rust-kernels with split.ld");
    // The kernels are reached through the table the device scans.
    let desc = std::fs::read(&so).unwrap();
    let elf = object::File::parse(&*desc).unwrap();
    let table = elf
        .section_by_name(".kernel_info_table")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    assert_eq!(table.len(), 16);
    assert_eq!(&table[..4], &[0, 0, 0, 65]);
    assert_eq!(&table[8..12], &[0, 0, 1, 0xF0]);
}
