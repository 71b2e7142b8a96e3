//! Checking mode (D82): a launch run again under other conditions, to find what the
//! device would hide. (The parity check, which runs it on the other backend, is made
//! above the engine, by `nrt-pool-open`'s `Pool`, which holds both.)
//!
//! The launch itself runs first, its output filled with [`POISON`] (the bytes a user sees
//! where no core wrote). Then each core runs alone, as core `c` of the same count, over an
//! output filled with [`POISON_ALONE`]: the elements it changed are the ones it writes
//! (compared only where the core touched the output, when its backend says: D89).
//! From those runs:
//! - init: output elements no core writes; elements whose value differs between the launch
//!   and their core run alone (they depend on memory the kernel never wrote, which the two
//!   runs poison differently, or on what another core writes);
//! - race: output elements more than one core writes;
//! - cores: the launch again on another core count, compared element by element.
//!
//! Every run starts from the same inputs (device tensors given as arguments are restored),
//! and the caller receives the first run's output.

use super::backend::Team;
use super::call::Destination;
use super::copy::{copy_parallel, fill_parallel};
use super::error::EmuError;
use super::launch::{Launch, Touched};
use super::marshal::Fill;
use super::tensor::{HostTensor, Location};
use super::values::{DeviceTensor, LaunchArg, LaunchPhases, Run};
use super::PoolEngine;

pub(crate) mod list;
mod notes;
mod reads;
pub mod report;
mod scan;
pub mod suppress;

pub use list::{Check, Checks};
pub use report::{
    CheckNote, CheckReport, ElementRanges, Finding, NoteKind, SourceLine, SHOWN_RANGES,
};
pub use scan::each_differing;
pub use suppress::{SuppressionError, Suppressions};

use notes::CheckLogs;
use reads::ReadRaces;
use scan::{differing_blocks, marked_blocks, races, Element, Written, BLOCK};

/// The byte every output starts as in a checked launch: NaN in each float type, -1 in each
/// signed integer type, the largest value of each unsigned one.
pub const POISON: u8 = 0xFF;
/// What the leftovers check's second run fills new heap blocks with (another pattern than
/// the launch's, so a read of bytes nobody wrote this launch shows).
pub const LEFTOVER_FILL: u8 = 0x5A;
/// The byte the output starts as when a core runs alone (any byte but [`POISON`]).
pub const POISON_ALONE: u8 = 0xA5;
/// A launch in checking mode (see the module).
pub(crate) struct Checking<'l, 'a> {
    pub launch: &'l Launch<'a>,
}

/// What a launch in checking mode gives: its output (for [`Destination::Host`]), its run
/// and phases, and the report.
pub(crate) type Checked = (Option<HostTensor>, Run, LaunchPhases, CheckReport);

