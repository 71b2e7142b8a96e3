//! A profiled launch's counts on one core, as its profile plugin writes them
//! (`machine/profile-plugin.c`), in hex: "s N", the kernel's accesses to an HBM stack
//! (D121), where the plugin counts them; "PC INSNS EXECUTIONS" lines for the whole kernel;
//! then, for each logged copy, "@ INSNS STACK" and the lines of the blocks that ran since
//! the previous copy (D120). With the runtime's copy log they give the core's
//! [`CopyTimeline`].

use std::collections::HashMap;

use customop_abi::access::{CopyLog, COPY_OUT};
use nrt_pool_engine::profile::{CopyStep, CopyTimeline, CoreProfile};
use nrt_pool_engine::symbolize::{ImageSet, StackAddr};

/// One block's line: its start, its instructions, how often it ran.
type BlockLine = (u64, u64, u64);

/// The plugin's file, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PluginCounts {
    whole: Vec<BlockLine>,
    /// Accesses to the kernel's HBM stack, where counted.
    stack: Option<u64>,
    /// One per copy the plugin stamped: the blocks that ran before it since the previous,
    /// and the HBM stack accesses among them.
    segments: Vec<(Vec<BlockLine>, u64)>,
}

impl PluginCounts {
    /// Reads the file's text; lines that are not the plugin's are skipped.
    pub fn parse(text: &str) -> PluginCounts {
        let mut counts = PluginCounts::default();
        let hex = |v: Option<&str>| v.and_then(|v| u64::from_str_radix(v, 16).ok());
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("@ ") {
                let stack = hex(rest.split(' ').nth(1)).unwrap_or(0);
                counts.segments.push((Vec::new(), stack));
                continue;
            }
            if let Some(n) = line.strip_prefix("s ") {
                counts.stack = hex(Some(n));
                continue;
            }
            let f: Vec<u64> = line
                .split(' ')
                .filter_map(|v| u64::from_str_radix(v, 16).ok())
                .collect();
            let [pc, insns, runs] = f[..] else { continue };
            match counts.segments.last_mut() {
                Some(s) => s.0.push((pc, insns, runs)),
                None => counts.whole.push((pc, insns, runs)),
            }
        }
        counts
    }

    /// Core `c`'s profile, its functions named from `images` (the core's image, the
    /// board), with its copy timeline where `log` matches the copies the plugin stamped.
    pub fn profile(&self, c: usize, images: &[&[u8]], log: Option<&CopyLog>) -> CoreProfile {
        let mut names = Namer::new(images);
        let functions = names.by_function(&self.whole);
        let total = functions
            .iter()
            .fold(0u64, |t, (_, n)| t.saturating_add(*n));
        let copies = log.and_then(|log| self.timeline(&mut names, &functions, log));
        CoreProfile {
            core: c,
            instructions: Some(total),
            functions,
            copies,
            hbm_stack_accesses: self.stack,
            ..CoreProfile::default()
        }
    }

    /// The copies with what ran between them; None when the plugin stamped another number
    /// of copies than the runtime logged (a plugin or runtime without the log).
    fn timeline(
        &self,
        names: &mut Namer,
        whole: &[(String, u64)],
        log: &CopyLog,
    ) -> Option<CopyTimeline> {
        let logged = log.logged();
        if logged.len() != self.segments.len() {
            return None;
        }
        let mut after: Vec<(String, u64)> = whole.to_vec();
        let mut after_stack = self.stack.unwrap_or(0);
        let mut steps = Vec::with_capacity(logged.len());
        for ((segment, stack), entry) in self.segments.iter().zip(logged) {
            after_stack = after_stack.saturating_sub(*stack);
            let before = names.by_function(segment);
            for (f, n) in &before {
                if let Some(e) = after.iter_mut().find(|(g, _)| g == f) {
                    e.1 = e.1.saturating_sub(*n);
                }
            }
            steps.push(CopyStep {
                before,
                out: entry.flags & COPY_OUT != 0,
                bytes: entry.bytes,
                copies: entry.copies,
                elements_before: entry.elements_before,
                stack_accesses: *stack,
            });
        }
        after.retain(|(_, n)| *n > 0);
        Some(CopyTimeline {
            steps,
            after,
            unlogged: log.unlogged(),
            after_stack_accesses: after_stack,
        })
    }
}

