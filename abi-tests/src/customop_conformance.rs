//! `customop-conformance ARCHIVE.a`: a device archive's symbol table against the roster:
//! ELF32 Xtensa members, every vendor roster symbol defined, and every symbol it leaves
//! unresolved either one of the op author's three or one the vendor's link line supplies
//! ([`LINK_LINE`]); with `--link`, the whole archive links by GNU ld into a Pool core image
//! with nothing undefined. Works on the vendor's archive as on ours; the open runtime's
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

/// What the vendor's link line adds after the archive (device-customop.md section 9.1:
/// `libc10.a -lloader -mlsp=... -lxmem -lhal -lc++-e -lm -lgcc libcweak.a`), as the
/// archive's imports name it (section 1.4 and the members' observed imports): (library,
/// exact symbols, mangled-name prefixes).
pub const LINK_LINE: &[(&str, &[&str], &[&str])] = &[
    ("libhal", &["xthal_window_spill_nw"], &[]),
    (
        "libxmem",
        &[
            "xmem_heap_init",
            "xmem_heap_alloc",
            "xmem_heap_free",
            "xmem_heap_get_free_space",
        ],
        &[],
    ),
    (
        "libloader (CRT)",
        &["_init", "__clibrary_init", "atexit"],
        &[],
    ),
    (
        "libc",
        &[
            "_Assert", "fsync", "memcpy", "memset", "memmove", "memcmp", "strlen", "abort",
        ],
        &[],
    ),
    (
        "libc10.a",
        &[],
        &[
            "_ZN3c10",
            "_ZNK3c10",
            "_ZTVN3c10",
            "_ZTIN3c10",
            "_ZN2at",
            "_ZNK2at",
            "_ZTVN2at",
        ],
    ),
    (
        "libc++-e",
        &[
            "__cxa_pure_virtual",
            "__cxa_guard_acquire",
            "__cxa_guard_release",
            "__cxa_atexit",
        ],
        &["_Znwj", "_Znaj", "_ZdlPv", "_ZdaPv", "_ZNSt3__1"],
    ),
    (
        "libgcc",
        &[],
        &[
            "__divdi3",
            "__udivdi3",
            "__moddi3",
            "__umoddi3",
            "__ashldi3",
            "__lshrdi3",
            "__ashrdi3",
            "__muldi3",
        ],
    ),
];

/// The link-line library that supplies `symbol`, if any.
pub fn link_line_supplier(symbol: &str) -> Option<&'static str> {
    LINK_LINE.iter().find_map(|(lib, exact, prefixes)| {
        (exact.contains(&symbol) || prefixes.iter().any(|p| symbol.starts_with(p))).then_some(*lib)
    })
}

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
                // A weak reference needs no definition (it reads 0 when the link has
                // none): the open runtime's constructor-list brackets, which its link
                // script gives.
                if !s.is_weak() {
                    a.undefined.insert(n.to_string());
                }
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
    let mut supplied: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut stray = Vec::new();
    for s in unresolved.difference(&author) {
        match link_line_supplier(s) {
            Some(lib) => *supplied.entry(lib).or_default() += 1,
            None => stray.push(*s),
        }
    }
    let missing_author: Vec<&&str> = author.difference(&unresolved).collect();
    rows.push(row(
        "undefined.link-line",
        "unresolved: the author's get_func_cnt/name/ptr, else what the vendor's link line supplies",
        if !stray.is_empty() {
            Outcome::fail(format!("no link-line library supplies {stray:?}"))
        } else if !missing_author.is_empty() {
            Outcome::fail(format!("the archive itself defines {missing_author:?}"))
        } else if supplied.is_empty() {
            Outcome::pass("the three author symbols only")
        } else {
            let libs: Vec<String> = supplied.iter().map(|(l, n)| format!("{l} {n}")).collect();
            Outcome::pass(format!("the author's three; {}", libs.join(", ")))
        },
    ));
    rows
}