impl Checking<'_, '_> {
    /// The launch's own run delivers the output to `to`; the runs after it only find
    /// things.
    pub(crate) fn run(self, e: &mut PoolEngine, to: Destination<'_>) -> Result<Checked, EmuError> {
        let p = self.launch;
        let (kernel, spec, cores, s) = (p.target.kernel.as_str(), &p.spec, p.cores, p.settings);
        let checks = s.checks;
        let mut report = CheckReport {
            checks,
            ..CheckReport::default()
        };
        let sees_reads = e.backend.traces_accesses();
        report.notes.extend(
            checks
                .limits(sees_reads)
                .into_iter()
                .map(|(check, unseen, text)| {
                    let kind = if unseen {
                        NoteKind::Unseen
                    } else {
                        NoteKind::Limit
                    };
                    CheckNote::new(Some(check), kind, text)
                }),
        );
        // An output that is also an input cannot start poisoned: run once, unchecked.
        if self.output_is_input(e, &to) {
            report.notes.push(CheckNote::new(
                None,
                NoteKind::NotChecked,
                "checks skipped: the output is also an input, so it cannot start poisoned",
            ));
            let team = Team::all(cores).with_all_stdio(s.all_cores_stdio);
            let (out, run, phases) = p.run(e, team, to, Fill::default())?;
            return Ok((out, run, phases, report));
        }
        let mut inputs = SavedInputs::save(e, &p.args, &p.sources);
        // 1. The launch, its output and new heap blocks poisoned.
        CheckLogs::clear(&mut e.tensors, cores);
        let device_out = match &to {
            Destination::Device(d) => Some(d.clone()),
            _ => None,
        };
        let mut to = to;
        let team = Team::all(cores).with_all_stdio(s.all_cores_stdio);
        let first = p.run(e, team, to.reborrow(), Fill::poison(POISON));
        let (output, run, phases) = first?;
        // What the cores' runtimes noted (memory and rules), from the launch only.
        let logs = CheckLogs::new(&e.tensors, e.loaded.library().map(|l| l.file()));
        report.findings.extend(logs.findings(kernel, cores, checks));
        // What the launch wrote into its inputs: the caller gets it back at the end (a
        // device tensor; an array the call copied in stays as the caller had it), and
        // checked for memory it is a finding: on the device the caller's tensor changes.
        let launch_inputs = inputs.restore(e, true);
        if checks.has(Check::Memory) {
            report
                .findings
                .extend(inputs.written(kernel, &launch_inputs));
        }
        // A kernel that does not write its inputs in the launch does not alone either: the
        // runs after it compare and restore them only if it does (the end compares again).
        inputs.written_by_launch = !launch_inputs.is_empty();
        // The launch's output, read where it is (a device destination is copied: the runs
        // after this one need the engine).
        let mut copied = e.check_buffers.take();
        if let (None, Some(d)) = (&output, &device_out) {
            copied.extend_from_slice(e.tensors.device_bytes(d).unwrap_or_default());
        }
        let launch_bytes: &[u8] = match (&output, &to) {
            (Some(t), _) => &t.data,
            (None, Destination::Buffer(b)) => b,
            _ => &copied,
        };
        // The later runs' output: an HBM output is one device tensor for all of them (its
        // pages faulted in once), poisoned for each as it needs; an SBUF one is placed with
        // each run.
        let alone_out = match spec.location {
            Location::Hbm if checks.has(Check::Init) || checks.has(Check::Race) || cores > 1 => {
                Some(
                    e.tensors
                        .alloc_device_for_overwrite(spec.dtype, spec.shape.clone())?,
                )
            }
            _ => None,
        };
        let again = Relaunch {
            p,
            into: alone_out.as_ref(),
            launch_bytes,
        };
        again.later_runs(e, &inputs, &mut report);
        if let Some(d) = &alone_out {
            e.tensors.free_device(d);
        }
        // The caller's inputs and output as the launch left them.
        inputs.restore(e, false);
        SavedInputs::put_back(e, &launch_inputs);
        if let Some(d) = &device_out {
            if let Some(dst) = e.tensors.device_bytes_mut(d) {
                copy_parallel(dst, launch_bytes);
            }
        }
        e.check_buffers.give_back(copied);
        for (_, b) in inputs.saved {
            if let Saved::Copy(b) = b {
                e.check_buffers.give_back(b);
            }
        }
        Ok((output, run, phases, report))
    }

    /// Whether the launch's output is also one of its inputs (then it cannot start
    /// poisoned).
    fn output_is_input(&self, e: &PoolEngine, to: &Destination<'_>) -> bool {
        let Destination::Device(d) = to else {
            return false;
        };
        self.launch
            .args
            .iter()
            .any(|a| matches!(a, LaunchArg::Device(i) if e.tensors.overlap(i, d)))
    }
}

impl<'s> SavedInputs<'s> {
    /// Device tensors given as arguments, as the launch finds them: every run starts from
    /// them (written back only where a run changed them). A device tensor this call copied
    /// from the caller's bytes is restored from those.
    fn save(
        e: &mut PoolEngine,
        args: &[LaunchArg],
        sources: &[Option<&'s [u8]>],
    ) -> SavedInputs<'s> {
        let mut inputs = SavedInputs::default();
        for (i, a) in args.iter().enumerate() {
            if let LaunchArg::Device(d) = a {
                inputs.args.push(i);
                let keep = match sources.get(i).copied().flatten() {
                    Some(b) => Saved::Caller(b),
                    None => {
                        let mut keep = e.check_buffers.take();
                        keep.extend_from_slice(e.tensors.device_bytes(d).unwrap_or_default());
                        Saved::Copy(keep)
                    }
                };
                inputs.saved.push((d.clone(), keep));
            }
        }
        inputs
    }

