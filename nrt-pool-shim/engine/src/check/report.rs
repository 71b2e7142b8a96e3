//! What checking mode reports: findings (what a check found, about which elements) and
//! notes (what it could not check).

use std::fmt;

use super::list::{Check, Checks};

/// Element ranges a finding lists before it only counts them.
pub const SHOWN_RANGES: usize = 4;

/// Something a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub check: Check,
    pub kernel: String,
    /// The cores involved (empty: none in particular).
    pub cores: Vec<usize>,
    /// The tensor: "the output".
    pub tensor: String,
    /// What was found: "never written by any core".
    pub what: String,
    /// The first element ranges `[start, end)` (flat, row-major), at most [`SHOWN_RANGES`].
    pub ranges: Vec<(u64, u64)>,
    /// How many ranges and elements in all.
    pub range_count: u64,
    pub elements: u64,
    /// The source line it is about: where the check saw it (an arithmetic corner, a leaked
    /// block's maker, a racing read), else the kernel's own line; None where the library's
    /// debug information does not say.
    pub source: Option<SourceLine>,
}

/// A line of an op's source, as its debug information names it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceLine {
    /// The file as the compiler was given it.
    pub file: String,
    pub line: u32,
}

/// A (file, line) pair as the debug information's readers give it.
impl From<(String, u32)> for SourceLine {
    fn from((file, line): (String, u32)) -> SourceLine {
        SourceLine { file, line }
    }
}

impl SourceLine {
    /// The source line a place text starts with: `FILE:LINE`, `FILE:LINE:COLUMN`, or
    /// either followed by ` in FUNCTION` (as fault reports and check notes write them).
    pub fn parse_place(text: &str) -> Option<SourceLine> {
        let place = text.split(" in ").next()?.trim();
        let (rest, last) = place.rsplit_once(':')?;
        let last: u32 = last.parse().ok()?;
        // FILE:LINE:COLUMN or FILE:LINE.
        match rest.rsplit_once(':') {
            Some((file, line)) if !file.is_empty() && line.parse::<u32>().is_ok() => {
                Some(SourceLine {
                    file: file.into(),
                    line: line.parse().ok()?,
                })
            }
            _ if !rest.is_empty() && last > 0 => Some(SourceLine {
                file: rest.into(),
                line: last,
            }),
            _ => None,
        }
    }
}

impl fmt::Display for SourceLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

impl Finding {
    /// A finding about no element ranges (a core's note, a run that failed).
    pub fn about(
        check: Check,
        kernel: &str,
        cores: Vec<usize>,
        tensor: impl Into<String>,
        what: String,
    ) -> Finding {
        Finding {
            check,
            kernel: kernel.into(),
            cores,
            tensor: tensor.into(),
            what,
            ranges: Vec::new(),
            range_count: 0,
            elements: 0,
            source: None,
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "check {}: kernel '{}'", self.check, self.kernel)?;
        match self.cores.as_slice() {
            [] => {}
            [c] => write!(f, ", core {c}")?,
            cs => {
                let names: Vec<String> = cs.iter().map(usize::to_string).collect();
                write!(f, ", cores {}", names.join(", "))?
            }
        }
        write!(f, ", {}: {}", self.tensor, self.what)?;
        if self.elements > 0 {
            let shown: Vec<String> = self
                .ranges
                .iter()
                .map(|(a, b)| {
                    if b - a == 1 {
                        format!("[{a}]")
                    } else {
                        format!("[{a}, {b})")
                    }
                })
                .collect();
            write!(f, ": elements {}", shown.join(" "))?;
            let more = self.range_count - self.ranges.len() as u64;
            if more > 0 {
                write!(f, " and {more} more range(s)")?;
            }
            write!(
                f,
                " ({} element{})",
                self.elements,
                if self.elements == 1 { "" } else { "s" }
            )?;
        }
        Ok(())
    }
}

/// What a checked launch found, and what it could not check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The checks made.
    pub checks: Checks,
    pub findings: Vec<Finding>,
    /// What checking mode says besides its findings: what a check cannot see here, and
    /// checks asked for that this launch could not make.
    pub notes: Vec<CheckNote>,
    /// Findings a suppression matched (`--suppress`), each with the entry's index: kept
    /// out of `findings`, still reported (SARIF marks them suppressed).
    pub suppressed: Vec<(Finding, usize)>,
}

