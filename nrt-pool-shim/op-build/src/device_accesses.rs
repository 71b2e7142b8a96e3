//! The device build's loads and stores by source location, read from its Xtensa assembly:
//! the widest memory access GCC for Xtensa emitted at each `file:line:column` (D125). A Pool core
//! faults on a 2- or 4-byte access through a misaligned address, but where GCC for Xtensa
//! knows an address is less aligned than its type (a buffer it aligned, an offset it
//! follows through a loop), it moves the value in narrower pieces and the device build
//! runs. Host builds in the device's data model check each typed access at run time; the
//! GCC plugin drops a check at a location where the device build's widest access is
//! narrower than the check's alignment, so host cores give the bytes the device gives
//! there.
//!
//! Device builds write their line table themselves (`-gno-as-loc-support`, D102): each row
//! is a label (`.LMn`) in the code and an entry of the `.debug_line` program, written as
//! assembler data. So the program is read here as DWARF's line-number machine would run
//! it, over the assembler's items, with the file names from the header (DWARF 4 or 5).
//! GCC 12 writes each row's column after the row (`.loc 1 4 54` becomes a row of line 4,
//! then `DW_LNS_set_column 54`): a row takes the column its entry leaves set, as the
//! assembler-written table (`.loc`) gives it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Bytes each Xtensa load or store mnemonic moves (`l32r` loads the function's literal
/// pool, never op data: left out).
fn width(mnemonic: &str) -> Option<u8> {
    Some(match mnemonic {
        "l8ui" | "s8i" => 1,
        "l16ui" | "l16si" | "s16i" => 2,
        "l32i" | "l32i.n" | "s32i" | "s32i.n" | "l32ai" | "s32ri" | "s32c1i" | "lsi" | "ssi"
        | "lsiu" | "ssiu" | "lsx" | "ssx" | "lsxu" | "ssxu" => 4,
        _ => return None,
    })
}

/// A source location: file (by its index in the table), line, column.
type Place = (usize, u32, u32);

/// The widest access at each location, by the canonical path of its file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceAccesses {
    widest: BTreeMap<(String, u32, u32), u8>,
}

/// One item of assembler data in the `.debug_line` section.
#[derive(Clone, Debug, PartialEq)]
enum Item<'a> {
    /// A number, or a label expression (`.LM3`, `.LM3-.LM2`), as written.
    Value(&'a str),
    /// A `.string`'s text.
    Text(String),
}

impl<'a> Item<'a> {
    fn number(&self) -> Option<i64> {
        let Item::Value(v) = self else { return None };
        let (neg, v) = v.strip_prefix('-').map_or((false, *v), |r| (true, r));
        let n = match v.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16).ok()?,
            None => v.parse().ok()?,
        };
        Some(if neg { -n } else { n })
    }

    /// The first label of a label expression.
    fn label(&self) -> Option<&'a str> {
        let Item::Value(v) = self else { return None };
        let v: &'a str = v;
        v.split(['-', '+']).next().filter(|l| l.starts_with('.'))
    }
}

/// A `.string "..."` directive's text (C escapes of `\\` and `\"` undone).
fn string_text(args: &str) -> Option<String> {
    let inner = args.trim().strip_prefix('"')?.strip_suffix('"')?;
    Some(inner.replace("\\\"", "\"").replace("\\\\", "\\"))
}

/// What the assembly holds for the line table: the program's items, the strings the
/// header names by label, and each memory access's row label and width.
#[derive(Default)]
struct Parts<'a> {
    items: Vec<Item<'a>>,
    strings: HashMap<&'a str, String>,
    accesses: Vec<(&'a str, u8)>,
}

