//! libneuroncustomop.a as `make customop-archives` builds it, for each target: every roster
//! symbol is defined, the only symbols left undefined are the op author's three, and the
//! device archive's members are ELF32 Xtensa objects.

use std::collections::BTreeSet;
use std::path::PathBuf;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

const AUTHOR: [&str; 3] = [
    "_Z12get_func_cntv",
    "_Z12get_func_ptri",
    "_Z13get_func_namei",
];

fn roster() -> Vec<String> {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../customop-device/roster.txt"
    ))
    .unwrap()
    .lines()
    .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    .map(|l| l.split('\t').next().unwrap().to_string())
    .collect()
}

fn archive(target: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/customop")
        .join(target)
        .join("release/libneuroncustomop.a");
    assert!(
        p.exists(),
        "{} is missing: run `make customop-archives` (make test does)",
        p.display()
    );
    p
}

/// Weak references the Xtensa archive makes to what its Pool core link script gives: the
/// constructor-list brackets (a link without them runs no constructors) and the copy log
/// (without it the runtime logs no copies).
const WEAK_BRACKETS: [&str; 5] = [
    "__neuron_ctors_end",
    "__neuron_ctors_start",
    "__neuron_init_array_end",
    "__neuron_init_array_start",
    // The copy log past the image (pool-core.ld; D120).
    "customop_copy_log",
];

/// (defined, undefined) global symbols over all members, and each member's (class, machine);
/// weak references count as undefined only when `weak` says so.
fn symbols(target: &str, weak: bool) -> (BTreeSet<String>, BTreeSet<String>, Vec<(bool, u16)>) {
    let data = std::fs::read(archive(target)).unwrap();
    let ar = ArchiveFile::parse(&*data).unwrap();
    let (mut def, mut und, mut kinds) = (BTreeSet::new(), BTreeSet::new(), vec![]);
    for member in ar.members() {
        let member = member.unwrap();
        // Members are only 2-byte aligned in the archive; object parses aligned copies.
        let bytes = member.data(&*data).unwrap().to_vec();
        let obj = match object::File::parse(&*bytes) {
            Ok(o) => o,
            Err(e) => {
                eprintln!(
                    "{target}: member {:?}: {e}",
                    String::from_utf8_lossy(member.name())
                );
                continue;
            }
        };
        let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
        kinds.push((!obj.is_64(), machine));
        for s in obj.symbols() {
            let Ok(name) = s.name() else { continue };
            if s.is_undefined() {
                if weak || !s.is_weak() {
                    und.insert(name.to_string());
                }
            } else if s.is_global() {
                def.insert(name.to_string());
            }
        }
    }
    (def, und, kinds)
}

fn check(target: &str) -> Vec<(bool, u16)> {
    let (def, und, kinds) = symbols(target, false);
    let missing: Vec<_> = roster().into_iter().filter(|s| !def.contains(s)).collect();
    assert!(
        missing.is_empty(),
        "{target}: roster symbols not defined: {missing:?}"
    );
    let open: BTreeSet<&str> = und
        .iter()
        .filter(|s| !def.contains(*s))
        .map(String::as_str)
        .collect();
    assert_eq!(open, BTreeSet::from(AUTHOR), "{target}: undefined symbols");
    kinds
}

#[test]
fn host_archive_defines_the_roster() {
    check("x86_64-unknown-linux-gnu");
}

#[test]
fn thirty_two_bit_archive_defines_the_roster() {
    check("riscv32imac-unknown-none-elf");
}

#[test]
fn xtensa_archive_members_are_elf32_xtensa() {
    let kinds = check("xtensa-q7-none-elf");
    assert!(!kinds.is_empty());
    let (def, und, _) = symbols("xtensa-q7-none-elf", true);
    let weak: BTreeSet<&str> = und
        .iter()
        .filter(|s| !def.contains(*s) && !AUTHOR.contains(&s.as_str()))
        .map(String::as_str)
        .collect();
    assert_eq!(weak, BTreeSet::from(WEAK_BRACKETS));
    assert!(
        kinds.iter().all(|&(is32, machine)| is32 && machine == 94),
        "{kinds:?}"
    );
}
