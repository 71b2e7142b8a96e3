//! The functions the device-time estimate prices by access counts instead of by their
//! instructions (`customop_abi::access::ACCESS_PATH`, D115) are this runtime's: each entry
//! names a function the Xtensa archive defines, as the profile demangles it. A rename in
//! the runtime fails here, not silently in every estimate.

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

/// `file` beside the Xtensa archive (`libneuroncustomop.a`, its `.frames` table).
fn built(file: &str) -> (std::path::PathBuf, Vec<u8>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/customop/xtensa-q7-none-elf/release")
        .join(file);
    let Ok(bytes) = std::fs::read(&path) else {
        panic!(
            "{} is not built (make customop-archives; make test builds it first)",
            path.display()
        );
    };
    (path, bytes)
}

#[test]
fn every_access_path_entry_names_a_function_of_the_xtensa_archive() {
    let (_, bytes) = built("libneuroncustomop.a");
    let archive = ArchiveFile::parse(&*bytes).expect("an ar archive");
    let mut names = Vec::new();
    for member in archive.members() {
        let member = member.expect("an archive member");
        let data = member.data(&*bytes).expect("member data");
        let Ok(file) = object::File::parse(data) else {
            continue;
        };
        names.extend(
            file.symbols()
                .filter(|s| s.is_definition())
                .filter_map(|s| s.name_bytes().ok())
                .map(nrt_pool_schema::demangle),
        );
    }
    assert!(names.len() > 100, "{} symbols", names.len());
    for entry in customop_abi::access::ACCESS_PATH {
        assert!(
            names.iter().any(|n| n.starts_with(entry)),
            "ACCESS_PATH names '{entry}', which the runtime's Xtensa archive no longer \
             defines: update the list with the runtime"
        );
    }
}

/// Host builds charge printf's float conversion only when a call takes it (D122): the
/// frames table beside the Xtensa archive gives printf a reach without it (`D`) and one
/// with it (`R`). A rename of the conversion (op-build's `RUNTIME_CHARGED` names it) loses
/// the `R` lines and fails here.
#[test]
fn the_frames_table_charges_printfs_float_path_apart() {
    let (path, table) = built("libneuroncustomop.frames");
    let table = String::from_utf8(table).expect("a text table");
    let reach = |kind: &str, name: &str| {
        table.lines().find_map(|l| {
            let mut f = l.split(' ');
            (f.next() == Some(kind) && f.next() == Some(name))
                .then(|| f.next()?.parse::<u32>().ok())
                .flatten()
        })
    };
    for entry in ["printf", "snprintf", "vsnprintf"] {
        let (Some(plain), Some(float)) = (reach("D", entry), reach("R", entry)) else {
            panic!("{entry}: no D and R lines in {}", path.display());
        };
        assert!(
            float > plain + 1024,
            "{entry}: {plain} without the float path, {float} with it"
        );
    }
    assert_eq!(reach("R", "puts"), None, "puts formats no float");
    // libm's large reduction by pi/2 is charged only for the arguments that take it (D129).
    for entry in [
        "sinf", "cosf", "tanf", "sincosf", "sin", "cos", "tan", "sincos",
    ] {
        let (Some(plain), Some(large)) = (reach("D", entry), reach("R", entry)) else {
            panic!("{entry}: no D and R lines in {}", path.display());
        };
        assert!(
            large > plain + 400,
            "{entry}: {plain} without the large reduction, {large} with it"
        );
    }
    // A copy reaches checking mode's note writer only in a checked launch (D128): its
    // plain path leaves the note out, its charged path has it.
    for entry in ["_Z13neuron_memcpyyPvj", "_Z13neuron_memcpyPvyj"] {
        let (Some(plain), Some(noted)) = (reach("D", entry), reach("R", entry)) else {
            panic!("{entry}: no D and R lines in {}", path.display());
        };
        assert!(
            noted > plain,
            "{entry}: {plain} without the note, {noted} with it"
        );
    }
}
