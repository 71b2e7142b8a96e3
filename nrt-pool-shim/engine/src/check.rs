//! Checking mode (issue #27, docs/decisions.md D82): a launch run again under other
//! conditions, to find what the device would hide.
//!
//! The launch itself runs first, its output filled with [`POISON`] (the bytes a user sees
//! where no core wrote). Then each core runs alone, as core `c` of the same count, over an
//! output filled with [`POISON_ALONE`]: the elements it changed are the ones it writes.
//! From those runs:
//! - init: output elements no core writes; elements whose value differs between the launch
//!   and their core run alone (they depend on memory the kernel never wrote, which the two
//!   runs poison differently, or on what another core writes);
//! - race: output elements more than one core writes;
//! - cores: the launch again on another core count, compared element by element.
//!
//! Every run starts from the same inputs (device tensors given as arguments are restored),
//! and the caller receives the first run's output.

use std::fmt;

use super::*;

/// The byte every output starts as in a checked launch: NaN in each float type, -1 in each
/// signed integer type, the largest value of each unsigned one.
pub const POISON: u8 = 0xFF;
/// The byte the output starts as when a core runs alone (any byte but [`POISON`]).
pub const POISON_ALONE: u8 = 0xA5;
/// Element ranges a finding lists before it only counts them.
pub const SHOWN_RANGES: usize = 4;

/// One check, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    Init,
    Race,
    Memory,
    Rules,
    Cores,
}

impl Check {
    pub const ALL: [Check; 5] = [
        Check::Init,
        Check::Race,
        Check::Memory,
        Check::Rules,
        Check::Cores,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Init => "init",
            Check::Race => "race",
            Check::Memory => "memory",
            Check::Rules => "rules",
            Check::Cores => "cores",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The checks a launch makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checks(u8);

impl Checks {
    pub const NONE: Checks = Checks(0);
    /// What `--check` without a list makes: init, race, memory and rules (`cores`, which
    /// runs the launch again on another core count, only when named or with `all`).
    pub const DEFAULT: Checks = Checks(0b01111);
    pub const ALL: Checks = Checks(0b11111);

    fn bit(c: Check) -> u8 {
        1 << Check::ALL.iter().position(|&x| x == c).expect("listed")
    }

    pub fn with(self, c: Check) -> Checks {
        Checks(self.0 | Checks::bit(c))
    }

    pub fn has(self, c: Check) -> bool {
        self.0 & Checks::bit(c) != 0
    }

    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// The checks on, by name.
    pub fn names(self) -> Vec<&'static str> {
        Check::ALL
            .iter()
            .filter(|&&c| self.has(c))
            .map(|c| c.name())
            .collect()
    }

    /// A check list as `--check=LIST` and `GPSIMD_OPEN_CHECK` take it: names separated by
    /// commas (init, race, memory, rules, cores), `all`, or empty / `1` / `default` for
    /// [`Checks::DEFAULT`]; `0` or `none` for no checks.
    pub fn parse(list: &str) -> Result<Checks, String> {
        let list = list.trim();
        match list {
            "" | "1" | "default" | "on" | "true" => return Ok(Checks::DEFAULT),
            "0" | "none" | "off" | "false" => return Ok(Checks::NONE),
            "all" => return Ok(Checks::ALL),
            _ => {}
        }
        let mut checks = Checks::NONE;
        for name in list.split(',').map(str::trim) {
            match Check::ALL.iter().find(|c| c.name() == name) {
                Some(&c) => checks = checks.with(c),
                None if name == "all" => checks = Checks::ALL,
                None => {
                    return Err(format!(
                        "unknown check '{name}': the checks are init, race, memory, rules and \
                         cores (or all)"
                    ))
                }
            }
        }
        Ok(checks)
    }

    /// The checks on that this version cannot make yet: said in every report, never
    /// passed over in silence.
    pub fn unsupported(self) -> Vec<Check> {
        [Check::Memory, Check::Rules]
            .into_iter()
            .filter(|&c| self.has(c))
            .collect()
    }
}

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
    /// Said once per report: checks asked for that this launch could not make.
    pub notes: Vec<String>,
}

