//! The race check's reads (D101): where the backend sees every load and store
//! (Xtensa cores under QEMU), the launch runs once more with each core recording the bytes
//! it reads and writes; a byte of a tensor one core reads and another writes in the same
//! launch is a race, whose order the device does not fix. Host cores run native code and
//! see no access one by one: the race check there finds what two cores both write, and
//! says that reads are not seen.

use super::list::Check;
use super::report::{ElementRanges, Finding, SourceLine};
use super::POISON;
use crate::accesses::{self, CoreAccesses, WatchedTensor};
use crate::backend::Team;
use crate::launch::Launch;
use crate::marshal::Fill;
use crate::values::DeviceTensor;
use crate::PoolEngine;

/// The launch run once more with every access recorded (its output in `into`, or placed
/// with it).
pub(super) struct ReadRaces<'l, 'a> {
    pub launch: &'l Launch<'a>,
    pub into: Option<&'l DeviceTensor>,
}

impl ReadRaces<'_, '_> {
    /// The launch's read-write races.
    pub(super) fn findings(self, e: &mut PoolEngine) -> Vec<Finding> {
        let p = self.launch;
        let kernel = &p.target.kernel;
        let team = (Team::all(p.cores), self.into, Fill::poison(POISON));
        match p.traced(e, team) {
            Ok((seen, tensors)) => findings(kernel, &tensors, &seen),
            Err(err) => vec![Finding::about(
                Check::Race,
                kernel,
                Vec::new(),
                "the launch",
                format!("run again with its reads and writes recorded, it failed: {err}"),
            )],
        }
    }
}

/// The race check's findings from the cores' records of a traced launch (D101): one per
/// tensor and pair of cores where one read bytes the other wrote.
fn findings(
    kernel: &str,
    tensors: &[WatchedTensor],
    seen: &[Option<CoreAccesses>],
) -> Vec<Finding> {
    accesses::read_write_races(tensors, seen)
        .into_iter()
        .filter_map(|r| {
            let mut ranges = ElementRanges::default();
            for &e in &r.elements {
                ranges.push(e);
            }
            let at = |side: &str, core: usize, line: &Option<String>| match line {
                Some(l) => format!("{side} by core {core} at {l}"),
                None => format!("{side} by core {core}"),
            };
            let what = format!(
                "{} and {} in the same launch (the device fixes no order between them)",
                at("read", r.reader, &r.read_at),
                at("written", r.writer, &r.write_at)
            );
            let mut f = ranges.finding(Check::Race, kernel, vec![r.reader, r.writer], what)?;
            f.tensor = r.tensor;
            f.source = r.read_at.as_deref().and_then(SourceLine::parse_place);
            Some(f)
        })
        .collect()
}
