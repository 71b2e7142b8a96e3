//! Suppressions (`--suppress FILE`, Python `suppress=`, `nrt_pool_set_suppressions`):
//! findings judged benign kept out of a report, as compute-sanitizer's and valgrind's
//! suppression files do, with a count of what each entry matched, so that entries which
//! never match show.
//!
//! The file: one entry per line; `#` starts a comment. An entry is the finding's check
//! (`init`, `race`, `memory`, `rules`, `cores`, `parity`, `leftovers`, or `*` for any), then
//! any of these fields, all of which must hold:
//! - `op=NS::OP` (or `OP`): the call's op or kernel as named;
//! - `kernel=NAME`: the registered kernel;
//! - `tensor=TEXT`: what the finding is about (`"the output"`, `"argument 0"`, `stdout`);
//! - `elements=A..B`: every element the finding names lies in `[A, B)` (a finding listing
//!   more ranges than it shows is not matched by a range);
//! - `at=FILE:LINE` or `at=FILE`: the finding's source line (FILE matches the whole path or
//!   its last components).
//!
//! A value with spaces is written in double quotes. A malformed line is an error naming the
//! line.

use std::path::Path;

use super::list::Check;
use super::report::{CheckReport, Finding};
use crate::target::{Target, TargetModel};

/// A suppression file's entries, and how many findings each matched so far.
#[derive(Clone, Debug, Default)]
pub struct Suppressions {
    /// Where they were read from (in reports).
    pub file: String,
    entries: Vec<Entry>,
    matched: Vec<u64>,
}

/// One entry of a suppression file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// Its line in the file (from 1).
    pub line: usize,
    /// The line as written (comment aside).
    pub text: String,
    /// None: any check.
    check: Option<Check>,
    op: Option<String>,
    kernel: Option<String>,
    tensor: Option<String>,
    elements: Option<(u64, u64)>,
    at: Option<(String, Option<u32>)>,
}

/// A suppression file that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SuppressionError {
    #[error("{file}:{line}: {why}")]
    Line {
        file: String,
        line: usize,
        why: String,
    },
    #[error("{file}: {why}")]
    File { file: String, why: String },
}

impl Suppressions {
    /// The entries of a suppression file's text; `source` names it in errors and reports.
    pub fn parse(source: &str, text: &str) -> Result<Suppressions, SuppressionError> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let entry = Entry::parse(i + 1, line).map_err(|why| SuppressionError::Line {
                file: source.into(),
                line: i + 1,
                why,
            })?;
            entries.push(entry);
        }
        let matched = vec![0; entries.len()];
        Ok(Suppressions {
            file: source.into(),
            entries,
            matched,
        })
    }

    /// The suppression file at `path`.
    pub fn read(path: &Path) -> Result<Suppressions, SuppressionError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SuppressionError::File {
            file: source.clone(),
            why: e.to_string(),
        })?;
        Suppressions::parse(&source, &text)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// How many findings entry `i` matched so far.
    pub fn matched(&self, i: usize) -> u64 {
        self.matched.get(i).copied().unwrap_or(0)
    }

    /// Moves the findings of a call of `target` that an entry matches from `findings` to
    /// `suppressed` (with the first entry that matched), counting each entry's matches.
    pub fn apply(&mut self, target: &Target, report: &mut CheckReport) {
        let mut kept = Vec::with_capacity(report.findings.len());
        for f in std::mem::take(&mut report.findings) {
            match self.entries.iter().position(|e| e.matches(target, &f)) {
                Some(i) => {
                    self.matched[i] += 1;
                    report.suppressed.push((f, i));
                }
                None => kept.push(f),
            }
        }
        report.findings = kept;
    }

    /// One line per entry: what it matched, or that it never matched.
    pub fn summary(&self) -> Vec<String> {
        self.entries
            .iter()
            .zip(&self.matched)
            .map(|(e, &n)| match n {
                0 => format!(
                    "suppression {}:{} never matched: {}",
                    self.file, e.line, e.text
                ),
                n => format!(
                    "suppression {}:{} matched {n} finding(s): {}",
                    self.file, e.line, e.text
                ),
            })
            .collect()
    }
}

impl Entry {
    fn parse(line: usize, text: &str) -> Result<Entry, String> {
        let words = split_words(text)?;
        let (first, fields) = words.split_first().ok_or("an empty entry")?;
        let check = match first.as_str() {
            "*" => None,
            name => Some(
                Check::ALL
                    .iter()
                    .copied()
                    .find(|c| c.name() == name)
                    .ok_or_else(|| {
                        format!(
                            "'{name}' is no check: an entry starts with init, race, memory, \
                             rules, cores, parity, leftovers or *"
                        )
                    })?,
            ),
        };
        let mut e = Entry {
            line,
            text: text.into(),
            check,
            ..Entry::default()
        };
        for field in fields {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| format!("'{field}': fields are KEY=VALUE"))?;
            let taken = match key {
                "op" => e.op.replace(value.into()).is_some(),
                "kernel" => e.kernel.replace(value.into()).is_some(),
                "tensor" => e.tensor.replace(value.into()).is_some(),
                "elements" => e.elements.replace(element_range(value)?).is_some(),
                "at" => e.at.replace(source_at(value)?).is_some(),
                other => {
                    return Err(format!(
                        "unknown field '{other}': the fields are op, kernel, tensor, elements \
                         and at"
                    ))
                }
            };
            if taken {
                return Err(format!("'{key}' is given twice"));
            }
        }
        Ok(e)
    }

    /// Whether this entry holds for finding `f` of a call of `target`.
    fn matches(&self, target: &Target, f: &Finding) -> bool {
        let op = |want: &String| {
            want == &target.name
                || want == &target.kernel
                || matches!(&target.model, TargetModel::Op { qualified, .. } if qualified == want)
        };
        self.check.is_none_or(|c| c == f.check)
            && self.op.as_ref().is_none_or(op)
            && self.kernel.as_ref().is_none_or(|k| k == &f.kernel)
            && self.tensor.as_ref().is_none_or(|t| t == &f.tensor)
            && self.elements.is_none_or(|(a, b)| {
                f.elements > 0
                    && f.range_count == f.ranges.len() as u64
                    && f.ranges.iter().all(|&(s, e)| a <= s && e <= b)
            })
            && self.at.as_ref().is_none_or(|(file, line)| {
                f.source
                    .as_ref()
                    .is_some_and(|s| same_file(&s.file, file) && line.is_none_or(|l| l == s.line))
            })
    }
}