/// Element ranges, gathered in increasing order.
#[derive(Default)]
struct Ranges {
    shown: Vec<(u64, u64)>,
    open: Option<(u64, u64)>,
    count: u64,
    elements: u64,
}

impl Ranges {
    fn push(&mut self, e: u64) {
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

    fn finding(
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
        })
    }
}

/// Calls `f(e)` for each `size`-byte element of `bytes` that is not all `fill` bytes
/// (whole 8-byte words of `fill` are passed over at once; sizes divide 8).
fn each_changed(bytes: &[u8], size: usize, fill: u8, mut f: impl FnMut(usize)) {
    let splat = u64::from_ne_bytes([fill; 8]);
    let words = bytes.len() / 8;
    let changed = |e: usize| bytes[e * size..(e + 1) * size].iter().any(|&b| b != fill);
    for w in 0..words {
        let word = u64::from_ne_bytes(bytes[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
        if word != splat {
            for e in w * 8 / size..(w + 1) * 8 / size {
                if changed(e) {
                    f(e);
                }
            }
        }
    }
    for e in words * 8 / size..bytes.len() / size {
        if changed(e) {
            f(e);
        }
    }
}

/// Whether element `e` (of `size` bytes) is the same in `a` and `b`.
fn same(a: &[u8], b: &[u8], e: usize, size: usize) -> bool {
    a[e * size..(e + 1) * size] == b[e * size..(e + 1) * size]
}

impl PoolEngine {
    /// A checked launch (see the module): the launch's own run delivers the output to `to`;
    /// the runs after it only find things.
    pub(crate) fn run_checking(
        &mut self,
        kernel: &str,
        args: &[LaunchArg],
        spec: &OutputSpec,
        cores: usize,
        to: Destination<'_>,
        start: Instant,
    ) -> Result<(Option<HostTensor>, Run, LaunchPhases, CheckReport), EmuError> {
        let checks = self.checks;
        let mut report = CheckReport {
            checks,
            ..CheckReport::default()
        };
        for c in checks.unsupported() {
            report.notes.push(format!(
                "check {c}: not made yet by this version (issue #27); nothing is said about it"
            ));
        }
        // An output that is also an input cannot start poisoned: run once, unchecked.
        if let Destination::Device(d) = &to {
            if args
                .iter()
                .any(|a| matches!(a, LaunchArg::Device(i) if overlaps(self, i, d)))
            {
                report.notes.push(
                    "checks skipped: the output is also an input, so it cannot start poisoned"
                        .into(),
                );
                let (out, run, phases) =
                    self.run_checked(kernel, args, spec, Team::all(cores), to, start)?;
                return Ok((out, run, phases, report));
            }
        }
        // Device tensors given as arguments, restored before every run after the first.
        let saved: Vec<(DeviceTensor, Vec<u8>)> = args
            .iter()
            .filter_map(|a| match a {
                LaunchArg::Device(d) => Some((d.clone(), self.device_bytes(d)?.to_vec())),
                _ => None,
            })
            .collect();
        let size = spec.dtype.size();

        // 1. The launch, its output poisoned.
        self.poison = Some(POISON);
        let device_out = match &to {
            Destination::Device(d) => Some(d.clone()),
            _ => None,
        };
        let mut to = to;
        let first = self.run_checked(
            kernel,
            args,
            spec,
            Team::all(cores),
            reborrow(&mut to),
            start,
        );
        self.poison = None;
        let (output, run, phases) = first?;
        let launch_bytes: Vec<u8> = match (&output, &to, &device_out) {
            (Some(t), _, _) => t.data.clone(),
            (None, Destination::Buffer(b), _) => b.to_vec(),
            (None, _, Some(d)) => self.device_bytes(d).map(<[u8]>::to_vec).unwrap_or_default(),
            _ => Vec::new(),
        };
        let numel = launch_bytes.len() / size.max(1);

        // 2. Each core alone: what it writes, and whether it writes what it wrote in the launch.
        if checks.has(Check::Init) || checks.has(Check::Race) {
            let mut writers = vec![0u8; numel];
            let mut differ: Vec<Ranges> = (0..cores).map(|_| Ranges::default()).collect();
            for (c, differ) in differ.iter_mut().enumerate() {
                self.restore(&saved);
                let alone = self.run_inspect(
                    kernel,
                    args,
                    spec,
                    Team::alone(c, cores),
                    POISON_ALONE,
                    |bytes| {
                        each_changed(bytes, size, POISON_ALONE, |e| {
                            writers[e] |= 1 << c;
                            if !same(bytes, &launch_bytes, e, size) {
                                differ.push(e as u64);
                            }
                        })
                    },
                );
                if let Err(e) = alone {
                    report.findings.push(Finding {
                        check: Check::Init,
                        kernel: kernel.into(),
                        cores: vec![c],
                        tensor: "the output".into(),
                        what: format!("run alone (as core {c} of {cores}), it failed: {e}"),
                        ranges: Vec::new(),
                        range_count: 0,
                        elements: 0,
                    });
                }
            }
            if checks.has(Check::Init) {
                let mut never = Ranges::default();
                for (e, &w) in writers.iter().enumerate() {
                    if w == 0
                        && launch_bytes[e * size..(e + 1) * size]
                            .iter()
                            .all(|&b| b == POISON)
                    {
                        never.push(e as u64);
                    }
                }
                report.findings.extend(never.finding(
                    Check::Init,
                    kernel,
                    Vec::new(),
                    "never written by any core".into(),
                ));
                for (c, r) in differ.into_iter().enumerate() {
                    report.findings.extend(
                        r.finding(
                            Check::Init,
                            kernel,
                            vec![c],
                            "differ when the core runs alone: they depend on memory the kernel never \
                             wrote, or on what another core writes"
                                .into(),
                        ),
                    );
                }
            }
            if checks.has(Check::Race) {
                report.findings.extend(races(kernel, &writers));
            }
        }

        // 3. The launch on another core count.
        if checks.has(Check::Cores) {
            let other = if cores > 1 { cores - 1 } else { 2 };
            self.restore(&saved);
            let mut differ = Ranges::default();
            let rerun = self.run_inspect(kernel, args, spec, Team::all(other), POISON, |bytes| {
                for e in 0..numel {
                    if !same(bytes, &launch_bytes, e, size) {
                        differ.push(e as u64);
                    }
                }
            });
            match rerun {
                Ok(_) => report.findings.extend(differ.finding(
                    Check::Cores,
                    kernel,
                    Vec::new(),
                    format!("differ between {cores} core(s) and {other}"),
                )),
                Err(e) => report.findings.push(Finding {
                    check: Check::Cores,
                    kernel: kernel.into(),
                    cores: Vec::new(),
                    tensor: "the output".into(),
                    what: format!("on {other} core(s) instead of {cores}, it failed: {e}"),
                    ranges: Vec::new(),
                    range_count: 0,
                    elements: 0,
                }),
            }
        }

        // The caller's inputs and output as the launch left them.
        self.restore(&saved);
        if let Some(d) = &device_out {
            if let Some(dst) = self.device_bytes_mut(d) {
                copy_parallel(dst, &launch_bytes);
            }
        }
        if !checks.has(Check::Race) {
            report.notes.push(
                "race: not asked for; output elements several cores write are not looked for"
                    .into(),
            );
        } else {
            report.notes.push(
                "race: reads of elements another core writes are not seen by either backend; \
                 such a read shows only where its value changes the output (an init finding)"
                    .into(),
            );
        }
        Ok((output, run, phases, report))
    }

    /// Writes the saved device tensors back.
    fn restore(&mut self, saved: &[(DeviceTensor, Vec<u8>)]) {
        for (d, bytes) in saved {
            if let Some(dst) = self.device_bytes_mut(d) {
                copy_parallel(dst, bytes);
            }
        }
    }
}

/// A device tensor's bytes overlap another's.
fn overlaps(e: &PoolEngine, a: &DeviceTensor, b: &DeviceTensor) -> bool {
    let (la, lb) = (e.device_len(a) as u64, e.device_len(b) as u64);
    a.soc < b.soc + lb && b.soc < a.soc + la
}

/// The output's elements written by more than one core, one finding per set of cores.
fn races(kernel: &str, writers: &[u8]) -> Vec<Finding> {
    let mut by_set: Vec<(u8, Ranges)> = Vec::new();
    for (e, &w) in writers.iter().enumerate() {
        if w.count_ones() < 2 {
            continue;
        }
        match by_set.iter_mut().find(|(s, _)| *s == w) {
            Some((_, r)) => r.push(e as u64),
            None => {
                let mut r = Ranges::default();
                r.push(e as u64);
                by_set.push((w, r));
            }
        }
    }
    by_set
        .into_iter()
        .filter_map(|(set, r)| {
            let cores: Vec<usize> = (0..8).filter(|c| set & (1 << c) != 0).collect();
            r.finding(
                Check::Race,
                kernel,
                cores,
                "written by more than one core".into(),
            )
        })
        .collect()
}

/// `to` lent for one run.
fn reborrow<'a>(to: &'a mut Destination<'_>) -> Destination<'a> {
    match to {
        Destination::Host => Destination::Host,
        Destination::Device(d) => Destination::Device(d.clone()),
        Destination::Buffer(b) => Destination::Buffer(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_lists_parse_and_name_what_is_unknown() {
        assert_eq!(Checks::parse(""), Ok(Checks::DEFAULT));
        assert_eq!(Checks::parse("1"), Ok(Checks::DEFAULT));
        assert_eq!(Checks::parse("0"), Ok(Checks::NONE));
        assert_eq!(Checks::parse("all"), Ok(Checks::ALL));
        let c = Checks::parse("race, cores").unwrap();
        assert!(c.has(Check::Race) && c.has(Check::Cores) && !c.has(Check::Init));
        assert_eq!(c.names(), ["race", "cores"]);
        assert!(!Checks::DEFAULT.has(Check::Cores));
        let e = Checks::parse("init,raec").unwrap_err();
        assert!(e.contains("unknown check 'raec'"), "{e}");
        assert_eq!(Checks::DEFAULT.unsupported(), [Check::Memory, Check::Rules]);
    }

    #[test]
    fn changed_elements_are_found_word_by_word_and_in_the_tail() {
        let mut b = vec![0xA5u8; 4 * 11];
        b[4 * 3 + 2] = 0;
        b[4 * 10] = 1;
        let mut seen = Vec::new();
        each_changed(&b, 4, 0xA5, |e| seen.push(e));
        assert_eq!(seen, [3, 10]);
        let mut seen = Vec::new();
        each_changed(&[0xA5, 7, 0xA5], 1, 0xA5, |e| seen.push(e));
        assert_eq!(seen, [1]);
    }

    #[test]
    fn findings_show_the_first_ranges_then_count() {
        let mut r = Ranges::default();
        for e in [1, 2, 3, 7, 9, 10, 12, 20, 21] {
            r.push(e);
        }
        let f = r
            .finding(Check::Init, "k", vec![], "never written".into())
            .unwrap();
        assert_eq!((f.range_count, f.elements), (5, 9));
        assert_eq!(
            f.to_string(),
            "check init: kernel 'k', the output: never written: elements [1, 4) [7] [9, 11) [12] \
             and 1 more range(s) (9 elements)"
        );
        let writers = [0b1, 0b11, 0b11, 0b110, 0];
        let found = races("k", &writers);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].cores, [0, 1]);
        assert_eq!(found[0].ranges, [(1, 3)]);
        assert_eq!(found[1].cores, [1, 2]);
        assert!(Ranges::default()
            .finding(Check::Race, "k", vec![], String::new())
            .is_none());
    }
}
