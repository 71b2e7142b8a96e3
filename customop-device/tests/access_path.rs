//! The functions the device-time estimate prices by access counts instead of by their
//! instructions (`customop_abi::access::ACCESS_PATH`, D115) are this runtime's: each entry
//! names a function the Xtensa archive defines, as the profile demangles it. A rename in
//! the runtime fails here, not silently in every estimate.

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

#[test]
fn every_access_path_entry_names_a_function_of_the_xtensa_archive() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/customop/xtensa-q7-none-elf/release/libneuroncustomop.a");
    let Ok(bytes) = std::fs::read(&path) else {
        panic!(
            "{} is not built (make customop-archives; make test builds it first)",
            path.display()
        );
    };
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
