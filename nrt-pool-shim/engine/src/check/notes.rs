//! The notes a core's runtime wrote during a checked launch (its check log in the data
//! scratch area: `customop_abi::checklog`), read after the launch into memory and rules
//! findings. The log is device memory a kernel could have overwritten: it is read through
//! bounds-checked little-endian fields, never cast.

use std::cell::OnceCell;
use std::path::PathBuf;

use customop_abi::blob::scratch;
use customop_abi::checklog::{NoteKind, CHECK_LOG_SIZE, MAX_NOTES};

use super::list::{Check, Checks};
use super::report::{Finding, SourceLine};
use crate::device_tensors::DeviceTensors;

/// The cores' check logs, read against device memory and the op library's file (`file`;
/// its bytes read once, when a note first needs them).
pub(super) struct CheckLogs<'e> {
    tensors: &'e DeviceTensors,
    file: Option<PathBuf>,
    library: OnceCell<Option<Vec<u8>>>,
}

/// One note as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Note {
    kind: NoteKind,
    count: u32,
    a: u64,
    b: u64,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The notes in a log's bytes (header, then 32-byte notes), and how many were dropped;
/// notes of unknown kinds are passed over.
fn parse(log: &[u8]) -> (Vec<Note>, u32) {
    let count = u32_at(log, 0).unwrap_or(0).min(MAX_NOTES as u32) as usize;
    let dropped = u32_at(log, 4).unwrap_or(0);
    let notes = (0..count)
        .filter_map(|i| {
            let at = 32 + i * 32;
            Some(Note {
                kind: NoteKind::from_u32(u32_at(log, at)?)?,
                count: u32_at(log, at + 4)?,
                a: u64_at(log, at + 8)?,
                b: u64_at(log, at + 16)?,
            })
        })
        .collect();
    (notes, dropped)
}