impl CheckReport {
    /// Gives findings that name no source line of their own the line `kernel_line` finds
    /// (the kernel's), asked only when one needs it.
    pub fn place_unsourced(&mut self, kernel_line: impl FnOnce() -> Option<SourceLine>) {
        if self.findings.iter().all(|f| f.source.is_some()) {
            return;
        }
        let Some(line) = kernel_line() else {
            return;
        };
        for f in self.findings.iter_mut().filter(|f| f.source.is_none()) {
            f.source = Some(line.clone());
        }
    }
}

/// Something checking mode says besides its findings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckNote {
    /// The check it is about (None: checking mode as a whole).
    pub check: Option<Check>,
    pub kind: NoteKind,
    pub text: String,
}

/// What a [`CheckNote`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// How far a check sees (said in every report of it).
    Limit,
    /// A kind of problem these cores cannot see at all (the race check's reads on host
    /// cores): worth saying once.
    Unseen,
    /// A check asked for that this launch could not make, and why.
    NotChecked,
}

impl NoteKind {
    /// Its name in JSON and Python: "limit", "unseen", "not-checked".
    pub fn name(self) -> &'static str {
        match self {
            NoteKind::Limit => "limit",
            NoteKind::Unseen => "unseen",
            NoteKind::NotChecked => "not-checked",
        }
    }
}

impl CheckNote {
    pub fn new(check: Option<Check>, kind: NoteKind, text: impl Into<String>) -> CheckNote {
        CheckNote {
            check,
            kind,
            text: text.into(),
        }
    }

    /// A check that did not run, and why ("parity: not checked: WHY").
    pub fn not_checked(check: Check, why: impl fmt::Display) -> CheckNote {
        CheckNote::new(
            Some(check),
            NoteKind::NotChecked,
            format!("{check}: not checked: {why}"),
        )
    }
}

impl fmt::Display for CheckNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Element ranges, gathered in increasing order.
#[derive(Default)]
pub struct ElementRanges {
    shown: Vec<(u64, u64)>,
    pub(crate) open: Option<(u64, u64)>,
    count: u64,
    pub(crate) elements: u64,
}

impl ElementRanges {
    pub fn push(&mut self, e: u64) {
        self.elements += 1;
        match &mut self.open {
            Some((_, end)) if *end == e => *end += 1,
            _ => {
                self.close();
                self.open = Some((e, e + 1));
            }
        }
    }

    fn close(&mut self) {
        if let Some(r) = self.open.take() {
            self.count += 1;
            if self.shown.len() < SHOWN_RANGES {
                self.shown.push(r);
            }
        }
    }

    /// The finding about these elements of the output (None: there are none).
    pub fn finding(
        mut self,
        check: Check,
        kernel: &str,
        cores: Vec<usize>,
        what: String,
    ) -> Option<Finding> {
        self.close();
        (self.elements > 0).then(|| Finding {
            check,
            kernel: kernel.into(),
            cores,
            tensor: "the output".into(),
            what,
            ranges: self.shown,
            range_count: self.count,
            elements: self.elements,
            source: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_places_read_as_file_and_line() {
        let at = |f: &str, l| {
            Some(SourceLine {
                file: f.into(),
                line: l,
            })
        };
        assert_eq!(SourceLine::parse_place("k.cpp:9 in k"), at("k.cpp", 9));
        assert_eq!(SourceLine::parse_place("/a/b.cpp:12:5"), at("/a/b.cpp", 12));
        assert_eq!(
            SourceLine::parse_place("/a/b.cpp:12 in f(int, char)"),
            at("/a/b.cpp", 12)
        );
        assert_eq!(SourceLine::parse_place("line 3, column 4"), None);
        assert_eq!(SourceLine::parse_place("entry_func+0x40"), None);
        assert_eq!(at("x.cpp", 7).unwrap().to_string(), "x.cpp:7");
    }
}