/// Whether `path` is `file`, or ends in it as whole components.
fn same_file(path: &str, file: &str) -> bool {
    path == file || path.ends_with(&format!("/{}", file.trim_start_matches("./")))
}

/// `A..B` as a half-open element range.
fn element_range(v: &str) -> Result<(u64, u64), String> {
    let bad = || format!("elements={v}: a range A..B of element indices, A < B");
    let (a, b) = v.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a < b {
        Ok((a, b))
    } else {
        Err(bad())
    }
}

/// `FILE:LINE` or `FILE`.
fn source_at(v: &str) -> Result<(String, Option<u32>), String> {
    match v.rsplit_once(':') {
        Some((file, line)) if !file.is_empty() => match line.parse::<u32>() {
            Ok(l) if l > 0 => Ok((file.into(), Some(l))),
            _ => Err(format!("at={v}: FILE:LINE (a line from 1) or FILE")),
        },
        _ if !v.is_empty() => Ok((v.into(), None)),
        _ => Err("at=: FILE:LINE or FILE".into()),
    }
}

/// An entry's words: separated by spaces, a double-quoted part kept whole (its quotes
/// dropped).
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if quoted {
        return Err("a quote is not closed".into());
    }
    if !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::report::SourceLine;

    fn target() -> Target {
        Target {
            name: "my_ops::relu".into(),
            kernel: "relu".into(),
            model: TargetModel::Op {
                qualified: "my_ops::relu".into(),
                args: Vec::new(),
            },
            load: 1,
        }
    }

    fn finding(check: Check, ranges: Vec<(u64, u64)>, source: Option<(&str, u32)>) -> Finding {
        let elements = ranges.iter().map(|(a, b)| b - a).sum();
        Finding {
            check,
            kernel: "relu".into(),
            cores: vec![],
            tensor: "the output".into(),
            what: "x".into(),
            range_count: ranges.len() as u64,
            ranges,
            elements,
            source: source.map(|(f, l)| SourceLine {
                file: f.into(),
                line: l,
            }),
        }
    }

    #[test]
    fn entries_match_by_every_field_they_give_and_count_their_matches() {
        let text = "# benign\n\
                    init op=my_ops::relu tensor=\"the output\" elements=1000..1003\n\
                    race at=ops/relu.cpp:12\n\
                    * kernel=other\n";
        let mut s = Suppressions::parse("s.supp", text).unwrap();
        assert_eq!(s.entries().len(), 3);
        let mut r = CheckReport {
            findings: vec![
                finding(Check::Init, vec![(1000, 1003)], None),
                finding(Check::Init, vec![(0, 3)], None),
                finding(Check::Race, vec![(5, 6)], Some(("/src/ops/relu.cpp", 12))),
                finding(Check::Race, vec![(5, 6)], Some(("/src/ops/relu.cpp", 13))),
            ],
            ..CheckReport::default()
        };
        s.apply(&target(), &mut r);
        assert_eq!(r.findings.len(), 2, "{:?}", r.findings);
        assert_eq!(r.suppressed.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 1]);
        assert_eq!((s.matched(0), s.matched(1), s.matched(2)), (1, 1, 0));
        let summary = s.summary();
        assert!(
            summary[0].contains("s.supp:2 matched 1 finding(s)"),
            "{summary:?}"
        );
        assert!(
            summary[2].contains("s.supp:4 never matched: * kernel=other"),
            "{summary:?}"
        );
    }

    #[test]
    fn a_finding_with_more_ranges_than_it_shows_is_not_matched_by_a_range() {
        let mut f = finding(Check::Init, vec![(0, 1), (2, 3)], None);
        f.range_count = 9;
        let mut s = Suppressions::parse("s", "init elements=0..100").unwrap();
        let mut r = CheckReport {
            findings: vec![f],
            ..CheckReport::default()
        };
        s.apply(&target(), &mut r);
        assert_eq!((r.findings.len(), s.matched(0)), (1, 0));
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_it() {
        let cases = [
            ("init\nbogus op=x", 2, "'bogus' is no check"),
            ("race op", 1, "fields are KEY=VALUE"),
            ("race where=x", 1, "unknown field 'where'"),
            ("race op=a op=b", 1, "'op' is given twice"),
            ("init elements=5..2", 1, "elements=5..2"),
            ("init at=f.cpp:0", 1, "at=f.cpp:0"),
            ("init tensor=\"the output", 1, "not closed"),
        ];
        for (text, line, why) in cases {
            let e = Suppressions::parse("f.supp", text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("f.supp:{line}: ")), "{e}");
            assert!(e.contains(why), "{e}");
        }
        assert!(Suppressions::parse("f", "# only comments\n\n")
            .unwrap()
            .entries()
            .is_empty());
    }
}