impl<'e> CheckLogs<'e> {
    pub(super) fn new(tensors: &'e DeviceTensors, file: Option<PathBuf>) -> CheckLogs<'e> {
        CheckLogs {
            tensors,
            file,
            library: OnceCell::new(),
        }
    }

    /// Empties the check logs of cores `0..cores` before a checking launch.
    pub(super) fn clear(tensors: &mut DeviceTensors, cores: usize) {
        for c in 0..cores {
            let soc = tensors.memory.scratch[c].soc + scratch::CHECK_LOG as u64;
            if let Some(log) = tensors.memory.bytes_populated(soc, 32) {
                log.fill(0);
            }
        }
    }

    /// The findings in the check logs of cores `0..cores` that `checks` asks for, notes of
    /// one kind and text on several cores as one finding.
    pub(super) fn findings(&self, kernel: &str, cores: usize, checks: Checks) -> Vec<Finding> {
        let mut found: Vec<Finding> = Vec::new();
        for c in 0..cores {
            let soc = self.tensors.memory.scratch[c].soc + scratch::CHECK_LOG as u64;
            let Some(log) = self.tensors.memory.read(soc, CHECK_LOG_SIZE) else {
                continue;
            };
            let (notes, dropped) = parse(log);
            let mut said: Vec<(Check, String, String)> = notes
                .iter()
                .map(|n| self.say(n))
                .filter(|(check, _, _)| checks.has(*check))
                .collect();
            if dropped > 0 {
                said.push((
                    Check::Memory,
                    "the check log".into(),
                    format!("{dropped} more note(s) did not fit"),
                ));
            }
            for (check, tensor, what) in said {
                match found
                    .iter_mut()
                    .find(|f| f.check == check && f.tensor == tensor && f.what == what)
                {
                    Some(f) => {
                        if !f.cores.contains(&c) {
                            f.cores.push(c);
                        }
                    }
                    None => {
                        // Notes that name a place end with "at FILE:LINE[...]".
                        let source = what
                            .rsplit_once(" at ")
                            .and_then(|(_, place)| SourceLine::parse_place(place));
                        let mut f = Finding::about(check, kernel, vec![c], tensor, what);
                        f.source = source;
                        found.push(f);
                    }
                }
            }
        }
        found
    }

    /// A note's check, what it is about, and what it says.
    fn say(&self, n: &Note) -> (Check, String, String) {
        match n.kind {
        NoteKind::DoubleFree if n.b == 0 => (
            Check::Memory,
            "a tcm_malloc block".into(),
            "tcm_free of a block already freed, or of no tcm_malloc block".into(),
        ),
        NoteKind::DoubleFree => (
            Check::Memory,
            "an HBM block".into(),
            format!("freed twice, or never allocated (SoC {:#x})", n.a),
        ),
        NoteKind::HbmLeak => (
            Check::Memory,
            "HBM blocks".into(),
            format!(
                "{} block(s), {} bytes, still held when the kernel returned (a tensor kept past the kernel, or neuron_hbm_allocate without neuron_hbm_deallocate)",
                n.count, n.a
            ),
        ),
        NoteKind::TcmLeak => (
            Check::Memory,
            "tcm_malloc blocks".into(),
            format!(
                "{} block(s), {} bytes, still held when the kernel returned (tcm_free them)",
                n.count, n.a
            ),
        ),
        NoteKind::LibcLeak => (
            Check::Memory,
            "malloc/new blocks".into(),
            format!(
                "{} block(s), {} bytes, still held when the kernel returned (free or delete \
                 them: the core's heap starts empty at each launch)",
                n.count, n.a
            ),
        ),
        NoteKind::LeakSite => (
            Check::Memory,
            "malloc/new blocks".into(),
            format!(
                "{} of the blocks still held were made at {}",
                n.count,
                self.call_site(n.b)
            ),
        ),
        NoteKind::HeapOverrun => (
            Check::Memory,
            match n.b {
                0 => "a malloc/new block",
                1 => "a tcm_malloc block",
                _ => "an HBM block",
            }
            .into(),
            format!(
                "a store past the end of the block's {} bytes (byte +{} after its end changed)",
                n.a, n.count
            ),
        ),
        NoteKind::UseAfterFree => (
            Check::Memory,
            "a tcm_malloc block".into(),
            format!(
                "a copy of {} bytes {} TCM, in a block already freed (tcm_free)",
                n.count,
                if n.b == 1 { "into" } else { "out of" },
            ),
        ),
        NoteKind::HeapFull => (
            Check::Memory,
            "the core's heap".into(),
            format!(
                "new of {} bytes finds the device heap (malloc and new: 36352 bytes, 128 \
                 blocks) full: the device build fails here",
                n.a
            ),
        ),
        NoteKind::NoDstTensor => (
            Check::Rules,
            "the output".into(),
            format!(
                "a multicore launch ({} cores) whose kernel never called get_dst_tensor(): \
                 every core's returned tensor is copied whole into the output",
                n.count
            ),
        ),
        NoteKind::Arithmetic => (
            Check::Rules,
            "the kernel".into(),
            format!(
                "{} at {}",
                arithmetic(n.count),
                self.source_place(n.a, n.b)
            ),
        ),
        NoteKind::MulticoreAccessor => (
            Check::Rules,
            self.tensors.label_at(n.a),
            format!(
                "a {} accessor while {} cores run (they race on the device; use \
                 tcm_accessor())",
                if n.b == 1 { "standard" } else { "stream" },
                n.count
            ),
        ),
    }
    }

    /// The op library's ELF, read once for the notes that need it (`library` keeps it).
    fn library_bytes(&self) -> Option<&[u8]> {
        self.library
            .get_or_init(|| crate::library::debug_image(self.file.as_ref()?))
            .as_deref()
    }

    /// "file:line in function" of the call that returns `at` bytes from the op library's
    /// `entry_func` (a leaked block's maker), else that distance.
    fn call_site(&self, at: u64) -> String {
        self.library_bytes()
            .and_then(|bytes| {
                crate::symbolize::call_site_near(bytes, crate::library::ENTRY_SYMBOL, at)
            })
            .unwrap_or_else(|| format!("entry_func{:+#x}", at as i64))
    }

    /// "file:line:column" of a note's source place: the file's name read from the op
    /// library `file` bytes from its `entry_func` (the line and column when it cannot be).
    fn source_place(&self, file: u64, at: u64) -> String {
        let (line, column) = (at >> 32, at & 0xffff_ffff);
        let name = self
            .library_bytes()
            .and_then(|bytes| {
                crate::symbolize::c_string_near(bytes, crate::library::ENTRY_SYMBOL, file)
            })
            .map(|b| String::from_utf8_lossy(&b).into_owned());
        match name {
            Some(n) => format!("{n}:{line}:{column}"),
            None => format!("line {line}, column {column}"),
        }
    }
}

/// What an arithmetic note's operation is, and what the two machines make of it.
fn arithmetic(what: u32) -> &'static str {
    use customop_abi::checklog::{ARITH_CLZ_ZERO, ARITH_CTZ_ZERO, ARITH_FLOAT_TO_INT};
    match what {
        ARITH_FLOAT_TO_INT => {
            "a float-to-integer conversion of NaN or of a value outside the integer's range \
             (undefined in C): a Pool core saturates (NaN gives 0, a negative value 0 for an \
             unsigned type), x86 gives INT_MIN or wraps; this run has x86's"
        }
        ARITH_CLZ_ZERO => {
            "__builtin_clz(0) (undefined): a Pool core gives 32, x86 another value; this \
             run has x86's"
        }
        ARITH_CTZ_ZERO => {
            "__builtin_ctz(0) (undefined): a Pool core gives -1, x86 another value; this \
             run has x86's"
        }
        _ => "an operation a Pool core computes otherwise",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_parse_through_checked_fields() {
        let mut log = vec![0u8; CHECK_LOG_SIZE];
        log[0..4].copy_from_slice(&3u32.to_le_bytes());
        log[4..8].copy_from_slice(&2u32.to_le_bytes());
        log[32..36].copy_from_slice(&(NoteKind::TcmLeak as u32).to_le_bytes());
        log[36..40].copy_from_slice(&2u32.to_le_bytes());
        log[40..48].copy_from_slice(&512u64.to_le_bytes());
        log[64..68].copy_from_slice(&99u32.to_le_bytes()); // unknown kind: passed over
        log[96..100].copy_from_slice(&(NoteKind::DoubleFree as u32).to_le_bytes());
        log[112..120].copy_from_slice(&1u64.to_le_bytes());
        let (notes, dropped) = parse(&log);
        assert_eq!(dropped, 2);
        assert_eq!(notes.len(), 2);
        assert_eq!(
            (notes[0].kind, notes[0].count, notes[0].a),
            (NoteKind::TcmLeak, 2, 512)
        );
        assert_eq!((notes[1].kind, notes[1].b), (NoteKind::DoubleFree, 1));
        // A count past the log, and a short log: no panic, nothing made up.
        log[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&log).0.len(), 2);
        assert_eq!(parse(&log[..40]).0.len(), 0);
    }
}