    /// Writes back the saved device tensors a run changed (compared first: most kernels
    /// never write their inputs), passing over the call's own copies of the caller's
    /// tensors when not `with_caller` (freed as the call ends, nobody sees them after); what
    /// the changed ones held.
    fn restore(&self, e: &mut PoolEngine, with_caller: bool) -> Vec<(DeviceTensor, Vec<u8>)> {
        let mut changed = Vec::new();
        for (d, bytes) in &self.saved {
            if !with_caller && matches!(bytes, Saved::Caller(_)) {
                continue;
            }
            let bytes = bytes.bytes();
            if let Some(dst) = e.tensors.device_bytes_mut(d) {
                if dst.len() != bytes.len() || !differing_blocks(dst, bytes).is_empty() {
                    changed.push((d.clone(), dst.to_vec()));
                    copy_parallel(dst, bytes);
                }
            }
        }
        changed
    }

    /// Writes `tensors` (device tensors and their bytes) into device memory.
    fn put_back(e: &mut PoolEngine, tensors: &[(DeviceTensor, Vec<u8>)]) {
        for (d, bytes) in tensors {
            if let Some(dst) = e.tensors.device_bytes_mut(d) {
                copy_parallel(dst, bytes);
            }
        }
    }

    /// Before a later run: the inputs as the launch found them, if the launch wrote them
    /// (a kernel that did not write them in the launch does not alone either).
    fn restore_for_next(&self, e: &mut PoolEngine) {
        if self.written_by_launch {
            self.restore(e, true);
        }
    }

    /// A `memory` finding per input tensor the launch changed: the argument, the elements
    /// whose bytes differ from before the launch.
    fn written(&self, kernel: &str, changed: &[(DeviceTensor, Vec<u8>)]) -> Vec<Finding> {
        changed
            .iter()
            .filter_map(|(d, after)| {
                let at = self.saved.iter().position(|(s, _)| s.soc == d.soc)?;
                let before = self.saved[at].1.bytes();
                let size = d.dtype.size().max(1);
                let mut ranges = ElementRanges::default();
                if before.len() == after.len() {
                    each_differing(before, after, size, |e| ranges.push(e as u64));
                }
                let mut f = ranges.finding(
                    Check::Memory,
                    kernel,
                    Vec::new(),
                    "written by the kernel: on the device the caller's tensor changes with it \
                 (stage data in the output or a tcm_malloc buffer)"
                        .into(),
                )?;
                f.tensor = format!("argument {}", self.args.get(at).copied().unwrap_or(at));
                Some(f)
            })
            .collect()
    }
}