/// Windowed-ABI stand-ins for the author's three symbols (`entry a1, 32; movi.n a2, 0;
/// retw.n`, as encodings: the lx106 assembler lacks the windowed instructions).
const AUTHOR_STUBS: &str = "    .text\n    .align 4\n\
    .global _Z12get_func_cntv\n_Z12get_func_cntv:\n    .byte 0x36, 0x41, 0x00, 0x0c, 0x02, 0x1d, 0xf0\n    .align 4\n\
    .global _Z13get_func_namei\n_Z13get_func_namei:\n    .byte 0x36, 0x41, 0x00, 0x0c, 0x02, 0x1d, 0xf0\n    .align 4\n\
    .global _Z12get_func_ptri\n_Z12get_func_ptri:\n    .byte 0x36, 0x41, 0x00, 0x0c, 0x02, 0x1d, 0xf0\n";

/// `--link SCRIPT`: the whole archive, with stand-ins for the author's three symbols, linked
/// by GNU ld (xtensa-lx106-elf-ld) with a Pool core link script into an image that leaves
/// nothing undefined.
pub fn link_row(archive: &Path, script: &Path) -> Row {
    let row = |o: Outcome| Row {
        check: "link.op-image".into(),
        expectation: "the whole archive links into a Pool core image, nothing undefined".into(),
        observed: o.observed,
        status: o.status,
    };
    let Ok(dir) = tempfile::tempdir() else {
        return row(Outcome::fail("no temporary directory"));
    };
    let (src, obj, elf) = (
        dir.path().join("author.s"),
        dir.path().join("author.o"),
        dir.path().join("image.elf"),
    );
    if let Err(e) = std::fs::write(&src, AUTHOR_STUBS) {
        return row(Outcome::fail(e.to_string()));
    }
    let tool = |name: &str, args: &mut std::process::Command| match args.output() {
        Err(e) => Err(Outcome::unsupported(format!(
            "{name} not runnable ({e}); make tools"
        ))),
        Ok(o) if !o.status.success() => Err(Outcome::fail(format!(
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ))),
        Ok(_) => Ok(()),
    };
    let assembled = tool(
        "xtensa-lx106-elf-as",
        std::process::Command::new("xtensa-lx106-elf-as")
            .arg(&src)
            .arg("-o")
            .arg(&obj),
    );
    let linked = assembled.and_then(|()| {
        tool(
            "xtensa-lx106-elf-ld",
            std::process::Command::new("xtensa-lx106-elf-ld")
                .arg("-T")
                .arg(script)
                .args(["--no-warn-rwx-segments", "-z", "noexecstack"])
                .arg(&obj)
                .arg("--whole-archive")
                .arg(archive)
                .arg("--no-whole-archive")
                .arg("-o")
                .arg(&elf),
        )
    });
    match linked {
        Err(o) => row(o),
        Ok(()) => match std::fs::read(&elf) {
            Ok(bytes) => match object::File::parse(&*bytes) {
                Ok(f) => {
                    let undefined: Vec<String> = f
                        .symbols()
                        .filter(|s| s.is_undefined() && s.is_global() && !s.is_weak())
                        .filter_map(|s| s.name().ok().map(String::from))
                        .collect();
                    if undefined.is_empty() {
                        row(Outcome::pass(format!(
                            "{} bytes, nothing undefined",
                            bytes.len()
                        )))
                    } else {
                        row(Outcome::fail(format!("undefined: {undefined:?}")))
                    }
                }
                Err(e) => row(Outcome::fail(e.to_string())),
            },
            Err(e) => row(Outcome::fail(e.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_line_names_the_vendor_archives_imports() {
        for (s, lib) in [
            ("xthal_window_spill_nw", "libhal"),
            ("xmem_heap_alloc", "libxmem"),
            ("_Assert", "libc"),
            ("__clibrary_init", "libloader (CRT)"),
            (
                "_ZN3c1010TensorImplC2ENS_8StorageENS_14DispatchKeySetERKN6caffe28TypeMetaE",
                "libc10.a",
            ),
            ("_Znwj", "libc++-e"),
            ("__udivdi3", "libgcc"),
        ] {
            assert_eq!(link_line_supplier(s), Some(lib), "{s}");
        }
        for s in ["_Z12get_func_cntv", "fopen", "neuron_translate", ""] {
            assert_eq!(link_line_supplier(s), None, "{s}");
        }
    }
}
