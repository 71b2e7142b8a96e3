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

/// Host builds charge the runtime's deep paths only when a call takes them (D122, D128,
/// D129, D132): the frames table beside the Xtensa archive gives each runtime function a
/// reach without them (`D NAME BYTES`) and one per path it can take (`R NAME SLOT BYTES`).
/// A rename of a function that begins a path (`customop_abi::stack::CHARGED_PATHS` names
/// them) loses its `R` lines and fails here.
#[test]
fn the_frames_table_charges_each_deep_path_apart() {
    use customop_abi::stack::{
        CHECK_NOTE, LARGE_REDUCTION, MEDIUM_REDUCTION, PARSE_SLOW, PRINTF_FLOAT,
    };
    let (path, table) = built("libneuroncustomop.frames");
    let table = String::from_utf8(table).expect("a text table");
    let plain = |name: &str| {
        table.lines().find_map(|l| {
            let mut f = l.split(' ');
            (f.next() == Some("D") && f.next() == Some(name))
                .then(|| f.next()?.parse::<u32>().ok())
                .flatten()
        })
    };
    // Every `R NAME SLOT BYTES` line, read once.
    let r_lines: Vec<(&str, usize, u32)> = table
        .lines()
        .filter_map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
            ["R", name, slot, bytes] => Some((name, slot.parse().ok()?, bytes.parse().ok()?)),
            _ => None,
        })
        .collect();
    let charged = |name: &str, slot: usize| {
        r_lines
            .iter()
            .find(|(n, s, _)| *n == name && *s == slot)
            .map(|(_, _, bytes)| *bytes)
    };
    // The functions that may begin a path in their own slot: any other caller would run
    // past the device's edge on host cores, its runtime function not charging the path.
    let takers = |slot: usize| {
        r_lines
            .iter()
            .filter(move |(_, s, _)| *s == slot)
            .map(|(n, _, _)| *n)
    };
    let both = |name: &str, slot: usize| match (plain(name), charged(name, slot)) {
        (Some(p), Some(c)) => (p, c),
        _ => panic!("{name}: no D and R {slot} lines in {}", path.display()),
    };
    for entry in ["printf", "snprintf", "vsnprintf"] {
        let (plain, float) = both(entry, PRINTF_FLOAT.slot);
        assert!(
            float > plain + 1024,
            "{entry}: {plain} without the float path, {float} with it"
        );
    }
    assert_eq!(
        charged("puts", PRINTF_FLOAT.slot),
        None,
        "puts formats no float"
    );
    // libm's reductions by pi/2 are charged only for the arguments that take them: the
    // medium one apart from a small argument's path (either may be deeper: tanf's inline
    // path is), the large one below the medium one.
    const TRIG: [&str; 8] = [
        "sinf", "cosf", "tanf", "sincosf", "sin", "cos", "tan", "sincos",
    ];
    for entry in TRIG {
        let (plain, medium) = both(entry, MEDIUM_REDUCTION.slot);
        let (_, large) = both(entry, LARGE_REDUCTION.slot);
        assert!(
            plain.max(medium) + 400 < large,
            "{entry}: {plain} reduced inline, {medium} by the medium reduction, {large} by the large"
        );
    }
    // Only the functions whose runtime wrappers check libm's conditions may take them (the
    // long double ones are their double ones).
    for name in takers(MEDIUM_REDUCTION.slot).chain(takers(LARGE_REDUCTION.slot)) {
        assert!(
            TRIG.contains(&name) || ["sinl", "cosl", "tanl"].contains(&name),
            "{name} can take libm's reductions, but its runtime function does not charge them"
        );
    }
    // Rust's float parser takes its slow path only for text beyond its fast path (D134):
    // strtod's wrapper decides, so only the parsing functions may have the line.
    for entry in ["strtod", "strtof", "atof"] {
        let (plain, slow) = both(entry, PARSE_SLOW.slot);
        assert!(
            plain + 800 < slow,
            "{entry}: {plain} by the fast paths, {slow} by the slow one"
        );
    }
    for name in takers(PARSE_SLOW.slot) {
        // (std::stof and its kin parse through strtof.)
        assert!(
            ["strtod", "strtof", "strtold", "atof"].contains(&name)
                || name.starts_with("_ZNSt3__14sto"),
            "{name} can take the float parser's slow path, but does not charge it"
        );
    }
    // A copy reaches checking mode's note writer only in a checked launch (D128): its
    // plain path leaves the note out, its charged path has it.
    for entry in ["_Z13neuron_memcpyyPvj", "_Z13neuron_memcpyPvyj"] {
        let (plain, noted) = both(entry, CHECK_NOTE.slot);
        assert!(
            noted > plain,
            "{entry}: {plain} without the note, {noted} with it"
        );
    }
}