impl Relaunch<'_> {
    /// Steps 2 to 4: the runs after the launch, each starting from the launch's inputs.
    fn later_runs(&self, e: &mut PoolEngine, inputs: &SavedInputs<'_>, report: &mut CheckReport) {
        let again = self;
        let (checks, cores) = (again.p.settings.checks, again.p.cores);
        // 2. Each core alone: what it writes, and whether it writes what it wrote in the
        // launch.
        if checks.has(Check::Init) || checks.has(Check::Race) {
            report.findings.extend(again.alone_runs(e, inputs));
        }
        // 2b. Reads, where the backend sees every access (D101).
        if checks.has(Check::Race) && cores > 1 && e.backend.traces_accesses() {
            inputs.restore_for_next(e);
            let races = ReadRaces {
                launch: again.p,
                into: again.into,
            };
            report.findings.extend(races.findings(e));
        }
        // 3. The launch on another core count (one fewer: a partition that only works for
        // one count shows; a one-core launch is not split, so there is nothing to compare).
        if checks.has(Check::Cores) && cores == 1 {
            report.notes.push(CheckNote::not_checked(
                Check::Cores,
                "a launch on one core is not split between cores; nothing to compare",
            ));
        }
        if checks.has(Check::Cores) && cores > 1 {
            let other = cores - 1;
            inputs.restore_for_next(e);
            report.findings.extend(again.rerun_compared(
                e,
                Rerun {
                    check: Check::Cores,
                    team: Team::all(other),
                    fill: Fill::poison(POISON),
                    differ: format!("differ between {cores} core(s) and {other}"),
                    failed: format!("on {other} core(s) instead of {cores}, it failed"),
                },
            ));
        }
        // 4. The launch again right after itself (its cores' statics as the launch left
        // them, new heap blocks filled with another pattern): output that changes was read
        // from what an earlier launch left (D98).
        if checks.has(Check::Leftovers) {
            inputs.restore_for_next(e);
            report.findings.extend(
                again.rerun_compared(
                    e,
                    Rerun {
                        check: Check::Leftovers,
                        team: Team::all(cores),
                        fill: Fill {
                            output: Some(POISON),
                            heaps: LEFTOVER_FILL,
                        },
                        differ: "change when the launch runs again right after itself: the kernel \
                         reads what an earlier launch left (statics or .bss it keeps, or \
                         heap or TCM bytes it did not write this launch); on the device a \
                         launch after another op starts from what that one left"
                            .into(),
                        failed: "run again right after itself, it failed".into(),
                    },
                ),
            );
        }
    }

    /// Step 2: each core alone (or in groups that cannot meet, D90), over an output poisoned
    /// with [`POISON_ALONE`]; the init and race findings from what each wrote.
    fn alone_runs(&self, e: &mut PoolEngine, inputs: &SavedInputs<'_>) -> Vec<Finding> {
        let again = self;
        let (kernel, cores, launch_bytes) =
            (&again.p.target.kernel, again.p.cores, again.launch_bytes);
        let size = again.p.spec.dtype.size();
        let mut writers = e.check_buffers.take();
        writers.resize(launch_bytes.len() / size.max(1), 0);
        let mut differ: Vec<ElementRanges> = (0..cores).map(|_| ElementRanges::default()).collect();
        let mut findings = Vec::new();
        // An HBM output is one device tensor for all of them, poisoned once; only the
        // blocks a core changed are poisoned again after it. An SBUF output is placed,
        // poisoned, with each run.
        if let Some(dst) = again.into.and_then(|d| e.tensors.device_bytes_mut(d)) {
            fill_parallel(dst, POISON_ALONE);
        }
        let fill = Fill {
            output: again.into.is_none().then_some(POISON_ALONE),
            heaps: POISON_ALONE,
        };
        // Where the backend reports what each core touches, cores run in groups whose
        // parts of the output cannot meet; a group whose cores did meet, or one that
        // failed, runs again core by core.
        let groupable =
            e.backend.reports_touches() && !inputs.written_by_launch && again.into.is_some();
        let mut runs: std::collections::VecDeque<u8> =
            groups(cores, launch_bytes.len(), groupable).into();
        while let Some(mask) = runs.pop_front() {
            let members: Vec<usize> = (0..cores).filter(|c| mask & (1 << c) != 0).collect();
            inputs.restore_for_next(e);
            let mut dirty = Vec::new();
            let mut met = false;
            let team = Team::group(mask, cores);
            let ran = again
                .p
                .inspect(e, (team, again.into, fill), |bytes, touched| {
                    if members.len() > 1 && !apart(touched, members.len()) {
                        met = true;
                        return;
                    }
                    for (i, &c) in members.iter().enumerate() {
                        let written = Written {
                            bytes,
                            launch: launch_bytes,
                            size,
                            fill: POISON_ALONE,
                            touched: touched.get(i).and_then(|t| t.as_deref()),
                        };
                        dirty.extend(written.scan(&mut writers, 1 << c, &mut differ[c]));
                    }
                });
            let group_again = members.len() > 1 && (met || ran.is_err());
            if let Some(dst) = again.into.and_then(|d| e.tensors.device_bytes_mut(d)) {
                if group_again {
                    // What the group wrote is not known: all of it is poisoned again.
                    fill_parallel(dst, POISON_ALONE);
                }
                for b in dirty {
                    let end = ((b + 1) * BLOCK).min(dst.len());
                    dst[b * BLOCK..end].fill(POISON_ALONE);
                }
            }
            match ran {
                _ if group_again => runs.extend(members.iter().map(|c| 1u8 << c)),
                Err(e) => {
                    let c = members.first().copied().unwrap_or_default();
                    findings.push(Finding::about(
                        Check::Init,
                        kernel,
                        vec![c],
                        "the output",
                        format!("run alone (as core {c} of {cores}), it failed: {e}"),
                    ))
                }
                Ok(_) => {}
            }
        }
        if again.p.settings.checks.has(Check::Init) {
            findings.extend(again.init_findings(&writers, differ));
        }
        if again.p.settings.checks.has(Check::Race) {
            findings.extend(races(kernel, &writers));
        }
        e.check_buffers.give_back(writers);
        findings
    }

    /// The launch run again as `r` says, its output compared with the launch's element by
    /// element: a finding for the elements that differ, or for the run that failed.
    fn rerun_compared(&self, e: &mut PoolEngine, r: Rerun) -> Option<Finding> {
        let again = self;
        let size = again.p.spec.dtype.size();
        let mut differ = ElementRanges::default();
        let rerun = again
            .p
            .inspect(e, (r.team, again.into, r.fill), |bytes, _| {
                each_differing(bytes, again.launch_bytes, size, |e| differ.push(e as u64))
            });
        match rerun {
            Ok(_) => differ.finding(r.check, &again.p.target.kernel, Vec::new(), r.differ),
            Err(e) => Some(Finding::about(
                r.check,
                &again.p.target.kernel,
                Vec::new(),
                "the output",
                format!("{}: {e}", r.failed),
            )),
        }
    }

    /// The init findings of step 2: elements no core wrote (and the launch left poisoned), and
    /// per core the elements it wrote differently alone.
    fn init_findings(&self, writers: &[u8], differ: Vec<ElementRanges>) -> Vec<Finding> {
        let again = self;
        let kernel = &again.p.target.kernel;
        let element = Element::new(again.p.spec.dtype.size(), POISON);
        let mut never = ElementRanges::default();
        for k in marked_blocks(writers, |w| w == 0) {
            for (i, &w) in writers[k * BLOCK..].iter().take(BLOCK).enumerate() {
                let e = k * BLOCK + i;
                if w == 0 && !element.changed(again.launch_bytes, e) {
                    never.push(e as u64);
                }
            }
        }
        let mut findings: Vec<Finding> = never
            .finding(
                Check::Init,
                kernel,
                Vec::new(),
                "never written by any core".into(),
            )
            .into_iter()
            .collect();
        for (c, r) in differ.into_iter().enumerate() {
            findings.extend(
            r.finding(
                Check::Init,
                kernel,
                vec![c],
                "differ when the core runs alone: they depend on memory the kernel never wrote, \
             or on what another core writes, or on what its earlier run left \
             (--check=leftovers tells)"
                    .into(),
            ),
        );
        }
        findings
    }
}

