//! The race check's reads (issue #42, D101): where the backend sees every load and store
//! (Xtensa cores under QEMU), the launch runs once more with each core recording the bytes
//! it reads and writes; a byte of a tensor one core reads and another writes in the same
//! launch is a race, whose order the device does not fix. Host cores run native code and
//! see no access one by one: the race check there finds what two cores both write, and
//! says that reads are not seen.

use super::*;
use crate::accesses::{self, CoreAccesses, WatchedTensor};
use crate::call::Prepared;

/// The launch on its cores with every access recorded (its output in `into`, or placed
/// with it): its read-write races.
pub(super) fn read_write_races(
    e: &mut PoolEngine,
    p: &Prepared<'_>,
    into: Option<&DeviceTensor>,
) -> Vec<Finding> {
    let team = (Team::all(p.cores), into, Fill::poison(POISON));
    match run::run_traced(e, p, team) {
        Ok((seen, tensors)) => findings(&p.kernel, &tensors, &seen),
        Err(err) => vec![Finding::about(
            Check::Race,
            &p.kernel,
            Vec::new(),
            "the launch",
            format!("run again with its reads and writes recorded, it failed: {err}"),
        )],
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
            let mut ranges = Ranges::default();
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
            Some(f)
        })
        .collect()
}