/// Names blocks by the function they lie in, each block start looked up once.
struct Namer<'a> {
    images: ImageSet<'a>,
    known: HashMap<u64, String>,
}

impl<'a> Namer<'a> {
    fn new(images: &[&'a [u8]]) -> Namer<'a> {
        Namer {
            images: ImageSet::new(images),
            known: HashMap::new(),
        }
    }

    fn name(&mut self, pc: u64) -> String {
        let images = &self.images;
        self.known
            .entry(pc)
            .or_insert_with(|| {
                let at = StackAddr {
                    addr: pc,
                    exact: true,
                };
                images
                    .frames(at)
                    .pop()
                    .and_then(|f| f.function)
                    .unwrap_or_else(|| format!("{pc:#010x}"))
            })
            .clone()
    }

    /// Instructions by function, most first.
    fn by_function(&mut self, blocks: &[BlockLine]) -> Vec<(String, u64)> {
        let mut by_function: Vec<(String, u64)> = Vec::new();
        for &(pc, insns, runs) in blocks {
            let n = insns.saturating_mul(runs);
            let name = self.name(pc);
            match by_function.iter_mut().find(|(g, _)| *g == name) {
                Some(e) => e.1 = e.1.saturating_add(n),
                None => by_function.push((name, n)),
            }
        }
        by_function.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        by_function
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "s 9\n100 4 3\n200 2 5\n@ c 2\n100 4 1\n@ 20 3\n200 2 5\n100 4 1\n";

    #[test]
    fn the_file_splits_into_the_whole_and_a_segment_per_copy() {
        let c = PluginCounts::parse(FILE);
        assert_eq!(c.whole, vec![(0x100, 4, 3), (0x200, 2, 5)]);
        assert_eq!(c.stack, Some(9));
        assert_eq!(
            c.segments,
            vec![
                (vec![(0x100, 4, 1)], 2),
                (vec![(0x200, 2, 5), (0x100, 4, 1)], 3)
            ]
        );
    }

    #[test]
    fn a_timeline_needs_as_many_logged_copies_as_stamps() {
        let c = PluginCounts::parse(FILE);
        let mut log = CopyLog::EMPTY;
        log.start(64, 0, 0);
        // One logged copy against two stamps: no timeline, the profile still counts.
        let p = c.profile(0, &[], Some(&log));
        assert_eq!((p.instructions, p.copies.is_none()), (Some(22), true));
        log.start(32, COPY_OUT, 0);
        log.copies = 2;
        let t = c.profile(0, &[], Some(&log)).copies.expect("a timeline");
        assert_eq!(t.steps.len(), 2);
        assert_eq!((t.steps[0].out, t.steps[0].bytes), (false, 64));
        assert_eq!(t.steps[0].before, vec![("0x00000100".to_string(), 4)]);
        assert_eq!((t.steps[1].out, t.steps[1].bytes), (true, 32));
        // What ran after the last copy: the whole less the segments.
        assert_eq!(t.after, vec![("0x00000100".to_string(), 4)]);
        assert_eq!(t.unlogged, 0);
        // The HBM stack's accesses: 2 and 3 before the copies, the rest after.
        assert_eq!(t.steps[1].stack_accesses, 3);
        assert_eq!(t.after_stack_accesses, 4);
    }

    #[test]
    fn copies_after_the_log_filled_are_counted_not_stamped() {
        // 2000 executions of the block; one in each of the log's segments.
        use customop_abi::access::COPY_LOG_ENTRIES;
        let mut file = format!("100 4 {:x}\n", 2000); // hex, as the plugin writes
        let mut log = CopyLog::EMPTY;
        for i in 0..COPY_LOG_ENTRIES as u32 {
            file.push_str(&format!("@ {:x}\n100 4 1\n", 4 * (i + 1)));
            log.start(i, 0, 0);
        }
        log.copies = COPY_LOG_ENTRIES as u32 + 3;
        let c = PluginCounts::parse(&file);
        let t = c.profile(0, &[], Some(&log)).copies.expect("a timeline");
        assert_eq!((t.steps.len(), t.unlogged), (COPY_LOG_ENTRIES, 3));
        let after = 4 * (2000 - COPY_LOG_ENTRIES as u64);
        assert_eq!(t.after, vec![("0x00000100".to_string(), after)]);
    }
}