/// Host buffers checked launches reuse for their copies (a part of [`PoolEngine`]): large
/// copies into fresh memory cost a page fault per page, these are faulted in already.
#[derive(Default)]
pub(crate) struct Buffers(Vec<Vec<u8>>);

impl Buffers {
    /// An empty buffer, from those earlier launches gave back.
    fn take(&mut self) -> Vec<u8> {
        let mut b = self.0.pop().unwrap_or_default();
        b.clear();
        b
    }

    /// Keeps `b` for the next checked launch (a few at most).
    fn give_back(&mut self, b: Vec<u8>) {
        if self.0.len() < 4 {
            self.0.push(b);
        }
    }
}

/// What a checked launch's later runs repeat: the launch, where its output goes, and the
/// launch's own output bytes they are compared with.
struct Relaunch<'a> {
    /// The launch.
    p: &'a Launch<'a>,
    /// The later runs' shared HBM output (`None`: an SBUF output, placed with each run).
    into: Option<&'a DeviceTensor>,
    launch_bytes: &'a [u8],
}

/// One later run: its check, cores and fills, and what its finding says.
struct Rerun {
    check: Check,
    team: Team,
    fill: Fill,
    /// Said of the elements that differ.
    differ: String,
    /// Said before the error when the run fails.
    failed: String,
}