impl<'a> Parts<'a> {
    fn of(text: &'a str) -> Parts<'a> {
        let mut p = Parts::default();
        let mut section = ".text";
        let mut label: Option<&str> = None;
        // The last line-row label in code, until a function ends.
        let mut row: Option<&str> = None;
        for line in text.lines() {
            let line = line.trim();
            if let Some(l) = line
                .strip_suffix(':')
                .filter(|l| !l.contains(char::is_whitespace))
            {
                label = Some(l);
                if l.starts_with(".LM") {
                    row = Some(l);
                }
                continue;
            }
            let (op, args) = line
                .split_once(char::is_whitespace)
                .map_or((line, ""), |(o, a)| (o, a.trim()));
            match op {
                ".section" => section = args.split(',').next().unwrap_or(args).trim(),
                ".text" | ".data" | ".bss" => section = op,
                ".size" => row = None,
                ".string" | ".ascii" => {
                    let Some(s) = string_text(args) else { continue };
                    if section == ".debug_line" {
                        p.items.push(Item::Text(s));
                    } else if let Some(l) = label {
                        p.strings.insert(l, s);
                    }
                }
                ".byte" | ".2byte" | ".4byte" | ".uleb128" | ".sleb128"
                    if section == ".debug_line" =>
                {
                    p.items
                        .extend(args.split(',').map(|v| Item::Value(v.trim())));
                }
                _ => {
                    if let (Some(w), Some(r)) = (width(op), row) {
                        p.accesses.push((r, w));
                    }
                }
            }
            label = None;
        }
        p
    }
}

/// A reader over the line program's items.
struct Reader<'p, 'a> {
    items: &'p [Item<'a>],
    at: usize,
}

impl<'p, 'a> Reader<'p, 'a> {
    fn next(&mut self) -> Option<&'p Item<'a>> {
        let i = self.items.get(self.at)?;
        self.at += 1;
        Some(i)
    }

    fn number(&mut self) -> Option<i64> {
        self.next()?.number()
    }

    /// A value of DWARF form `form`: a string (inline or by label), else a number.
    fn value(&mut self, form: i64, strings: &HashMap<&str, String>) -> Option<Result<String, i64>> {
        let item = self.next()?;
        Some(match (form, item) {
            (_, Item::Text(s)) => Ok(s.clone()),
            // DW_FORM_line_strp, DW_FORM_strp: a label of the string sections.
            (0x1f | 0x0e, i) => Ok(strings.get(i.label()?)?.clone()),
            (_, i) => Err(i.number()?),
        })
    }
}

/// The header's file names, in the program's numbering (DWARF 5 from 0, 4 from 1), each
/// with its directory joined where it has one other than the compilation's.
fn files(
    r: &mut Reader<'_, '_>,
    strings: &HashMap<&str, String>,
) -> Option<(Vec<String>, i64, i64, i64)> {
    let _unit_length = r.next()?;
    let version = r.number()?;
    if version >= 5 {
        let _address_size = r.next()?;
        let _segment_selector_size = r.next()?;
    }
    let _header_length = r.next()?;
    let _min_inst_length = r.next()?;
    if version >= 4 {
        let _max_ops = r.next()?;
    }
    let _default_is_stmt = r.next()?;
    let line_base = r.number()?;
    let line_base = if line_base > 127 {
        line_base - 256
    } else {
        line_base
    };
    let line_range = r.number()?.max(1);
    let opcode_base = r.number()?;
    for _ in 1..opcode_base {
        r.next()?;
    }
    let join = |dirs: &[String], d: i64, name: String| match usize::try_from(d) {
        Ok(d) if d > 0 && !name.starts_with('/') => dirs
            .get(d)
            .map_or(name.clone(), |dir| format!("{dir}/{name}")),
        _ => name,
    };
    let mut names = Vec::new();
    if version >= 5 {
        let entries = |r: &mut Reader<'_, '_>| -> Option<Vec<(Option<String>, i64)>> {
            let formats: Vec<(i64, i64)> = (0..r.number()?)
                .map(|_| Some((r.number()?, r.number()?)))
                .collect::<Option<_>>()?;
            (0..r.number()?)
                .map(|_| {
                    let (mut path, mut dir) = (None, 0);
                    for &(content, form) in &formats {
                        match (content, r.value(form, strings)?) {
                            (1, Ok(s)) => path = Some(s),
                            (2, Err(n)) => dir = n,
                            _ => {}
                        }
                    }
                    Some((path, dir))
                })
                .collect()
        };
        let dirs: Vec<String> = entries(r)?
            .into_iter()
            .map(|(p, _)| p.unwrap_or_default())
            .collect();
        for (path, dir) in entries(r)? {
            names.push(join(&dirs, dir, path.unwrap_or_default()));
        }
    } else {
        // DWARF 2-4: directories, then files (name, directory, time, length), each list
        // ended by a 0; numbered from 1 (the compilation's directory is 0).
        let mut dirs = vec![String::new()];
        while let Some(Item::Text(d)) = r.items.get(r.at) {
            dirs.push(d.clone());
            r.at += 1;
        }
        r.next()?;
        names.push(String::new());
        while let Some(Item::Text(n)) = r.items.get(r.at) {
            let n = n.clone();
            r.at += 1;
            let dir = r.number()?;
            r.next()?;
            r.next()?;
            names.push(join(&dirs, dir, n));
        }
        r.next()?;
    }
    Some((names, line_base, line_range, opcode_base))
}

