//! `customop-conformance ARCHIVE.a`: a device archive's symbol table against the roster:
//! ELF32 Xtensa members, every vendor roster symbol defined, exactly the op author's three
//! symbols left undefined. Works on the vendor's archive as on ours; the open runtime's
//! extensions are reported, not required.

use std::collections::BTreeSet;
use std::path::Path;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

use crate::conformance::{Outcome, Row};

/// The op author's symbols, undefined in any conforming archive.
pub const AUTHOR: [&str; 3] = [
    "_Z12get_func_cntv",
    "_Z12get_func_ptri",
    "_Z13get_func_namei",
];

/// (symbol, "vendor" | "open"), the harness's own copy of the roster.
pub fn roster() -> Vec<(String, String)> {
    include_str!("../../customop-device/roster.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            l.split_once('\t')
                .map(|(a, b)| (a.to_string(), b.to_string()))
        })
        .collect()
}

struct Archive {
    defined: BTreeSet<String>,
    undefined: BTreeSet<String>,
    /// (member, ELF class is 32, e_machine)
    members: Vec<(String, bool, u16)>,
}

fn read(path: &Path) -> Result<Archive, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let ar = ArchiveFile::parse(&*data).map_err(|e| format!("not an archive: {e}"))?;
    let mut a = Archive {
        defined: BTreeSet::new(),
        undefined: BTreeSet::new(),
        members: vec![],
    };
    for m in ar.members() {
        let m = m.map_err(|e| e.to_string())?;
        let name = String::from_utf8_lossy(m.name()).into_owned();
        // Members are only 2-byte aligned in the archive; parse an aligned copy.
        let bytes = m.data(&*data).map_err(|e| e.to_string())?.to_vec();
        let Ok(obj) = object::File::parse(&*bytes) else {
            a.members.push((name, false, 0));
            continue;
        };
        a.members.push((
            name,
            !obj.is_64(),
            u16::from_le_bytes([bytes[18], bytes[19]]),
        ));
        for s in obj.symbols() {
            let Ok(n) = s.name() else { continue };
            if s.is_undefined() {
                a.undefined.insert(n.to_string());
            } else if s.is_global() {
                a.defined.insert(n.to_string());
            }
        }
    }
    Ok(a)
}

/// Every check, as report rows.
pub fn run(path: &Path) -> Vec<Row> {
    let row = |check: &str, expectation: &str, o: Outcome| Row {
        check: check.into(),
        expectation: expectation.into(),
        observed: o.observed,
        status: o.status,
    };
    let a = match read(path) {
        Ok(a) => a,
        Err(e) => {
            return vec![row(
                "archive.readable",
                "an ar archive of ELF objects",
                Outcome::fail(e),
            )]
        }
    };
    let mut rows = vec![];
    let not_xtensa: Vec<&String> = a
        .members
        .iter()
        .filter(|(_, is32, m)| !(*is32 && *m == 94))
        .map(|(n, ..)| n)
        .collect();
    rows.push(row(
        "members.elf32-xtensa",
        "every member is an ELF32 Xtensa object",
        if a.members.is_empty() {
            Outcome::fail("no members")
        } else if not_xtensa.is_empty() {
            Outcome::pass(format!("{} members", a.members.len()))
        } else {
            Outcome::fail(format!(
                "{} of {} members are not: {:?}",
                not_xtensa.len(),
                a.members.len(),
                not_xtensa.first()
            ))
        },
    ));
    let roster = roster();
    let missing: Vec<&String> = roster
        .iter()
        .filter(|(s, o)| o == "vendor" && !a.defined.contains(s))
        .map(|(s, _)| s)
        .collect();
    let vendor = roster.iter().filter(|(_, o)| o == "vendor").count();
    rows.push(row(
        "roster.defined",
        "every symbol of the vendor roster is defined",
        if missing.is_empty() {
            Outcome::pass(format!("{vendor} of {vendor}"))
        } else {
            Outcome::fail(format!("missing {missing:?}"))
        },
    ));
    let open: Vec<&String> = roster
        .iter()
        .filter(|(_, o)| o == "open")
        .map(|(s, _)| s)
        .collect();
    let present = open
        .iter()
        .filter(|s| a.defined.contains(s.as_str()))
        .count();
    rows.push(row(
        "roster.open-extensions",
        "the open runtime's descriptor-level calls (optional)",
        if present == open.len() {
            Outcome::pass(format!("{present} of {}", open.len()))
        } else {
            Outcome::unsupported(format!(
                "{present} of {} present (not part of the vendor archive)",
                open.len()
            ))
        },
    ));
    let unresolved: BTreeSet<&str> = a
        .undefined
        .iter()
        .filter(|s| !a.defined.contains(*s))
        .map(String::as_str)
        .collect();
    let author: BTreeSet<&str> = AUTHOR.into_iter().collect();
    rows.push(row(
        "undefined.author-only",
        "the only unresolved symbols are get_func_cnt, get_func_name, get_func_ptr",
        if unresolved == author {
            Outcome::pass("exactly the three")
        } else {
            let extra: Vec<_> = unresolved.difference(&author).collect();
            Outcome::fail(format!("also unresolved: {extra:?}"))
        },
    ));
    rows
}