/// The device tensors given as arguments, as the launch found them.
#[derive(Default)]
struct SavedInputs<'a> {
    saved: Vec<(DeviceTensor, Saved<'a>)>,
    /// Which argument each saved tensor is, for findings.
    args: Vec<usize>,
    /// The launch wrote some of them: each later run starts from them again.
    written_by_launch: bool,
}

/// A device tensor's bytes as a checked launch found them: copied, or the caller's bytes
/// the call copied it from.
enum Saved<'a> {
    Copy(Vec<u8>),
    Caller(&'a [u8]),
}

impl Saved<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Saved::Copy(b) => b,
            Saved::Caller(b) => b,
        }
    }
}

/// Output bytes each core's share must reach before cores run in groups: two 2 MiB pages,
/// so cores two apart never share a page (a page is the least a core reports touching).
const GROUP_SHARE: usize = 4 << 20;

/// The runs of step 2, as masks of cores: where cores can run in groups (`groupable`: the
/// backend reports touches, the launch wrote no input, one output for all runs) and each
/// core's share of an output of `bytes` is large, the even cores, then the odd ones (a
/// kernel partitioning its output in order gives neighbours adjacent parts); else each
/// core alone.
fn groups(cores: usize, bytes: usize, groupable: bool) -> Vec<u8> {
    let cores = cores.min(8);
    if groupable && cores > 2 && bytes / cores >= GROUP_SHARE {
        let even = (0..cores).step_by(2).fold(0u8, |m, c| m | 1 << c);
        let odd = (1..cores).step_by(2).fold(0u8, |m, c| m | 1 << c);
        return vec![even, odd];
    }
    (0..cores).map(|c| 1u8 << c).collect()
}

/// Whether `members` cores each reported what they touched, and no two touched a common
/// byte: each one's run is then its run alone (it saw none of the others' writes).
fn apart(touched: &[Option<Touched>], members: usize) -> bool {
    if touched.len() != members || touched.iter().any(Option::is_none) {
        return false;
    }
    let mut all: Vec<&std::ops::Range<u64>> = touched.iter().flatten().flatten().collect();
    all.sort_by_key(|r| r.start);
    all.windows(2).all(|w| w[0].end <= w[1].start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_run_in_two_groups_only_where_their_shares_are_large() {
        let big = 8 * GROUP_SHARE;
        assert_eq!(groups(8, big, true), [0b0101_0101, 0b1010_1010]);
        assert_eq!(groups(3, 3 * GROUP_SHARE, true), [0b101, 0b010]);
        // Small shares, a backend that cannot tell, two cores or one: alone.
        assert_eq!(
            groups(8, big - 1, true),
            (0..8).map(|c| 1 << c).collect::<Vec<u8>>()
        );
        assert_eq!(groups(8, big, false).len(), 8);
        assert_eq!(groups(2, big, true), [0b01, 0b10]);
        assert_eq!(groups(1, big, true), [0b1]);
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of byte ranges, one range long
    fn a_group_is_apart_when_every_core_reported_and_none_met() {
        let t = |r: &[std::ops::Range<u64>]| Some(r.to_vec());
        assert!(apart(&[t(&[0..10, 30..40]), t(&[10..30]), t(&[])], 3));
        assert!(
            !apart(&[t(&[0..10, 30..40]), t(&[39..50])], 2),
            "a shared byte"
        );
        assert!(
            !apart(&[t(&[0..10]), None], 2),
            "a core that could not tell"
        );
        assert!(!apart(&[t(&[0..10])], 2), "a core missing");
    }
}