/// The header's file names and each row label's place, running the line program.
type Rows<'a> = (Vec<String>, HashMap<&'a str, Place>);

fn rows<'a>(parts: &Parts<'a>) -> Rows<'a> {
    let mut r = Reader {
        items: &parts.items,
        at: 0,
    };
    let mut out = HashMap::new();
    let Some((names, line_base, line_range, opcode_base)) = files(&mut r, &parts.strings) else {
        return (Vec::new(), out);
    };
    let start_file = usize::from(names.len() > 1);
    let (mut file, mut line, mut column) = (start_file, 1i64, 0u32);
    let mut address: Option<&str> = None;
    // Rows emitted since the last address: their column is the one their entry leaves.
    let mut pending: Vec<(&'a str, usize, u32)> = Vec::new();
    let flush = |pending: &mut Vec<(&'a str, usize, u32)>,
                 column: u32,
                 out: &mut HashMap<&'a str, Place>| {
        for (a, f, l) in pending.drain(..) {
            out.insert(a, (f, l, column));
        }
    };
    while let Some(op) = r.number() {
        match op {
            0 => {
                let Some(len) = r.number() else { break };
                let Some(sub) = r.number() else { break };
                match sub {
                    1 => {
                        flush(&mut pending, column, &mut out);
                        (file, line, column, address) = (start_file, 1, 0, None);
                    }
                    2 => {
                        flush(&mut pending, column, &mut out);
                        address = r.next().and_then(|i| i.label());
                    }
                    _ => {
                        for _ in 1..len.max(1) {
                            r.next();
                        }
                    }
                }
                continue;
            }
            9 => {
                flush(&mut pending, column, &mut out);
                address = r.next().and_then(|i| i.label());
                continue;
            }
            3 => line += r.number().unwrap_or(0),
            4 => {
                file = r
                    .number()
                    .and_then(|f| usize::try_from(f).ok())
                    .unwrap_or(file)
            }
            5 => {
                column = r
                    .number()
                    .and_then(|c| u32::try_from(c).ok())
                    .unwrap_or(column)
            }
            2 | 12 => {
                r.next();
            }
            1 => {}
            op if op >= opcode_base => line += line_base + (op - opcode_base) % line_range,
            _ => continue,
        }
        // A copy or a special opcode appends a row.
        if op == 1 || op >= opcode_base {
            if let (Some(a), Ok(l)) = (address, u32::try_from(line)) {
                pending.push((a, file, l));
            }
        }
    }
    flush(&mut pending, column, &mut out);
    (names, out)
}

impl DeviceAccesses {
    /// The accesses of `text` (GCC's assembly for the device, with its line table), each
    /// file named as a path from the current folder (the compilers run there) made
    /// canonical where it exists.
    pub fn from_assembly(text: &str) -> DeviceAccesses {
        let parts = Parts::of(text);
        let (names, rows) = rows(&parts);
        let canonical: Vec<String> = names
            .iter()
            .map(|n| {
                std::fs::canonicalize(Path::new(n))
                    .map_or_else(|_| n.clone(), |p| p.to_string_lossy().into_owned())
            })
            .collect();
        let mut out = DeviceAccesses::default();
        for (label, w) in parts.accesses {
            let Some(&(file, line, column)) = rows.get(label) else {
                continue;
            };
            let Some(name) = canonical.get(file).filter(|n| !n.is_empty()) else {
                continue;
            };
            let e = out.widest.entry((name.clone(), line, column)).or_insert(w);
            *e = (*e).max(w);
        }
        out
    }

    /// The widest access at `file:line:column`, if the device build made one there.
    pub fn widest(&self, file: &str, line: u32, column: u32) -> Option<u8> {
        self.widest.get(&(file.to_string(), line, column)).copied()
    }

    /// `W WIDTH LINE COLUMN FILE` lines for the GCC plugin (the file last: it may hold
    /// spaces).
    pub fn to_plugin_text(&self) -> String {
        self.widest
            .iter()
            .map(|((file, line, column), w)| format!("W {w} {line} {column} {file}\n"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the assembler writes the line table (`.loc` directives, as GCC writes without
    /// `-gno-as-loc-support`): each access's location read directly.
    fn from_loc_directives(text: &str) -> DeviceAccesses {
        let mut files: HashMap<u32, String> = HashMap::new();
        let mut at: Option<(u32, u32, u32)> = None;
        let mut out = DeviceAccesses::default();
        for line in text.lines().map(str::trim) {
            let mut words = line.split_whitespace();
            match words.next() {
                Some(".file") => {
                    let n = words.next().and_then(|n| n.parse().ok());
                    let name = line.rsplit('"').nth(1);
                    if let (Some(n), Some(name)) = (n, name) {
                        files.insert(n, name.to_string());
                    }
                }
                Some(".loc") => {
                    let v: Vec<u32> = words.take(3).filter_map(|w| w.parse().ok()).collect();
                    at = (v.len() == 3).then(|| (v[0], v[1], v[2]));
                }
                Some(".size") => at = None,
                Some(op) => {
                    if let (Some(w), Some((f, l, c))) = (width(op), at) {
                        let name = std::fs::canonicalize(&files[&f])
                            .map_or_else(|_| files[&f].clone(), |p| p.to_string_lossy().into());
                        let e = out.widest.entry((name, l, c)).or_insert(w);
                        *e = (*e).max(w);
                    }
                }
                None => {}
            }
        }
        out
    }

    const SOURCE: &str = r#"#include "pieces.h"
typedef unsigned uint32_t;
typedef unsigned short uint16_t;
int words_at_2(const unsigned char *in, int *r) {
    unsigned char b[40];
    for (int i = 0; i < 40; i++) b[i] = in[i % 16];
    unsigned s = 0;
    for (int i = 0; i < 4; i++) s += *(uint32_t *)(b + 4 * i + 2);
    r[0] = (int)s;
    return sum_halves(b, 8);
}
int half_through(const unsigned char *b, int k) { return *(const uint16_t *)(b + 2 * k + 1); }
"#;
    const HEADER: &str = "static inline int sum_halves(const unsigned char *b, int n) {\n\
        int s = 0;\n    for (int i = 0; i < n; i++) s += ((const unsigned short *)b)[i];\n\
        return s;\n}\n";

    /// The device build's line program, run here, places every access where the
    /// assembler's own table (`.loc`) does, on GCC for Xtensa's output for a source with a
    /// header in another folder; the word read at offset 2 is two halfwords there.
    #[test]
    fn the_line_program_places_each_access_where_loc_directives_do() {
        let Some(tools) = crate::XtensaTools::on_path_for_test() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inc")).unwrap();
        std::fs::write(dir.path().join("inc/pieces.h"), HEADER).unwrap();
        let src = dir.path().join("k.cpp");
        std::fs::write(&src, SOURCE).unwrap();
        let assembly = |table: &[&str]| {
            let out = tools
                .cxx()
                .args([
                    "-Os",
                    "-g",
                    "-fno-var-tracking",
                    "-S",
                    "-mabi=windowed",
                    "-o",
                    "-",
                ])
                .args(table)
                .arg("-I")
                .arg(dir.path().join("inc"))
                .arg(&src)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let ours = DeviceAccesses::from_assembly(&assembly(&["-gno-as-loc-support"]));
        let theirs = from_loc_directives(&assembly(&[]));
        assert!(theirs.widest.len() >= 5, "{theirs:?}");
        assert_eq!(ours, theirs);
        let k = std::fs::canonicalize(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let at = SOURCE.lines().nth(7).unwrap().find("*(uint32_t").unwrap() as u32 + 1;
        assert_eq!(ours.widest(&k, 8, at), Some(2), "{ours:?}");
        assert!(ours.to_plugin_text().lines().all(|l| l.starts_with("W ")));
    }

    #[test]
    fn assembly_without_a_line_table_gives_nothing() {
        assert_eq!(
            DeviceAccesses::from_assembly("f:\n\tl32i a2, a2, 0\n"),
            DeviceAccesses::default()
        );
    }
}
